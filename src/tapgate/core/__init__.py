"""tapgate.core: the domain. No web framework, no chat SDK, no YAML."""

__all__: list[str] = []
