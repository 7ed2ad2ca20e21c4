"""The hook engine: registers hooks, runs SYNC chains, and keeps ASYNC observers.

A SYNC chain runs the matching hooks one after another, lowest priority first, each under
its own timeout: a ``block`` stops it, a ``modify`` hands the next hook a new event. A hook
that fails (raises, times out, returns something that is not a :class:`HookResult`) is
logged and skipped, unless it fails closed: then the chain stops and the event is refused.
BEFORE_TOOL_USE fails closed by default, since a gate that cannot decide must not let the
call through; every other trigger fails open. ASYNC hooks are observers: the caller starts
them with :meth:`HookEngine.run_async` once a chain let the event through.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple, TypedDict, TypeVar

from roomkit.core.callables import is_async_callable
from roomkit.core.tasks import cancel_and_wait, cancelled_from_within
from roomkit.models.enums import ChannelType
from roomkit.models.hooks import (
    HookExecution,
    HookFn,
    HookOutcome,
    HookRegistration,
    HookResult,
    HookTrigger,
    RoomContext,
)

__all__ = [
    "HOOK_DEFAULTS",
    "HookDefaults",
    "HookEngine",
    "HookFn",
    "HookOptions",
    "HookRegistrar",
]

logger = logging.getLogger("roomkit.hooks")

_F = TypeVar("_F", bound=HookFn)

_FAIL_CLOSED_TRIGGERS = frozenset({HookTrigger.BEFORE_TOOL_USE})


@dataclass(frozen=True, slots=True)
class HookDefaults:
    """A hook's options besides its trigger and function, described at
    :meth:`HookRegistrar.add_hook`. :data:`HOOK_DEFAULTS` holds their defaults, which the
    signatures that take them (:class:`HookRegistrar`'s ``add_hook`` and ``hook``, shared by
    ``HookEngine`` and ``RoomKit``) read."""

    execution: HookExecution = HookExecution.SYNC
    priority: int = 0
    name: str | None = None
    timeout: float = 30.0
    channel_types: Iterable[ChannelType] | None = None
    channel_ids: Iterable[str] | None = None
    fail_closed: bool | None = None


HOOK_DEFAULTS = HookDefaults()
"""The one place the defaults of a hook's options are written."""


class HookOptions(TypedDict, total=False):
    """The options of a hook besides its trigger, function and execution, as keywords to
    pass on (``**options``); each is described at :meth:`HookEngine.register`."""

    priority: int
    name: str | None
    timeout: float
    channel_types: Iterable[ChannelType] | None
    channel_ids: Iterable[str] | None
    fail_closed: bool | None


class _Run(NamedTuple):
    """One hook run: what it returned, or what failed (and the exception, if one was raised)."""

    result: object = None
    error: str | None = None
    exc: BaseException | None = None


def _channel_filter(option: str, values: object, convert: Callable[[Any], Any]) -> Any:
    if values is None:
        return None
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise TypeError(f"{option} takes a collection of values, got {values!r}")
    return frozenset(convert(value) for value in values)


def _channel_type(value: Any) -> ChannelType:
    try:
        return ChannelType(value)
    except ValueError:
        raise ValueError(
            f"channel_types takes ChannelType values (e.g. ChannelType.AI), got {value!r}"
        ) from None


def _channel_id(value: object) -> str:
    # Converting would file the hook under an id no channel has ("None", "97" for b"a").
    if not isinstance(value, str):
        raise TypeError(f"channel_ids takes channel ids, which are strings, got {value!r}")
    return value


class HookRegistrar:
    """Registers hooks: ``add_hook`` and the ``hook`` decorator, written once for
    :class:`HookEngine` (where ``add_hook`` is also :meth:`HookEngine.register`) and for
    :class:`~roomkit.core.framework.RoomKit`, which registers on its engine."""

    def _hook_engine(self) -> HookEngine:
        """The engine the hooks are registered on."""
        raise NotImplementedError

    def add_hook(
        self,
        trigger: HookTrigger,
        fn: HookFn,
        *,
        execution: HookExecution = HOOK_DEFAULTS.execution,
        priority: int = HOOK_DEFAULTS.priority,
        name: str | None = HOOK_DEFAULTS.name,
        timeout: float = HOOK_DEFAULTS.timeout,
        channel_types: Iterable[ChannelType] | None = HOOK_DEFAULTS.channel_types,
        channel_ids: Iterable[str] | None = HOOK_DEFAULTS.channel_ids,
        fail_closed: bool | None = HOOK_DEFAULTS.fail_closed,
    ) -> HookRegistration:
        """Register ``fn`` for ``trigger``.

        Args:
            trigger: the moment the hook attaches to.
            fn: ``async def fn(event, ctx) -> HookResult | None``.
            execution: SYNC to take part in the chain, ASYNC to observe afterwards.
            priority: lower runs first; ties run in registration order.
            name: the name in logs and outcomes; ``fn.__name__`` when ``None``.
            timeout: seconds one run may take (30 by default).
            channel_types: run only for events from these kinds of channel.
            channel_ids: run only for events from these channels.
            fail_closed: whether a failure blocks the event; ``None`` follows the trigger
                (BEFORE_TOOL_USE fails closed, every other trigger fails open).

        Returns:
            The registration, to pass to :meth:`HookEngine.unregister`.

        Raises:
            TypeError: ``fn`` is not an async function, a filter is a bare string or no
                collection, ``channel_ids`` holds something other than strings, or
                ``priority`` is not an int, ``timeout`` not a number, ``name`` not a string,
                ``fail_closed`` neither a bool nor ``None``.
            ValueError: ``timeout`` is not positive, or an integer too large for a float
                (``math.inf`` is taken), ``channel_types`` holds no ChannelType, or an ASYNC
                hook asks to fail closed.
        """
        options = HookDefaults(
            execution, priority, name, timeout, channel_types, channel_ids, fail_closed
        )
        return self._hook_engine()._register(trigger, fn, options)

    def hook(
        self,
        trigger: HookTrigger,
        execution: HookExecution = HOOK_DEFAULTS.execution,
        *,
        priority: int = HOOK_DEFAULTS.priority,
        name: str | None = HOOK_DEFAULTS.name,
        timeout: float = HOOK_DEFAULTS.timeout,
        channel_types: Iterable[ChannelType] | None = HOOK_DEFAULTS.channel_types,
        channel_ids: Iterable[str] | None = HOOK_DEFAULTS.channel_ids,
        fail_closed: bool | None = HOOK_DEFAULTS.fail_closed,
    ) -> Callable[[_F], _F]:
        """Register the decorated ``async def hook(event, ctx)`` for ``trigger`` (the options
        are :meth:`add_hook`'s); it returns the function unchanged.

        SYNC hooks run in priority order (lower first) and may block or modify; ASYNC hooks
        observe afterwards. A hook that returns ``None`` allows. ``execution`` may be given
        by position: ``@kit.hook(HookTrigger.ON_TOOL_CALL, HookExecution.ASYNC)``.
        """

        options = HookDefaults(
            execution, priority, name, timeout, channel_types, channel_ids, fail_closed
        )

        def decorate(fn: _F) -> _F:
            self._hook_engine()._register(trigger, fn, options)
            return fn

        return decorate


class HookEngine(HookRegistrar):
    """Registers hooks and runs them for a trigger.

    Example:
        >>> engine = HookEngine()
        >>> @engine.hook(HookTrigger.BEFORE_TOOL_USE)
        ... async def rate_limit(event, ctx):
        ...     return HookResult.block("rate limited")
    """

    def __init__(self) -> None:
        self._hooks: dict[HookTrigger, list[HookRegistration]] = {}
        self._seq = itertools.count()
        self._observers: set[asyncio.Task[None]] = set()
        self._closed = False

    register = HookRegistrar.add_hook
    """Register ``fn`` for ``trigger``: :meth:`add_hook` under the name the engine is known by."""

    def _hook_engine(self) -> HookEngine:
        return self

    def _register(
        self, trigger: HookTrigger, fn: HookFn, options: HookDefaults
    ) -> HookRegistration:
        # add_hook's and hook's work, described (with what it raises) at add_hook.
        trigger = HookTrigger(trigger)
        execution = HookExecution(options.execution)
        if options.name is not None and not isinstance(options.name, str):
            raise TypeError(f"hook name must be a string or None, got {options.name!r}")
        label = options.name or str(getattr(fn, "__name__", type(fn).__name__))
        if not is_async_callable(fn):
            raise TypeError(
                f"hook {label!r} must be an async function (async def {label}(event, ctx)), "
                f"got {fn!r}"
            )
        # Checked before the hook joins the list: a priority that does not sort against the
        # others would break every later registration for the trigger.
        priority = options.priority
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise TypeError(
                f"hook {label!r}: priority must be an int (lower runs first), got {priority!r}"
            )
        timeout = options.timeout
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise TypeError(f"hook {label!r}: timeout must be a number of seconds, got {timeout!r}")
        if not timeout > 0:
            raise ValueError(f"hook {label!r}: timeout must be a positive number of seconds")
        try:
            float(timeout)
        except OverflowError:
            # Refused now: every run would fail to add it to the loop's clock.
            raise ValueError(
                f"hook {label!r}: timeout is too large a number of seconds for a float; "
                "pass math.inf for a hook that may run as long as it takes"
            ) from None
        if options.fail_closed is not None and not isinstance(options.fail_closed, bool):
            # "no" would read as true: the hook would block the event it was told not to.
            raise TypeError(
                f"hook {label!r}: fail_closed must be True, False or None (the trigger's "
                f"default), got {options.fail_closed!r}"
            )
        if options.fail_closed and execution is HookExecution.ASYNC:
            raise ValueError(
                f"hook {label!r}: an ASYNC hook cannot fail closed, since it runs after the "
                "event went through; register it as SYNC to gate the event"
            )
        registration = HookRegistration(
            trigger=trigger,
            fn=fn,
            execution=execution,
            priority=options.priority,
            name=label,
            timeout=options.timeout,
            channel_types=_channel_filter("channel_types", options.channel_types, _channel_type),
            channel_ids=_channel_filter("channel_ids", options.channel_ids, _channel_id),
            fail_closed=options.fail_closed,
            seq=next(self._seq),
        )
        hooks = self._hooks.setdefault(trigger, [])
        hooks.append(registration)
        hooks.sort(key=lambda hook: (hook.priority, hook.seq))
        return registration

    def unregister(self, registration: HookRegistration) -> bool:
        """Remove a hook. Returns ``False`` when it was not registered (or already removed)."""
        hooks = self._hooks.get(registration.trigger, [])
        for index, hook in enumerate(hooks):
            if hook is registration:
                del hooks[index]
                return True
        return False

    def has_hooks(
        self,
        trigger: HookTrigger,
        *,
        execution: HookExecution | None = None,
        channel_type: ChannelType | None = None,
        channel_id: str | None = None,
    ) -> bool:
        """Whether any hook for ``trigger`` may run.

        ``execution`` narrows to SYNC or ASYNC hooks. A ``channel_type`` or ``channel_id``
        narrows to hooks whose filters admit that channel; left out, it does not filter.
        """
        for hook in self._hooks.get(trigger, ()):
            if execution is not None and hook.execution is not execution:
                continue
            types, ids = hook.channel_types, hook.channel_ids
            if channel_type is not None and types is not None and channel_type not in types:
                continue
            if channel_id is not None and ids is not None and channel_id not in ids:
                continue
            return True
        return False

    def _matching(
        self,
        trigger: HookTrigger,
        execution: HookExecution,
        event: Any,
        channel_type: ChannelType | None,
        channel_id: str | None,
    ) -> list[HookRegistration]:
        # The tool and input events carry their channel: a filter applies without the
        # caller repeating it.
        if channel_type is None:
            channel_type = getattr(event, "channel_type", None)
        if channel_id is None:
            channel_id = getattr(event, "channel_id", None)
        return [
            hook
            for hook in self._hooks.get(trigger, ())
            if hook.execution is execution and hook.matches(channel_type, channel_id)
        ]

    async def run_sync(
        self,
        trigger: HookTrigger,
        event: Any,
        ctx: RoomContext,
        *,
        channel_type: ChannelType | None = None,
        channel_id: str | None = None,
    ) -> HookOutcome:
        """Run the SYNC chain for ``trigger`` and say what it decided.

        The channel defaults to the event's own ``channel_type`` / ``channel_id``. A filtered
        hook runs only when the channel is known and admitted. Observers are not started
        here: the caller calls :meth:`run_async` once it acted on the outcome.
        """
        metadata: dict[str, Any] = {}
        errors: list[str] = []
        for hook in self._matching(trigger, HookExecution.SYNC, event, channel_type, channel_id):
            run = await self._call(hook, event, ctx)
            result, error = run.result, run.error
            if error is None and not (result is None or isinstance(result, HookResult)):
                error = f"returned {type(result).__name__} instead of HookResult"
            if error is not None:
                failure = f"{hook.name}: {error}"
                errors.append(failure)
                if self._fails_closed(hook):
                    logger.warning(
                        "Hook %s failed on %s, event refused: %s",
                        hook.name,
                        trigger,
                        error,
                        exc_info=run.exc,
                    )
                    return HookOutcome(
                        allowed=False,
                        blocked_by=hook.name,
                        event=event,
                        metadata=metadata,
                        errors=tuple(errors),
                        detail=failure,
                    )
                logger.warning(
                    "Hook %s failed on %s, skipped: %s", hook.name, trigger, error, exc_info=run.exc
                )
                continue
            if not isinstance(result, HookResult):
                continue
            if result.action == "block":
                return HookOutcome(
                    allowed=False,
                    reason=result.reason,
                    blocked_by=hook.name,
                    event=event,
                    metadata=metadata,
                    errors=tuple(errors),
                )
            if result.action == "modify":
                event = result.event
            metadata.update(result.metadata)
        return HookOutcome(allowed=True, event=event, metadata=metadata, errors=tuple(errors))

    @staticmethod
    def _fails_closed(hook: HookRegistration) -> bool:
        if hook.fail_closed is not None:
            return hook.fail_closed
        return hook.trigger in _FAIL_CLOSED_TRIGGERS

    @staticmethod
    async def _call(hook: HookRegistration, event: Any, ctx: RoomContext) -> _Run:
        """Run one hook under its timeout; a failure is returned, never raised."""
        bound = asyncio.timeout(hook.timeout)
        try:
            async with bound:
                return _Run(await hook.fn(event, ctx))
        except TimeoutError as exc:
            if bound.expired():
                return _Run(error=f"timed out after {hook.timeout:g} s")
            return _Run(error=str(exc) or type(exc).__name__, exc=exc)
        except Exception as exc:
            return _Run(error=str(exc) or type(exc).__name__, exc=exc)
        except asyncio.CancelledError as exc:
            # Raised by what the hook awaited, not by a cancel of the chain: a failure of
            # the hook, which must not end the turn (or the observer) it runs in unseen.
            if not cancelled_from_within():
                raise
            return _Run(error="raised CancelledError, though nothing cancelled it", exc=exc)

    def run_async(
        self,
        trigger: HookTrigger,
        event: Any,
        ctx: RoomContext,
        *,
        channel_type: ChannelType | None = None,
        channel_id: str | None = None,
    ) -> None:
        """Start the ASYNC observers of ``trigger`` and return at once.

        Each observer runs as its own task under its timeout; what it raises is logged.
        :meth:`drain` waits for them. Once the engine is closed, nothing is started.
        """
        if self._closed:
            logger.debug("Hook engine closed: observers of %s not started", trigger)
            return
        for hook in self._matching(trigger, HookExecution.ASYNC, event, channel_type, channel_id):
            task = asyncio.create_task(self._observe(hook, event, ctx), name=f"hook:{hook.name}")
            self._observers.add(task)
            task.add_done_callback(self._observers.discard)

    async def _observe(self, hook: HookRegistration, event: Any, ctx: RoomContext) -> None:
        run = await self._call(hook, event, ctx)
        # An observer's verdict does not matter: only a failure is worth a log line.
        if run.error is not None:
            logger.warning(
                "Observer hook %s failed on %s: %s",
                hook.name,
                hook.trigger,
                run.error,
                exc_info=run.exc,
            )

    async def drain(self) -> None:
        """Wait until every observer has finished, including observers started meanwhile."""
        while self._observers:
            # asyncio.wait, unlike gather, leaves the observers running if drain is cancelled.
            await asyncio.wait(set(self._observers))

    async def close(self) -> None:
        """Cancel the running observers, wait for them, and start no new ones."""
        self._closed = True
        await cancel_and_wait(set(self._observers))
