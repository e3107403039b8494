"""The real tapgate server for the adapter tests: the client tests' ``served`` fixture, shared.

Its policy (``tests.server.test_api.make_config``): ``read_file`` is read-only
(allowed at once), ``drop_db`` destructive (denied at once), ``deploy`` asks
alice and bob; ``Served.decide`` records an approver's answer through the
gate, as a webhook would.
"""

from __future__ import annotations

from tests.client.test_client import served

__all__ = ["served"]
