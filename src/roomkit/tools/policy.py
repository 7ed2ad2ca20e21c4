"""Which tool names a handler may run: an allow list and a deny list."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["ToolPolicy", "policy_refusal"]


def _names(value: Iterable[str], field_name: str) -> frozenset[str]:
    if isinstance(value, str):
        raise TypeError(f"ToolPolicy.{field_name} takes a collection of names, got {value!r}")
    return frozenset(value)


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    """Names a handler may run. A name on ``deny`` is refused even when ``allow`` lists it.

    Example:
        >>> policy = ToolPolicy(deny=frozenset({"DeleteRepo"}))
        >>> policy.permits("AskUserQuestion"), policy.permits("DeleteRepo")
        (True, False)
    """

    allow: frozenset[str] | None = None
    """The only names permitted; ``None`` permits every name not denied."""
    deny: frozenset[str] = frozenset()
    """Names never permitted."""

    def __post_init__(self) -> None:
        # Sets and lists are accepted too; they are frozen so the policy cannot drift.
        if self.allow is not None:
            object.__setattr__(self, "allow", _names(self.allow, "allow"))
        object.__setattr__(self, "deny", _names(self.deny, "deny"))

    def permits(self, name: str) -> bool:
        """Whether a call to ``name`` may run."""
        if name in self.deny:
            return False
        return self.allow is None or name in self.allow


def policy_refusal(name: str) -> str:
    """What the model reads when the policy refuses a call to ``name``."""
    return f"Tool '{name}' is not permitted by policy."
