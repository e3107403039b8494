"""tapgate: a self-hosted approval gate for AI-agent tool calls."""

__all__ = ["__version__"]

__version__ = "0.1.0"
