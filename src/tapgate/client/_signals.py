"""Ctrl-C and SIGTERM while ``tapgate run`` asks: held until the request can be withdrawn.

Apart from :mod:`tapgate.client._run` so that the asking, the waiting
(:mod:`tapgate.client._waiting`) and the signals each stay one readable concept.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from types import FrameType
from typing import TextIO

__all__ = ["Signals", "Stopped", "exception_for"]


class Stopped(BaseException):
    """SIGTERM while waiting (a CI job was cancelled): withdrawn like a Ctrl-C.

    A ``BaseException``, like ``KeyboardInterrupt``, so that no ``except
    Exception`` on the way (retries, the gate) swallows it.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.status = 128 + signum


class Signals:
    """Ctrl-C and SIGTERM while asking: held until the request exists, then they stop us.

    A signal that lands while the ask is on the wire would otherwise stop
    ``tapgate run`` before it learns the request's id, leaving a request
    nobody will cancel pending on the approvers' phones until it expires. So
    the first one is held until :meth:`release` (the id is known, or the
    call was decided at once) and then raised, which withdraws the request.
    The hold is bounded: a second signal, or ``HOLD_LIMIT`` seconds without
    an answer (a CI runner kills a job a few seconds after its SIGTERM),
    stop at once, and :attr:`unanswered` says a request may be left behind.
    SIGTERM becomes :class:`Stopped`, Ctrl-C ``KeyboardInterrupt``.
    Handlers are installed on the main thread only (elsewhere Python cannot
    have them), never over a signal the caller ignores (``nohup``, ``&``).
    The hold's limit uses ``SIGALRM`` / ``ITIMER_REAL`` while asking: a
    program that calls :func:`run_approved` must not rely on its own timer then.
    """

    HOLD_LIMIT = 5.0

    def __init__(self, err: TextIO) -> None:
        self._err = err
        self._holding = True
        self._held: int | None = None
        self._previous: dict[int, object] = {}
        self.unanswered = False  # stopped before the server told us the request id

    @property
    def held(self) -> int | None:
        """The signal being held, if any."""
        return self._held

    def __enter__(self) -> Signals:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                if signal.getsignal(signum) is not signal.SIG_IGN:
                    self._previous[signum] = signal.signal(signum, self._handle)
            if self._previous:
                self._previous[signal.SIGALRM] = signal.signal(signal.SIGALRM, self._give_up)
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._previous:
            return
        # Blocked while restoring, so no signal finds half our handlers still in place.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, set(self._previous))
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
            for signum, previous in self._previous.items():
                signal.signal(signum, previous)  # type: ignore[arg-type]
            self._previous.clear()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    def release(self) -> None:
        """Stop holding; a signal held meanwhile is raised now."""
        self._holding = False
        if signal.SIGALRM in self._previous:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if self._held is not None:
            held, self._held = self._held, None
            _raise_for(held)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._holding and self._held is None:
            self._held = signum
            signal.setitimer(signal.ITIMER_REAL, self.HOLD_LIMIT)
            with contextlib.suppress(RuntimeError, OSError):  # a write it interrupted
                self._err.write(
                    "\ntapgate: stopping once the server has the request, to withdraw it "
                    "(again to stop now)\n"
                )
                self._err.flush()
            return
        if self._holding:
            self.unanswered = True
        _raise_for(signum)

    def _give_up(self, signum: int, frame: FrameType | None) -> None:
        """``HOLD_LIMIT`` passed without the request id: stop anyway."""
        if self._holding and self._held is not None:
            held, self._held = self._held, None
            self.unanswered = True
            _raise_for(held)


def exception_for(signum: int) -> BaseException:
    return KeyboardInterrupt() if signum == signal.SIGINT else Stopped(signum)


def _raise_for(signum: int) -> None:
    raise exception_for(signum)
