"""What a surface may put in an HTTP header: checked when the surface is made, not sent.

A header's value written as it is into a request ends at its first line break: one that
holds ``\\r\\n`` adds headers of its own (or ends the head, so the rest reads as the body),
and a letter outside ASCII cannot be written at all, so every delivery would fail with a
traceback. Values read from a file or an environment variable usually end in a newline;
that one is dropped (a header's surrounding whitespace means nothing to HTTP), and what is
still no header value is refused, saying which and why.
"""

from __future__ import annotations

import string

__all__ = ["header_name_problem", "header_value_problem", "token_of"]

# RFC 9110's token characters: what a header's name is made of.
_TCHAR = frozenset("!#$%&'*+-.^_`|~" + string.ascii_letters + string.digits)


def header_name_problem(name: object) -> str | None:
    """Why ``name`` cannot be a header's name; ``None`` when it can."""
    if not isinstance(name, str):
        return f"is not text ({type(name).__name__})"
    if not name:
        return "is empty"
    if "\r" in name or "\n" in name:
        return "holds a line break"
    if not all(char in _TCHAR for char in name):
        return (
            "holds a character a header's name cannot (a space, a colon, a letter outside "
            "ASCII, ...): names are ASCII letters, digits and !#$%&'*+-.^_`|~"
        )
    return None


def header_value_problem(value: object) -> str | None:
    """Why ``value`` (its surrounding whitespace already dropped) cannot be a header's
    value; ``None`` when it can."""
    if not isinstance(value, str):
        return f"is not text ({type(value).__name__})"
    if "\r" in value or "\n" in value:
        return "holds a line break, which would end the header and start another"
    if not value.isascii():
        return "holds a letter outside ASCII, which HTTP headers cannot carry"
    if any((ord(char) < 32 and char != "\t") or ord(char) == 127 for char in value):
        return "holds a control character"
    return None


def token_of(value: object, what: str) -> str:
    """The token or secret ``value`` to send, without the line break a file it was read
    from ends with.

    Raises:
        ValueError: it is empty, or holds a space, a line break, a control character or a
            letter outside ASCII; the message names ``what`` it is.
    """
    text = value.strip() if isinstance(value, str) else ""
    if not text:
        got = "empty" if isinstance(value, str) else f"a {type(value).__name__}"
        raise ValueError(f"{what} must be non-empty text, not {got}")
    if not all("!" <= char <= "~" for char in text):
        raise ValueError(
            f"{what} holds a space, a line break, a control character or a letter outside "
            "ASCII, which no token has (and no HTTP header carries): check the variable or "
            "file it was read from"
        )
    return text
