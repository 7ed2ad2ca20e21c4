"""What ``policy=`` takes, wherever a policy is given: a tool's rule (``Approval``) or the
handler of every call (``HumanInputToolHandler``).

A :class:`~roomkit.policy.Policy` is anything with ``decide(call)``; its optional ``shadow``
is read as it is, never made a flag with ``bool()``: ``shadow = "false"`` would put the
policy in shadow (recorded, not acted on), so anything but ``True`` or ``False`` is refused.
"""

from __future__ import annotations

from roomkit.models.shown import shown

__all__ = ["check_policy"]


def check_policy(policy: object, where: str) -> None:
    """Raise unless ``policy`` is a policy that ``where`` (``"Approval policy="``) takes.

    Raises:
        TypeError: it has no ``decide(call)``, or a ``shadow`` that is neither ``True`` nor
            ``False``.
    """
    if not callable(getattr(policy, "decide", None)):
        raise TypeError(f"{where} takes a Policy (with decide(call)), got {shown(policy)}")
    shadow = getattr(policy, "shadow", False)
    if not isinstance(shadow, bool):
        raise TypeError(
            f"{where} takes a Policy whose shadow is True or False, got shadow={shown(shadow)}: "
            "set it to a bool (any text, 'false' too, would read as true)"
        )
