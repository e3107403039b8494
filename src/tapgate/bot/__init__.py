"""tapgate.bot: the deployable app (config, CLI, server)."""

__all__: list[str] = []
