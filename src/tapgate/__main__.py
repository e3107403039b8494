"""``python -m tapgate``: the ``tapgate`` command, for when only the interpreter's path is known.

The hook's fast path (:mod:`tapgate.client._fast_hook`) hands what it does not
answer itself to ``python -m tapgate hook claude-code``: the interpreter it
runs under is certain, a ``tapgate`` script on ``PATH`` is not.
"""

from tapgate.cli import main

raise SystemExit(main())
