"""tapgate.cli: the ``tapgate`` command line (the ``tapgate`` console script's ``main``).

- :mod:`~tapgate.cli.entry`: ``main``: parse, run, report errors as one line
- :mod:`~tapgate.cli.parser`: the arguments of the server-side commands
- :mod:`~tapgate.cli.commands`: the typed table from subcommand to callable
- :mod:`~tapgate.cli.config_commands`: ``check-config`` and ``explain`` (config only)
- :mod:`~tapgate.cli.serve`: ``serve`` (binding, start and stop),
  :mod:`~tapgate.cli.banner`: what it says it loaded
- :mod:`~tapgate.cli.ops`: ``db upgrade``, ``pending``, ``resolve``, ``grants``
  (the operator's commands; ``audit`` is :mod:`~tapgate.cli.audit`)
- :mod:`~tapgate.cli.text`: colour on a terminal (``NO_COLOR``), durations, times
- :mod:`~tapgate.cli.database`: opening the operator's database, its failures as one line
- :mod:`~tapgate.cli.agent`: ``hook claude-code`` and ``run`` (the agent's side);
  :mod:`~tapgate.cli.quick_hook`: the hook's fast path, tried before argparse

Importing this package loads only the client and the argument parser: the
server, the store and the config models load when a command that needs them
runs.
"""

from tapgate.cli.entry import main

__all__ = ["main"]
