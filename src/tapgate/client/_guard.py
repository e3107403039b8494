"""The tool wrapper: ``@guard(gate)`` asks a gate before a tool runs.

One decorator for sync and async tools and for any gate with a ``check``:
the in-process :class:`~tapgate.gate.gate.Gate`, :class:`RemoteGate` and
:class:`SyncRemoteGate`. The call it sends is the tool's name (or ``tool=``)
and its bound arguments, so approvers see exactly what will run. A denial
raises :class:`ToolDenied` or comes back as a :class:`Denied` value; either way
the decision's ``reason`` is there for the model.

The arguments are read again when the decision comes back: a list or dict
the tool was given can be changed by other code during the minutes a human
takes to decide, and an approval of ``{"env": "staging"}`` must not run the
tool on ``"prod"``. If what the tool would now get differs from what was
approved, it does not run (:class:`ArgumentsChanged`). An approver who edited
the call before approving it (``decision.edited``) has approved other
arguments: the tool runs with those, or not at all when a parameter it
edited cannot be rebuilt from JSON (:class:`GuardError`). Plain values and
containers are compared by value, other objects (clients, locks, paths) by
identity, so an object whose text changes on its own never blocks a call.

Mixed cases: a sync tool with an async gate runs the check under
``asyncio.run`` (and refuses inside a running loop, where that would block or
fail); an async tool with a sync gate runs the check in a worker thread, so a
long wait for a human never blocks the event loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import functools
import inspect
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, Literal, ParamSpec, Protocol, TypeVar, cast, overload

from tapgate.client._errors import ArgumentsChanged, GuardError, ToolDenied
from tapgate.gate.models import Decision, Risk, ToolCall

__all__ = ["AsyncChecker", "Denied", "SyncChecker", "guard", "tool_arguments"]

P = ParamSpec("P")
R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])


class AsyncChecker(Protocol):
    """Anything that decides a call asynchronously: ``Gate``, ``RemoteGate``."""

    def check(self, call: ToolCall) -> Awaitable[Decision]: ...  # pragma: no cover


class SyncChecker(Protocol):
    """Anything that decides a call synchronously: ``SyncRemoteGate``."""

    def check(self, call: ToolCall) -> Decision: ...  # pragma: no cover


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Denied:
    """What a guarded tool returns instead of running, with ``on_deny="return"``.

    A value rather than an exception suits frameworks that hand a tool's
    return value straight back to the model: ``reason`` tells it why.
    """

    tool: str
    reason: str
    decision: Decision
    kind: Literal["denied"] = "denied"

    def __str__(self) -> str:
        return f"{self.tool} was denied: {self.reason}"


class _Raising(Protocol):
    def __call__(self, fn: F, /) -> F: ...  # pragma: no cover


class _Returning(Protocol):
    @overload
    def __call__(
        self, fn: Callable[P, Coroutine[Any, Any, R]], /
    ) -> Callable[P, Coroutine[Any, Any, R | Denied]]: ...  # pragma: no cover
    @overload
    def __call__(self, fn: Callable[P, R], /) -> Callable[P, R | Denied]: ...  # pragma: no cover


@overload
def guard(
    gate: AsyncChecker | SyncChecker,
    *,
    tool: str | None = ...,
    risk: Risk | None = ...,
    on_deny: Literal["raise"] = ...,
    session: str | None = ...,
    agent: str = ...,
) -> _Raising: ...
@overload
def guard(
    gate: AsyncChecker | SyncChecker,
    *,
    tool: str | None = ...,
    risk: Risk | None = ...,
    on_deny: Literal["return"],
    session: str | None = ...,
    agent: str = ...,
) -> _Returning: ...
def guard(
    gate: AsyncChecker | SyncChecker,
    *,
    tool: str | None = None,
    risk: Risk | None = None,
    on_deny: Literal["raise", "return"] = "raise",
    session: str | None = None,
    agent: str = "default",
) -> _Raising | _Returning:
    """Run the decorated tool only when ``gate`` allows the call.

    ``risk`` is the author's declaration (the operator's config wins over it);
    ``agent`` matters only to an in-process gate, a remote one takes the agent
    from its token. With ``on_deny="raise"`` a denial raises
    :class:`ToolDenied`; with ``"return"`` the tool returns a :class:`Denied`.
    """
    is_async_gate = inspect.iscoroutinefunction(gate.check)

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        name = tool or fn.__name__
        signature = inspect.signature(fn)

        def call_for(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[ToolCall, Any]:
            """The call to decide, and a snapshot of its arguments to compare with after."""
            bound = _bound(signature, args, kwargs)
            arguments = {k: _jsonable(v) for k, v in bound.items()}
            call = ToolCall(tool=name, arguments=arguments, agent=agent, session=session, risk=risk)
            return call, _snapshot(bound)

        def refused(decision: Decision) -> Denied:
            if on_deny == "raise":
                raise ToolDenied(decision, tool=name)
            return Denied(tool=name, reason=decision.reason, decision=decision)

        def unchanged(decided: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            """Refuse to run if the arguments differ from the ones decided on."""
            if _snapshot(_bound(signature, args, kwargs)) != decided:
                raise ArgumentsChanged(
                    f"{name}'s arguments changed while the call was being decided; "
                    "not run (ask again with the new arguments)"
                )

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def guarded_async(*args: Any, **kwargs: Any) -> Any:
                call, decided = call_for(args, kwargs)
                if is_async_gate:
                    decision = await cast(AsyncChecker, gate).check(call)
                else:
                    decision = await asyncio.to_thread(cast(SyncChecker, gate).check, call)
                if not decision.allowed:
                    return refused(decision)
                unchanged(decided, args, kwargs)
                args, kwargs = _as_approved(name, signature, args, kwargs, decision)
                return await fn(*args, **kwargs)

            return guarded_async

        @functools.wraps(fn)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            call, decided = call_for(args, kwargs)
            if is_async_gate:
                decision = _run_async_check(cast(AsyncChecker, gate), call)
            else:
                decision = cast(SyncChecker, gate).check(call)
            if not decision.allowed:
                return refused(decision)
            unchanged(decided, args, kwargs)
            args, kwargs = _as_approved(name, signature, args, kwargs, decision)
            return fn(*args, **kwargs)

        return guarded

    return cast(_Raising | _Returning, decorate)


def _as_approved(
    name: str,
    signature: inspect.Signature,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    decision: Decision,
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments to call the tool with: as given, or as an approver edited them.

    An edited parameter gets the approved JSON value (a tuple stays a tuple);
    one whose live value JSON cannot carry (a path, a client, an object) cannot
    be rebuilt from the edit, so the tool does not run (:class:`GuardError`):
    running the original would run what the approver did not approve.
    """
    if not decision.edited or decision.arguments is None:
        return args, kwargs
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    for key, value in decision.arguments.items():
        if key not in bound.arguments:
            raise GuardError(f"{name}: the approved edit names {key!r}, not a parameter; not run")
        live = bound.arguments[key]
        if _snapshot(_jsonable(live)) == _snapshot(value):
            continue
        if not _plain(live):
            raise GuardError(
                f"{name}: an approver edited {key!r}, a {type(live).__name__} that cannot "
                "be rebuilt from the edit; not run"
            )
        bound.arguments[key] = tuple(value) if isinstance(live, tuple) else value
    return bound.args, bound.kwargs


def _plain(value: Any) -> bool:
    """True for a value JSON carries as it is (``_jsonable`` changes nothing but a tuple)."""
    if value is None or isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, list | tuple):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def _run_async_check(gate: AsyncChecker, call: ToolCall) -> Decision:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise GuardError(
            f"{call.tool} is a sync tool guarded by an async gate, called inside a running "
            "event loop, where the check cannot be run to completion. Make the tool an "
            "async function, or guard it with a SyncRemoteGate."
        )

    async def check() -> Decision:
        return await gate.check(call)

    return asyncio.run(check())


def tool_arguments(
    signature: inspect.Signature, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """The call's arguments by parameter name, defaults included, as JSON-able values.

    Defaults are included so that approvers see everything the tool will get
    and the same call always has the same arguments. A leading ``self`` or
    ``cls`` is left out. Values JSON cannot carry become text (paths, enums,
    datetimes and other objects via ``str``); dataclasses become objects.
    """
    return {k: _jsonable(v) for k, v in _bound(signature, args, kwargs).items()}


def _bound(
    signature: inspect.Signature, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """The live argument values by parameter name, defaults applied, without ``self``."""
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    params = list(signature.parameters)
    skip = params[0] if params and params[0] in ("self", "cls") else None
    return {k: v for k, v in bound.arguments.items() if k != skip}


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
        return [_jsonable(v) for v in items]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # Field by field, not dataclasses.asdict: that deep-copies every leaf.
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    return str(value)


class _Same:
    """A leaf compared by identity: an object whose text may change while it does not.

    A lock's ``str`` says whether it is held, a process's its return code, and
    a plain object's its address (new for every copy): comparing their text
    would call an approved call changed. What this cannot see is an attribute
    of such an object reassigned in place; the tool gets the live object.
    """

    __slots__ = ("obj",)

    def __init__(self, obj: object) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.obj is self.obj

    __hash__ = None  # type: ignore[assignment]


def _snapshot(value: Any) -> Any:
    """``value`` as decided on, to compare with after the decision (see :func:`guard`).

    Plain values by value and type (``1`` and ``True`` differ; floats by their
    exact hex, so NaN equals NaN), containers and dataclasses by their
    contents, anything else by identity (:class:`_Same`).
    """
    if isinstance(value, float):
        return (float, float(value).hex())
    if value is None or isinstance(value, bool | int | str):
        return (type(value), value)
    if isinstance(value, Mapping):
        return (Mapping, {str(k): _snapshot(v) for k, v in value.items()})
    if isinstance(value, list | tuple | set | frozenset):
        unordered = isinstance(value, set | frozenset)
        items = sorted(value, key=repr) if unordered else value
        return (set if unordered else list, [_snapshot(v) for v in items])
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: _snapshot(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return (type(value), fields)
    return _Same(value)
