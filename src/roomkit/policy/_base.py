"""What the back ends share: their options, their text or file, their result's shape, and
the call's text as they take it (its ids checked, its input as JSON).

A back end takes its policy as text or as a file's path (a :class:`~pathlib.Path`, or a
string naming an existing file or ending in the back end's suffix), parses it when it is
built, and refuses one that does not parse with a :class:`PolicyError` naming the file
(``<text>`` for text given in code) and the line. Its ``version`` is a digest of the text,
so each ``policy_decided`` entry says which text decided.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Awaitable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, Literal, TypedDict, Unpack

from roomkit._extras import requires_extra
from roomkit._storable import unencodable_text
from roomkit.auth.names import actor_name_problem
from roomkit.core.exceptions import InvalidTextError
from roomkit.models.shown import shown
from roomkit.policy.decisions import Abstain, Allow, Ask, Deny, PolicyCall, PolicyDecision

__all__ = [
    "OnError",
    "PolicyBase",
    "PolicyError",
    "PolicyFailed",
    "PolicyOptions",
    "check_ids",
    "load_json",
    "load_text",
    "optional",
    "read_result",
    "utf8_json",
]

OnError = Literal["ask", "deny"]

_ASK = frozenset({"ask", "requires-approval", "requires_approval"})
_ABSTAIN = frozenset({"abstain", "not-applicable", "not_applicable"})


class PolicyError(ValueError):
    """A policy that cannot be used: it does not parse (the message names the file and the
    line), its file is missing, or an option is wrong."""


class PolicyFailed(RuntimeError):
    """A back end could not decide a call: ``on_error`` decides it.

    Args:
        message: what failed.
        fallback: the ask, or the asks, the policy's own text might have made on such a call:
            under ``on_error="ask"`` the call is held under one ask at least as strict as
            each of them (:func:`~roomkit.policy._strictest.strictest`), instead of the
            tool's rule or the default approver.
    """

    def __init__(self, message: str, *, fallback: Ask | Iterable[Ask] | None = None) -> None:
        super().__init__(message)
        asks = () if fallback is None else (fallback,) if isinstance(fallback, Ask) else fallback
        self.fallback: tuple[Ask, ...] = tuple(asks)
        """The asks the policy might have made on the call (none: it names no terms)."""


def optional(module: str, extra: str, what: str) -> ModuleType:
    """Import the optional ``module``; an error naming ``extra`` when it is missing.

    Raises:
        ImportError: ``module`` is not installed (the message says how to install it).
    """
    with requires_extra(what, extra):
        return importlib.import_module(module)


class PolicyOptions(TypedDict, total=False):
    """The options every back end takes, by keyword."""

    name: str
    """How the history and the counts name the policy (the engine's name by default)."""
    shadow: bool
    """``True`` records and counts each decision and keeps today's behaviour."""
    on_error: OnError
    """What a failure of the back end (an error, a timeout) comes to: ``"ask"`` a person
    (the default) or ``"deny"`` the call."""


class PolicyBase:
    """The options every back end takes (:class:`PolicyOptions`), and the package it runs on.

    Raises:
        PolicyError: ``on_error`` is neither ``"ask"`` nor ``"deny"``, ``shadow`` is neither
            ``True`` nor ``False``, or ``name`` is empty.
        TypeError: an option that is none of these (a misspelt one is not ignored).
        ImportError: the back end's package is not installed (the message names the extra).
    """

    engine: ClassVar[tuple[str, str, str]]
    """The back end's default name, the optional package it runs on, and the extra that
    installs that package."""

    def __init__(self, **options: Unpack[PolicyOptions]) -> None:
        unknown = sorted(set(options) - set(PolicyOptions.__annotations__))
        if unknown:
            raise TypeError(
                f"{type(self).__name__}() got an unexpected keyword argument {unknown[0]!r}: "
                f"the options every policy takes are {', '.join(PolicyOptions.__annotations__)}"
            )
        default, package, extra = self.engine
        name = options.get("name", default)
        on_error = options.get("on_error", "ask")
        if on_error not in ("ask", "deny"):
            raise PolicyError(f"on_error is 'ask' or 'deny', got {on_error!r}")
        if not isinstance(name, str) or not name:
            raise PolicyError(f"a policy's name is a non-empty string, got {name!r}")
        shadow = options.get("shadow", False)
        if not isinstance(shadow, bool):
            # bool() would read any text as true, "false" too: the policy in shadow.
            raise PolicyError(f"shadow is True or False, got {shown(shadow)}")
        self.name = name
        self.shadow = shadow
        self.on_error: OnError = on_error
        self.version: str | None = None
        """A digest of the policy's text (``None`` when the text is elsewhere)."""
        self.module: Any = optional(package, extra, type(self).__name__)
        """The back end's package, imported (``cedarpy``, ``regopy``, ``httpx``)."""

    def decide(self, call: PolicyCall) -> PolicyDecision | Awaitable[PolicyDecision]:
        """The decision on ``call`` (each back end's own).

        Raises:
            NotImplementedError: always, here.
        """
        raise NotImplementedError

    def _versioned(self, *texts: str) -> None:
        digest = hashlib.sha256("\0".join(texts).encode("utf-8")).hexdigest()
        self.version = f"sha256:{digest[:16]}"

    def __repr__(self) -> str:
        mode = ", shadow" if self.shadow else ""
        return f"{type(self).__name__}({self.name!r}{mode})"


def check_ids(call: PolicyCall, what: str, unheld: str) -> None:
    """Raise unless the call's tool and actor are text UTF-8 can encode: one with a lone
    surrogate made ``?``, as the call's other text is, could name another actor, or tool.

    Args:
        what: the call, as the message names it (``"a Rego call"``).
        unheld: what else cannot hold such text, as the message says it.

    Raises:
        InvalidTextError: the tool or the actor holds a lone surrogate; the message says which.
    """
    for field, value in (("tool", call.tool), ("actor", call.actor)):
        problem = unencodable_text(value) if isinstance(value, str) else None
        if problem is not None:
            raise InvalidTextError(
                f"{what}'s {field} must be valid Unicode text, but holds {problem}, "
                f"which UTF-8 cannot encode and {unheld}: send it as UTF-8 text"
            )


def utf8_json(value: Any) -> str:
    """``value`` (a call's input, Rego's data) as the JSON text Rego and OPA read: its text as
    itself, not as ``\\u`` escapes (which rego-cpp reads as their six characters), a lone
    surrogate made ``?`` (UTF-8 has none), what JSON cannot write as its ``str``.

    Raises:
        ValueError: it holds NaN or an infinity, which JSON cannot carry.
    """
    text = json.dumps(value, default=str, allow_nan=False, ensure_ascii=False)
    if text.isascii():
        return text
    return text.encode("utf-8", "replace").decode("utf-8")


def load_text(source: str | Path, suffix: str) -> tuple[str, str]:
    """The policy text of ``source`` and where it came from (a file's path, or ``<text>``).

    Raises:
        PolicyError: ``source`` names a file that cannot be read.
    """
    if isinstance(source, Path) or (
        isinstance(source, str)
        and "\n" not in source
        and (source.endswith(suffix) or _is_file(source))
    ):
        path = Path(source)
        try:
            return path.read_text(encoding="utf-8"), str(path)
        except (OSError, UnicodeDecodeError) as error:
            raise PolicyError(f"cannot read the policy file {path}: {error}") from None
    if not isinstance(source, str):
        raise PolicyError(f"a policy is its text or a file's path, got {type(source).__name__}")
    return source, "<text>"


def _is_file(source: str) -> bool:
    """Whether ``source`` names an existing file: a line too long to be a file's name (one
    line of policy text, say) names none."""
    try:
        return Path(source).is_file()
    except OSError:
        return False


def load_json(source: Any, what: str) -> Any:
    """``source`` as JSON data: a path (``Path``, or a string naming a ``.json`` file) is
    read, anything else is the data itself.

    Raises:
        PolicyError: the file cannot be read or is not JSON (the message names the line).
    """
    if isinstance(source, Path) or (isinstance(source, str) and source.endswith(".json")):
        path = Path(source)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except OSError as error:
            raise PolicyError(f"cannot read the {what} file {path}: {error}") from None
        except ValueError as error:
            line = getattr(error, "lineno", None)
            where = f"{path}:{line}" if line is not None else str(path)
            raise PolicyError(f"{where}: the {what} file is not JSON: {error}") from None
    return source


def read_result(value: Any) -> PolicyDecision:
    """The decision a Rego or OPA result stands for; ``Abstain`` for any other shape.

    Taken: ``{"decision": "allow" | "deny" | "ask" | "requires-approval" | "abstain" |
    "not-applicable", "reason": ...}`` (an ask may name ``approvers``, ``quorum`` and
    ``timeout``), the same decision as a bare string, or ``{"allow": true | false}``.

    Raises:
        PolicyFailed: an ask names approvers, a quorum or a timeout ``Ask`` refuses (or
            approvers that are neither a list nor one name); its fallback asks the
            approvers it names, when they are actor ids, to its quorum (all of them when
            the quorum is none they can meet).
    """
    if isinstance(value, str):
        value = {"decision": value}
    if not isinstance(value, dict):
        return Abstain(f"unknown result {type(value).__name__}")
    reason = value.get("reason")
    reason = reason if isinstance(reason, str) else ""
    decision = value.get("decision")
    if decision is not None and not isinstance(decision, str):
        # A list or an object would not even compare with the names below.
        return Abstain(f"unknown result: a decision of {type(decision).__name__}, not a name")
    if decision is None and isinstance(value.get("allow"), bool):
        return Allow(reason) if value["allow"] else Deny(reason)
    if decision == "allow":
        return Allow(reason)
    if decision == "deny":
        return Deny(reason)
    if decision in _ASK:
        approvers = value.get("approvers")
        if approvers is not None and not isinstance(approvers, str | list):
            raise PolicyFailed(
                "the policy's ask cannot be met: its approvers are a list of actor ids (or "
                f"one), got {type(approvers).__name__}"
            )
        try:
            return Ask(
                approvers=approvers,
                quorum=value.get("quorum"),
                timeout=value.get("timeout"),
                reason=reason,
            )
        except (TypeError, ValueError) as error:
            # The approvers it names are asked, not the default one (the call's own actor).
            raise PolicyFailed(
                f"the policy's ask cannot be met: {error}", fallback=_named(value)
            ) from None
    if decision in _ABSTAIN:
        return Abstain(reason)
    return Abstain(f"unknown result {str(decision)[:40]!r}" if decision else "unknown result")


def _named(value: dict[str, Any]) -> Ask | None:
    """An ask of the approvers a result names that are actor names (one with a stray space
    or a control character is left out), to the quorum it names: all of them when that is
    none they can meet (text, zero, more than they are), never fewer approvals than it
    meant; ``None`` when it names none."""
    approvers = value.get("approvers")
    listed = [approvers] if isinstance(approvers, str) else approvers
    if not isinstance(listed, list):
        return None
    names = list(dict.fromkeys(name for name in listed if actor_name_problem(name) is None))
    if not names:
        return None
    quorum = value.get("quorum")
    if quorum is not None and not (
        type(quorum) is int and 1 <= quorum <= len(names)  # a bool is no quorum
    ):
        quorum = len(names)
    return Ask(approvers=names, quorum=quorum)
