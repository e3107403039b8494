"""Who can still be reached: a request whose every message failed for good has nobody to ask.

A permanent delivery failure (a blocked bot, LINE's monthly quota, a Slack
app removed) is final for that message; when it was the last live message of
a request (or of a batch's card, for every call on it), no approver will ever
see the request, and it must not wait for nobody until it expires
(``expiry.give_up`` ends it by its ``on_timeout`` verdict). "Live" is a
row still pending (it will be tried again) or sent (someone can tap it).
"""

from __future__ import annotations

from sqlalchemy import Connection, exists, select

from tapgate.store.schema import outbox, requests

__all__ = ["unreachable_after"]

_LIVE = outbox.c.status.in_(("pending", "sent"))


def unreachable_after(conn: Connection, item_id: int) -> list[str]:
    """The pending requests the failed outbox row ``item_id`` was the last hope of."""
    row = conn.execute(
        select(outbox.c.request_id, outbox.c.batch_id).where(outbox.c.id == item_id)
    ).first()
    if row is None:
        return []
    request_id, batch_id = row
    if batch_id is not None:
        live = exists().where(outbox.c.batch_id == batch_id, _LIVE)
        members = requests.c.batch_id == batch_id
    else:
        live = exists().where(outbox.c.request_id == request_id, _LIVE)
        members = requests.c.id == request_id
    query = select(requests.c.id).where(members, requests.c.status == "pending", ~live)
    return list(conn.execute(query).scalars())
