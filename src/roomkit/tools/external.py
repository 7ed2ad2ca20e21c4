"""Tools a provider runs itself, and the handler that decides and reports them.

Some providers (a coding sandbox, an agent runtime) execute tools on their own side. The
channel hands each pending call to an :class:`ExternalToolHandler`, which decides it
(approve, rewrite, answer, refuse) and is told how it ended. The channel does not run
BEFORE_TOOL_USE for these calls: the handler fires it through :meth:`_fire_before_hook`,
and reports to ON_TOOL_CALL through :meth:`_fire_on_tool_hook`. The kit injects both hooks
when the channel is registered. The provider reads the outcomes of its calls itself: an AI
channel runs no further model round after a round made only of them.
"""

from __future__ import annotations

import inspect
import logging
import weakref
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from roomkit.models.enums import ChannelType
from roomkit.models.tool_call import ToolCallEvent
from roomkit.tools import texts
from roomkit.tools.context import current_tool_actor_id
from roomkit.tools.policy import ToolPolicy, policy_refusal

__all__ = [
    "BeforeToolDecision",
    "BeforeToolHook",
    "ExternalToolHandler",
    "OnToolHook",
    "PolicyExternalToolHandler",
    "ToolDecision",
    "call_on_tool_refused",
]

logger = logging.getLogger("roomkit.tools.external")


@dataclass(slots=True)
class ToolDecision:
    """How an external handler decides a call.

    ``approved=True`` lets the provider run it (with ``modified_input`` when set; the call's
    result is the provider's, and the handler hears an empty one), or serves it at once when
    ``result`` is set; ``approved=False`` refuses it and the model reads ``reason``.
    """

    approved: bool
    """Whether the call may go ahead."""
    modified_input: dict[str, Any] | None = None
    """Arguments that replace the model's; ``None`` keeps them."""
    result: str | None = None
    """The call's result, for a call the handler answers itself."""
    reason: str = ""
    """Why the call is refused; the model reads it."""
    detail: str | None = None
    """What failed, for a refusal that came from a failure; the host sees it, the model not."""


@dataclass(frozen=True, slots=True)
class BeforeToolDecision:
    """What BEFORE_TOOL_USE decided for an external call. Truthy when the call is allowed."""

    allowed: bool
    """Whether the hooks let the call through."""
    arguments: dict[str, Any] | None = None
    """Rewritten arguments from a hook; ``None`` keeps the model's."""
    detail: str | None = None
    """``"<hook name>: <error>"`` when a hook failed closed."""
    reason: str | None = None
    """The blocking hook's reason."""

    def __bool__(self) -> bool:
        return self.allowed


BeforeToolHook = Callable[[str, dict[str, Any], str, str | None], Awaitable[BeforeToolDecision]]
"""Runs BEFORE_TOOL_USE: ``await hook(tool_name, tool_input, tool_call_id, room_id)``."""

OnToolHook = Callable[[ToolCallEvent], Awaitable[None]]
"""Reports a call to ON_TOOL_CALL: ``await hook(event)``."""


class ExternalToolHandler(ABC):
    """Decides and reports the calls a provider runs on its own side.

    Subclasses implement :meth:`process_tool_call` and :meth:`on_tool_result`. The kit sets
    the hooks and the channel id when the channel is registered; give each channel its own
    handler instance.
    """

    _before_tool_hook: BeforeToolHook | None = None
    _on_tool_hook: OnToolHook | None = None
    _channel_id: str = ""

    @property
    def channel_id(self) -> str:
        """The channel this handler serves ("" until the channel is registered)."""
        return self._channel_id

    @abstractmethod
    async def process_tool_call(
        self,
        tool_name: str,
        tool_input: dict[str, Any],
        *,
        tool_call_id: str = "",
        job_id: str | None = None,
        session_id: str | None = None,
        tenant_id: str | None = None,
        room_id: str | None = None,
    ) -> ToolDecision:
        """Decide a pending call: approve it, rewrite it, answer it, or refuse it."""

    @abstractmethod
    async def on_tool_result(
        self,
        tool_name: str,
        tool_input: dict[str, Any],
        result: str | list[Any] | None,
        *,
        is_error: bool = False,
        tool_call_id: str = "",
        job_id: str | None = None,
        room_id: str | None = None,
        refused_but_ran: bool = False,
        error_detail: str | None = None,
    ) -> None:
        """Hear how an approved call ended; usually forwarded to :meth:`_fire_on_tool_hook`."""

    async def on_tool_cancelled(
        self,
        tool_name: str,
        tool_input: dict[str, Any],
        *,
        tool_call_id: str = "",
        job_id: str | None = None,
        room_id: str | None = None,
    ) -> None:
        """A call was cut before its result; reports it to ON_TOOL_CALL as cancelled.

        Override it to withdraw what the call started (a question shown to a person), then
        ``await super().on_tool_cancelled(...)`` to keep the report. It runs while the turn
        tears down: keep it short (after 10 s it is cancelled, and the channel reports the
        call itself).
        """
        await self._fire_on_tool_hook(
            tool_name,
            tool_input,
            texts.cancelled(tool_name, texts.TURN_ENDED),
            is_error=True,
            cancelled=True,
            tool_call_id=tool_call_id,
            room_id=room_id,
        )

    async def on_tool_refused(
        self,
        tool_name: str,
        tool_input: dict[str, Any],
        reason: str,
        *,
        tool_call_id: str = "",
        job_id: str | None = None,
        room_id: str | None = None,
        detail: str | None = None,
    ) -> None:
        """A call this handler refused; reports it to ON_TOOL_CALL as refused.

        ``reason`` is what the model read. Overrides receive ``detail`` only when they accept
        it (or ``**kwargs``), so write them with ``**kwargs``.
        """
        await self._fire_on_tool_hook(
            tool_name,
            tool_input,
            reason,
            is_error=True,
            refused=True,
            error_detail=detail,
            tool_call_id=tool_call_id,
            room_id=room_id,
        )

    async def start(self) -> None:  # noqa: B027 -- optional lifecycle step, nothing by default
        """Start the handler's own resources; nothing by default."""

    async def stop(self) -> None:  # noqa: B027 -- optional lifecycle step, nothing by default
        """Stop the handler's own resources; nothing by default."""

    async def _fire_before_hook(
        self,
        tool_name: str,
        tool_input: dict[str, Any],
        *,
        tool_call_id: str = "",
        room_id: str | None = None,
    ) -> BeforeToolDecision:
        """Run BEFORE_TOOL_USE for a call; allowed when the handler is not wired to a kit."""
        hook = self._before_tool_hook
        if hook is None:
            return BeforeToolDecision(allowed=True)
        return await hook(tool_name, tool_input, tool_call_id, room_id)

    async def _fire_on_tool_hook(
        self,
        tool_name: str,
        tool_input: dict[str, Any],
        result: str | list[Any] | None,
        *,
        is_error: bool = False,
        cancelled: bool = False,
        refused: bool = False,
        error_detail: str | None = None,
        tool_call_id: str = "",
        room_id: str | None = None,
        refused_but_ran: bool = False,
    ) -> None:
        """Report a call to ON_TOOL_CALL; nothing happens when the handler is not wired."""
        hook = self._on_tool_hook
        if hook is None:
            return
        event = ToolCallEvent(
            channel_id=self._channel_id,
            channel_type=ChannelType.AI,
            tool_call_id=tool_call_id,
            name=tool_name,
            arguments=tool_input,
            result=result,
            room_id=room_id or "",
            is_error=is_error,
            cancelled=cancelled,
            error_detail=error_detail,
            refused=refused,
            refused_but_ran=refused_but_ran,
            actor_id=current_tool_actor_id(),
        )
        await hook(event)


_takes_detail: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()
_warned_classes: weakref.WeakSet[type] = weakref.WeakSet()


def _accepts_detail(method: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return False
    keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return any(
        parameter.kind is inspect.Parameter.VAR_KEYWORD
        or (parameter.name == "detail" and parameter.kind in keyword)
        for parameter in parameters
    )


async def call_on_tool_refused(
    handler: ExternalToolHandler,
    tool_name: str,
    tool_input: dict[str, Any],
    reason: str,
    *,
    tool_call_id: str = "",
    room_id: str | None = None,
    detail: str | None = None,
) -> None:
    """Tell ``handler`` it refused a call, passing ``detail`` only to an override that takes it.

    An override written before ``detail`` existed keeps working: the detail is left out and
    a warning is logged once per handler class. Whatever the override raises propagates.
    """
    cls = type(handler)
    takes_detail = _takes_detail.get(cls)
    if takes_detail is None:
        takes_detail = _takes_detail[cls] = _accepts_detail(handler.on_tool_refused)
    passed: dict[str, str] = {}
    if detail is not None and takes_detail:
        passed["detail"] = detail
    elif detail is not None and cls not in _warned_classes:
        _warned_classes.add(cls)
        logger.warning(
            "%s.on_tool_refused takes no 'detail': accept **kwargs to receive it", cls.__name__
        )
    await handler.on_tool_refused(
        tool_name, tool_input, reason, tool_call_id=tool_call_id, room_id=room_id, **passed
    )


class PolicyExternalToolHandler(ExternalToolHandler):
    """An external handler that applies a :class:`ToolPolicy`, then BEFORE_TOOL_USE.

    Args:
        policy: the names the handler may run; ``None`` permits every name.
    """

    def __init__(self, policy: ToolPolicy | None = None) -> None:
        self.policy = policy if policy is not None else ToolPolicy()

    async def process_tool_call(
        self,
        tool_name: str,
        tool_input: dict[str, Any],
        *,
        tool_call_id: str = "",
        job_id: str | None = None,
        session_id: str | None = None,
        tenant_id: str | None = None,
        room_id: str | None = None,
    ) -> ToolDecision:
        """Refuse a name the policy denies; otherwise let BEFORE_TOOL_USE decide."""
        if not self.policy.permits(tool_name):
            return ToolDecision(approved=False, reason=policy_refusal(tool_name))
        decision = await self._fire_before_hook(
            tool_name, tool_input, tool_call_id=tool_call_id, room_id=room_id
        )
        if not decision:
            if decision.detail is not None:
                logger.warning(
                    "Tool %s refused: a BEFORE_TOOL_USE hook failed (%s)",
                    tool_name,
                    decision.detail,
                )
            return ToolDecision(
                approved=False,
                reason=decision.reason or texts.denied(tool_name),
                detail=decision.detail,
            )
        return ToolDecision(approved=True, modified_input=decision.arguments)

    async def on_tool_result(
        self,
        tool_name: str,
        tool_input: dict[str, Any],
        result: str | list[Any] | None,
        *,
        is_error: bool = False,
        tool_call_id: str = "",
        job_id: str | None = None,
        room_id: str | None = None,
        refused_but_ran: bool = False,
        error_detail: str | None = None,
    ) -> None:
        """Report the call to ON_TOOL_CALL."""
        await self._fire_on_tool_hook(
            tool_name,
            tool_input,
            result,
            is_error=is_error,
            error_detail=error_detail,
            tool_call_id=tool_call_id,
            room_id=room_id,
            refused_but_ran=refused_but_ran,
        )
