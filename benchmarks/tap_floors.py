"""The one-handler servers ``bench_server.py`` measures tapgate's signed taps against.

Each is a script run as its own process (``python script.py PORT SECRET ...``):

- ``BARE``: verifies the HMAC and answers 200; nothing else.
- ``FLOOR``: what every tap must cost whatever the design, and nothing else:
  verify the HMAC, answer 200, then send the one LINE reply a tap needs. The
  issue's target (19.3) is tapgate's taps >= 0.6 of this.
- ``DURABLE``: the floor plus the least a tap must do to keep tapgate's
  durability (record before acknowledge): one committed INSERT of the event
  before the 200, on the same SQLite pragmas tapgate uses (WAL,
  ``synchronous=NORMAL``). ``sqlalchemy`` writes it through tapgate's own
  store runner (``core.store.engine.connect``: SQLAlchemy Core on one
  database thread, group commit), the way every tap's transaction goes.
  ``sqlite3`` writes it with the standard library's driver straight from the
  event loop, the cheapest durable write there is. Neither decides anything,
  checks an approver, writes an audit row or wakes a waiter, so tapgate can
  only cost more than either.

- ``CORE``: the floor plus tapgate's own core for a tap, with none of its
  webhook layer: the event is recorded in tapgate's inbox
  (``core.inbox.Inbox.record``) before the 200, and after it
  ``core.taps.tap`` decides a pending request as tapgate's LINE webhook
  does (the approver check in the compare-and-set, the quorum, the audit
  line, the event id remembered and the inbox row settled in the decision's
  transaction), then the reply is sent. It creates its pending requests
  before it listens. What it leaves out is what the LINE webhook adds
  around that: its event reader, the reply's wording and client, the tap log,
  metrics, the app's middlewares.

Why they exist: they say how much of the gap between tapgate and the floor
the durable write alone takes, on this stack and at all.
"""

from __future__ import annotations

import textwrap

__all__ = ["BARE", "CORE", "DURABLE", "FLOOR"]

BARE = textwrap.dedent("""
    import base64, hashlib, hmac, sys
    from aiohttp import web
    SECRET = sys.argv[2].encode()

    async def handle(request):
        body = await request.read()
        sig = base64.b64encode(hmac.new(SECRET, body, hashlib.sha256).digest()).decode()
        if not hmac.compare_digest(sig, request.headers.get("X-Line-Signature", "")):
            return web.Response(status=401)
        return web.json_response({})

    app = web.Application()
    app.router.add_post("/webhooks/line", handle)
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)
""")

_REPLYING = """
    import asyncio, base64, hashlib, hmac, json, sys
    import aiohttp
    from aiohttp import web
    SECRET = sys.argv[2].encode()
    REPLY_URL = sys.argv[3] + "/v2/bot/message/reply"
    replies = set()

    async def respond(session, token, decide):
        if decide is not None:  # a decision to make first (CORE): the reply tells its outcome
            await decide
        await reply(session, token)

    async def reply(session, token):
        text = "Approved - deploy (request 3fA9xK2b)"
        body = json.dumps({"replyToken": token, "messages": [{"type": "text", "text": text}]})
        async with session.post(REPLY_URL, data=body.encode()) as r:
            await r.read()

    async def handle(request):
        body = await request.read()
        sig = base64.b64encode(hmac.new(SECRET, body, hashlib.sha256).digest()).decode()
        if not hmac.compare_digest(sig, request.headers.get("X-Line-Signature", "")):
            return web.Response(status=401)
        event = json.loads(body)["events"][0]
        decide = await record(event)
        token = event["replyToken"]
        task = asyncio.create_task(respond(request.app["session"], token, decide))
        replies.add(task)
        task.add_done_callback(replies.discard)
        return web.json_response({})

    async def session(app):
        app["session"] = aiohttp.ClientSession(
            headers={"Authorization": "Bearer " + sys.argv[4], "Content-Type": "application/json"},
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        await opened()
        yield
        await asyncio.gather(*replies, return_exceptions=True)  # let the last replies land
        await app["session"].close()

    app = web.Application()
    app.cleanup_ctx.append(session)
    app.router.add_post("/webhooks/line", handle)
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)
"""
"""The floor's handler; ``opened()`` and ``record(event)`` come before it.

``record`` runs before the 200 and may return a coroutine: the decision,
awaited after the 200 and before the reply (tapgate's order).
"""

FLOOR = textwrap.dedent("""
    async def opened():
        pass

    async def record(event):  # the floor records nothing
        pass
""") + textwrap.dedent(_REPLYING)

DURABLE = textwrap.dedent("""
    import asyncio, sqlite3, sys
    KIND, DB = sys.argv[5], sys.argv[6]
    PRAGMAS = ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA busy_timeout=5000")
    CREATE = "CREATE TABLE IF NOT EXISTS taps (event_id TEXT PRIMARY KEY, data TEXT NOT NULL)"
    INSERT = "INSERT INTO taps (event_id, data) VALUES (:event_id, :data)"
    held = {}

    async def opened():
        if KIND == "sqlite3":
            con = sqlite3.connect(DB, isolation_level=None)
            for pragma in PRAGMAS + (CREATE,):
                con.execute(pragma)
            held["con"] = con
            return
        from sqlalchemy import text
        from tapgate.store.engine import connect
        runner = connect("sqlite:///" + DB)  # tapgate's own: one thread, group commit
        await runner.run(lambda conn: conn.execute(text(CREATE)))
        held["runner"], held["insert"] = runner, text(INSERT)

    async def record(event):
        row = {"event_id": event["webhookEventId"], "data": event["postback"]["data"]}
        if KIND == "sqlite3":
            con = held["con"]
            con.execute("BEGIN IMMEDIATE")
            con.execute(INSERT, row)
            con.execute("COMMIT")
            return
        insert = held["insert"]
        await held["runner"].run(lambda conn: conn.execute(insert, row))
""") + textwrap.dedent(_REPLYING)

CORE = textwrap.dedent("""
    import asyncio, os, sys
    from tapgate.gate.directory import Approver, Directory
    from tapgate.gate.gate import Gate
    from tapgate.decisions.webhook_inbox import Inbox
    from tapgate.gate.models import ToolCall
    from tapgate.policy.engine import Policy
    from tapgate.policy.rules import PolicySpec, Rule
    from tapgate.store import Store
    from tapgate.decisions.taps import Tap, tap
    DB, COUNT, APPROVER = sys.argv[5], int(sys.argv[6]), sys.argv[7]
    held = {}

    async def opened():
        store = await Store.open("sqlite:///" + DB)
        rules = (Rule(tool="deploy", action="ask"),)
        policy = Policy(PolicySpec(rules=rules, default_timeout=3600))
        alice = Approver(name="alice", addresses=(("line", APPROVER),))
        gate = Gate(store=store, policy=policy, directory=Directory([alice], ("line",)))
        ids = []
        for number in range(COUNT):
            ticket = await gate.submit(ToolCall(tool="deploy", arguments={"n": number}, agent="b"))
            ids.append(ticket.request_id)
        held["gate"], held["inbox"], held["ids"] = gate, Inbox(gate), ids

    async def record(event):
        # The benchmark's postback names a request this server never made: take the next own one.
        event_id = event["webhookEventId"]
        await held["inbox"].record("line", [(event_id, event["postback"]["data"])])
        user = event["source"]["userId"]
        answer = Tap(channel="line", user_id=user, action="approve", request_id=held["ids"].pop())
        return decided(answer, event_id)  # after the 200, as tapgate does

    async def decided(answer, event_id):
        outcome = await tap(held["gate"], answer, event=event_id)
        if not outcome.applied:  # a refusal costs less: stop rather than measure one
            print(f"CORE: a tap was not applied ({outcome.kind})", file=sys.stderr, flush=True)
            os._exit(3)
""") + textwrap.dedent(_REPLYING)
