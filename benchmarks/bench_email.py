"""Email against LINE in the same run: ask-to-message-accepted, and press-to-resume.

Run: ``python benchmarks/bench_email.py [--quick] [--runs 3] [-n 100]``.

One ``tapgate serve`` process (SQLite) with LINE and email both on: ``lena``
approves ``deploy_line`` on LINE, ``erin`` approves ``deploy_email`` by
email. This process plays the agent, the fake LINE API, the SMTP relay (a
real aiosmtpd server on loopback, ``tests/fakes/smtp.py``) and both
approvers. Requests alternate between the channels, and which one goes first
alternates too, so both see the same server, database and load.

1. **ask-to-message-accepted** (the target): from the agent's ``POST
   /v1/tool-calls`` to the relay accepting the mail (its ``250`` to
   ``DATA``), against LINE's ask-to-first-card-byte (the fake LINE API
   receiving the push). The mail's path mints a review link (a row in the
   store) and opens one SMTP session per message (connect, ``EHLO``,
   ``MAIL``, ``RCPT``, ``DATA``). Target: the median within 1.5x LINE's.
2. **press-to-resume** (reported): the agent long-polls ``GET
   /v1/tool-calls/{id}?wait=30``; the email approver's form is posted (the
   page was opened first, untimed, as a person reads before pressing) or a
   signed LINE postback arrives, and we time until the long poll answers.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the test fakes

import aiohttp
from tests.fakes import FakeLine
from tests.fakes.smtp import FakeSmtp, Mail
from tests.fakes.taps import signed_line_tap

from _util import QUICK_HELP, pct, verdict
from bench_server import AGENT_TOKEN, AUTH, LINE_TOKEN, SECRET, Server

LINE_USER = "U" + "e" * 32
ERIN = "erin@bench.test"
LINK = re.compile(r"https?://\S+/email/review/[A-Za-z0-9_\-]+")
HIDDEN = re.compile(r'name="(\w+)" value="([^"]*)"')
Samples = dict[str, list[float]]


def config_text(db: Path, line_url: str, port: int, smtp_port: int) -> str:
    return textwrap.dedent(f"""
        server: {{host: 127.0.0.1, port: {port}, heartbeat_interval: 5,
                  public_url: "http://127.0.0.1:{port}"}}
        store: {{url: "sqlite:///{db}"}}
        agents: [{{name: bench, token: "{AGENT_TOKEN}", max_pending: 0, asks_per_minute: 0}}]
        approvers:
          - {{name: lena, line: "{LINE_USER}"}}
          - {{name: erin, email: "{ERIN}"}}
        channels:
          console: {{enabled: false}}
          tap_log: "off"
          line: {{channel_access_token: "{LINE_TOKEN}", channel_secret: "{SECRET}",
                  api_base_url: "{line_url}"}}
          email: {{smtp_host: 127.0.0.1, smtp_port: {smtp_port}, security: none,
                   from: tapgate@bench.test, timeout: 10}}
        policy:
          default_timeout: 1h
          rules:
            - {{tool: deploy_line, action: ask, approvers: [lena]}}
            - {{tool: deploy_email, action: ask, approvers: [erin]}}
    """)


async def until(predicate, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise TimeoutError("the message never came")
        await asyncio.sleep(0.0005)


async def ask(agent: aiohttp.ClientSession, url: str, tool: str, n: int) -> str:
    body = {"tool": tool, "arguments": {"n": n}}
    async with agent.post(f"{url}/v1/tool-calls", json=body, headers=AUTH) as response:
        answer = await response.json()
        assert answer["decision"] == "pending", answer
        return str(answer["id"])


def mails_of(smtp: FakeSmtp, request_id: str, since: int) -> list[Mail]:
    """The mails of one request's thread (``Message-ID`` s start with its id), from ``since``.

    Only the mails since the ask are read: reading every header of every mail
    on each poll would be the benchmark's own work slowing the relay.
    """
    root = f"<tapgate.{request_id}."
    return [m for m in smtp.mails[since:] if m.header("Message-ID").startswith(root)]


async def press_email(agent: aiohttp.ClientSession, mail: Mail) -> tuple[float, int]:
    """Open the mail's page (untimed), then post Approve; (start, status)."""
    (link,) = LINK.findall(mail.part("plain"))
    async with agent.get(link) as page:
        fields = dict(HIDDEN.findall(await page.text()))
    start = time.perf_counter()
    async with agent.post(link, data={**fields, "action": "approve"}) as response:
        return start, response.status


async def one(
    kind: str, n: int, url: str, agent: aiohttp.ClientSession, line: FakeLine, smtp: FakeSmtp
) -> tuple[float, float]:
    """(ask-to-message, press-to-resume) in ms for one request on ``kind``."""
    before, since = len(line.requests_to("push")), len(smtp.mails)
    asked = time.monotonic()
    rid = await ask(agent, url, f"deploy_{kind}", n)
    if kind == "email":
        await until(lambda: bool(mails_of(smtp, rid, since)))
        arrived = mails_of(smtp, rid, since)[0].time
    else:
        await until(lambda: len(line.requests_to("push")) > before)
        arrived = line.requests_to("push")[before].time
    poll = asyncio.create_task(agent.get(f"{url}/v1/tool-calls/{rid}?wait=30", headers=AUTH))
    await asyncio.sleep(0.01)  # let the long poll park on the server
    if kind == "email":
        start, status = await press_email(agent, mails_of(smtp, rid, since)[0])
    else:
        body, headers = signed_line_tap(SECRET, LINE_USER, rid)
        start = time.perf_counter()
        async with agent.post(url + "/webhooks/line", data=body, headers=headers) as response:
            status = response.status
    assert status == 200, status
    answered = await poll
    decided = await answered.json()
    resumed = (time.perf_counter() - start) * 1000
    answered.release()
    assert decided["status"] == "approved", decided
    if kind == "email":  # its outcome mail, untimed: not a load on the next measurement
        await until(lambda: len(mails_of(smtp, rid, since)) == 2)
    return (arrived - asked) * 1000, resumed


async def run(n: int) -> dict[str, Samples]:
    """``n`` requests per channel, interleaved; {"email"|"line": {"message"|"resume": [ms]}}."""
    out: dict[str, Samples] = {k: {"message": [], "resume": []} for k in ("email", "line")}
    async with FakeLine(access_token=LINE_TOKEN) as line, FakeSmtp() as smtp:
        with tempfile.TemporaryDirectory() as tmp:
            server = Server(Path(tmp), line.url)
            server.config.write_text(
                config_text(Path(tmp) / "bench.db", line.url, server.port, smtp.port)
            )
            async with server, aiohttp.ClientSession() as agent:
                for i in range(-2, n):  # two warm-up rounds, not counted
                    order = ("email", "line") if i % 2 == 0 else ("line", "email")
                    for kind in order:
                        message, resume = await one(kind, i, server.url, agent, line, smtp)
                        if i >= 0:
                            out[kind]["message"].append(message)
                            out[kind]["resume"].append(resume)
    return out


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help=QUICK_HELP)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("-n", type=int, default=150, help="requests per channel per run")
    args = parser.parse_args()
    n = 15 if args.quick else args.n
    message_ratios, resume_ratios = [], []
    for number in range(1, args.runs + 1):
        got = await run(n)
        mail, card = got["email"]["message"], got["line"]["message"]
        e_res, l_res = got["email"]["resume"], got["line"]["resume"]
        message_ratios.append(statistics.median(mail) / statistics.median(card))
        resume_ratios.append(pct(e_res, 99) / pct(l_res, 99))
        print(
            f"run {number}: ask-to-message median/p99 email {statistics.median(mail):.1f}/"
            f"{pct(mail, 99):.1f} ms, LINE {statistics.median(card):.1f}/{pct(card, 99):.1f} ms "
            f"(median ratio x{message_ratios[-1]:.2f}); press-to-resume p50/p99 email "
            f"{pct(e_res, 50):.1f}/{pct(e_res, 99):.1f} ms, LINE {pct(l_res, 50):.1f}/"
            f"{pct(l_res, 99):.1f} ms (p99 ratio x{resume_ratios[-1]:.2f}) (n={n})"
        )
    print(
        f"email/LINE over {args.runs} runs: ask-to-message median ratio "
        f"x{statistics.median(message_ratios):.2f} (spread {min(message_ratios):.2f}-"
        f"{max(message_ratios):.2f}); press-to-resume p99 ratio "
        f"x{statistics.median(resume_ratios):.2f} (spread {min(resume_ratios):.2f}-"
        f"{max(resume_ratios):.2f})"
    )
    return verdict(statistics.median(message_ratios) <= 1.5, quick=args.quick)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
