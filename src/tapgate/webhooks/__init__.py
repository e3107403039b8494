"""webhooks layer (filled by later issues)."""

__all__: list[str] = []
