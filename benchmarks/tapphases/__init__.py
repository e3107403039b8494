"""A directory for PYTHONPATH, not a package to import: see ``sitecustomize.py``.

This file only gives mypy a module name for it apart from ``benchmarks/sqltrace``'s.
"""

__all__: list[str] = []
