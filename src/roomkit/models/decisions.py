"""A person's decision on an approval, typed: :class:`Approve`, :class:`Edit`, :class:`Reject`
or :class:`Respond`, each a :class:`Decision`.

A decision is its own wire text: each value *is* the canonical JSON the approval records
(a ``str`` whose text is ``{"decision": ...}`` in compact form, UTF-8 as is), and carries its
fields typed beside it. So a decision goes wherever a JSON answer goes (``aresolve``, a
store, an HTTP body, ``json.loads``) unchanged, compares equal to the text a request records
for it, and reads back to an equal value. The ``decision`` member of the JSON is the
discriminator; :attr:`Decision.kind` names it on the type::

    match decision:
        case Edit(arguments=arguments): ...
        case Reject(reason=reason): ...

``roomkit.tools.approvals.read_decision`` reads one from any JSON text, and says what is
wrong with a text that is not one.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NoReturn, Self

from roomkit._storable import unencodable_text
from roomkit.models.json_limits import arguments_problem, circular_at

if TYPE_CHECKING:
    from roomkit.models.pending_input import PendingInput

__all__ = [
    "ALL_DECISIONS",
    "DECISIONS_KEY",
    "Approve",
    "Decision",
    "DecisionKind",
    "Edit",
    "Reject",
    "Respond",
    "allowed_decisions",
]

DecisionKind = Literal["approve", "edit", "reject", "respond"]
"""The kinds of decision a person gives on a held call."""
ALL_DECISIONS: tuple[DecisionKind, ...] = ("approve", "edit", "reject", "respond")
"""Every kind of decision, in the order of the builders."""
DECISIONS_KEY = "x-roomkit-decisions"
"""The key of an approval's ``answer_schema`` listing the decisions it takes, when not all.

It travels inside the schema so that every store keeps it without a column of its own; a
JSON Schema validator ignores a keyword it does not know."""


def allowed_decisions(request: PendingInput) -> tuple[DecisionKind, ...]:
    """The decisions the approval ``request`` takes, in the order of the builders: every
    surface offers these and no other (a framework's approval may take fewer)."""
    schema = request.answer_schema
    listed = schema.get(DECISIONS_KEY) if isinstance(schema, dict) else None
    if not isinstance(listed, list):
        return ALL_DECISIONS
    return tuple(kind for kind in ALL_DECISIONS if kind in listed)


def _wire(value: dict[str, Any]) -> str:
    """The canonical JSON of a decision: compact, its members in the order written."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


_APPROVE_TEXT = _wire({"decision": "approve"})
"""The text of every :class:`Approve`: it takes nothing, so it is made once."""


class Decision(str):
    """A decision on an approval: one of :class:`Approve`, :class:`Edit`, :class:`Reject`,
    :class:`Respond`, whose text is the JSON the approval records.

    ``Decision(kind, arguments, text)`` builds the one of that ``kind`` (``text`` is a
    rejection's reason or a response's answer).

    Raises:
        ValueError: ``kind`` is not one of the four.
    """

    kind: ClassVar[DecisionKind]
    """``approve``, ``edit``, ``reject`` or ``respond``: the JSON's ``decision`` member."""
    __match_args__: ClassVar[tuple[str, ...]] = ()

    def __new__(
        cls, kind: str, arguments: dict[str, Any] | None = None, text: str = ""
    ) -> Decision:
        if kind == "approve":
            return Approve()
        if kind == "edit":
            return Edit(arguments if arguments is not None else {})
        if kind == "reject":
            return Reject(text)
        if kind == "respond":
            return Respond(text)
        raise ValueError(f"a decision is approve, edit, reject or respond, got {kind!r}")

    @property
    def arguments(self) -> dict[str, Any] | None:
        """The replacement arguments of an :class:`Edit`; ``None`` for the others."""
        return None

    @property
    def text(self) -> str:
        """The reason of a :class:`Reject`, the answer of a :class:`Respond`, else ``""``."""
        return ""

    @property
    def canonical(self) -> str:
        """The decision's JSON text, as a plain ``str``."""
        return str.__str__(self)

    def to_dict(self) -> dict[str, Any]:
        """The decision as the JSON object it is (a fresh copy)."""
        value: dict[str, Any] = json.loads(self)
        return value

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"a {type(self).__name__} decision cannot be changed")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"a {type(self).__name__} decision cannot be changed")

    def __reduce__(self) -> tuple[Any, ...]:
        return (Decision, (self.kind, self.arguments, self.text))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Approve(Decision):
    """Let the held call run as shown."""

    kind: ClassVar[Literal["approve"]] = "approve"

    def __new__(cls) -> Approve:
        return str.__new__(cls, _APPROVE_TEXT)


class Edit(Decision):
    """Run the held call with ``arguments`` instead: all of them, which must match the
    tool's schema.

    Raises:
        TypeError: ``arguments`` is not a dict, or not JSON-serialisable (a value inside
            itself among them).
        ValueError: ``arguments`` are more than a request keeps, as ``create()`` refuses
            them: longer as JSON than 56,000 characters (a value held in several places
            counts once for each), nested more than 24 levels deep, or holding an integer
            longer than 100 characters.
        ValueError: ``arguments`` hold text UTF-8 cannot encode (a lone surrogate);
            the message says where.
    """

    kind: ClassVar[Literal["edit"]] = "edit"
    __match_args__ = ("arguments",)
    _arguments: dict[str, Any]

    def __new__(cls, arguments: dict[str, Any]) -> Edit:
        if not isinstance(arguments, dict):
            raise TypeError(
                "edit() takes the full replacement arguments as a dict, got "
                f"{type(arguments).__name__}"
            )
        loop = circular_at(arguments)
        if loop is not None:
            raise TypeError(
                f"an edit's arguments must be JSON-serialisable, but hold themselves at {loop}"
            )
        # Before anything writes them: a value shared by many paths would be written out
        # once per path, for as long as that takes.
        problem = arguments_problem(arguments)
        if problem is not None:
            raise ValueError(f"an edit's arguments must fit in a request, but {problem}")
        # Refused here, by name: the approval would refuse the decision's text, saying where
        # in it, not where in the arguments.
        unreadable = unencodable_text(arguments)
        if unreadable is not None:
            raise ValueError(
                f"an edit's arguments must be valid Unicode text, but hold {unreadable}, which "
                "UTF-8 cannot encode: pass them as UTF-8 text"
            )
        try:
            text = _wire({"decision": "edit", "arguments": arguments})
        except (TypeError, ValueError) as error:
            raise TypeError(f"an edit's arguments must be JSON-serialisable: {error}") from None
        made = str.__new__(cls, text)
        # The arguments are kept as the text holds them, so no later change to the
        # caller's dict changes the decision.
        object.__setattr__(made, "_arguments", json.loads(text)["arguments"])
        return made

    @property
    def arguments(self) -> dict[str, Any]:
        """The replacement arguments (a copy each time: the decision cannot change)."""
        copied: dict[str, Any] = json.loads(json.dumps(self._arguments))
        return copied

    def __repr__(self) -> str:
        return f"Edit(arguments={self._arguments!r})"


class _Worded(Decision):
    """A decision that carries one text, kept in the field its ``__match_args__`` names."""

    _member: ClassVar[str]
    """The JSON member that holds the text."""
    _what: ClassVar[str]
    """What the text is, as an error names it: ``"the reason"``."""

    @classmethod
    def _worded(cls, value: str) -> Self:
        field = cls.__match_args__[0]
        if not isinstance(value, str):
            raise TypeError(f"{cls.kind}() takes {cls._what} as a str, got {type(value).__name__}")
        unreadable = None if value.isascii() else unencodable_text(value)
        if unreadable is not None:
            # Refused here, by name: the approval would refuse the decision's text, counting
            # the characters of its JSON.
            raise ValueError(
                f"{field} must be valid Unicode text, but holds {unreadable}, which UTF-8 "
                f"cannot encode: pass {cls._what} as UTF-8 text"
            )
        made = str.__new__(cls, _wire({"decision": cls.kind, cls._member: value}))
        object.__setattr__(made, field, str(value))
        return made

    @property
    def text(self) -> str:
        text: str = getattr(self, self.__match_args__[0])
        return text

    def __repr__(self) -> str:
        field = self.__match_args__[0]
        return f"{type(self).__name__}({field}={getattr(self, field)!r})"


class Reject(_Worded):
    """Refuse the held call; the model reads ``reason``.

    Raises:
        TypeError: ``reason`` is not a str.
        ValueError: ``reason`` holds text UTF-8 cannot encode (a lone surrogate).
    """

    kind: ClassVar[Literal["reject"]] = "reject"
    __match_args__ = ("reason",)
    _member = "reason"
    _what = "the reason"
    reason: str
    """Why, for the model to read."""

    def __new__(cls, reason: str = "") -> Reject:
        return cls._worded(reason)


class Respond(_Worded):
    """Answer in the tool's place: the model reads ``message`` instead of the tool's result
    (the JSON member is ``result``).

    Raises:
        TypeError: ``message`` is not a str.
        ValueError: ``message`` holds text UTF-8 cannot encode (a lone surrogate).
    """

    kind: ClassVar[Literal["respond"]] = "respond"
    __match_args__ = ("message",)
    _member = "result"
    _what = "the answer"
    message: str
    """The answer the model reads."""

    def __new__(cls, message: str) -> Respond:
        return cls._worded(message)
