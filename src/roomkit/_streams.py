"""A command's stdout and stderr, made to write any text their encoding cannot.

The ``roomkit`` command and ``python -m roomkit.desk.demo`` call it as they start; it lives
beside them rather than in either, so that the demo loads no part of the command line. An
ASCII terminal (``PYTHONIOENCODING=ascii``) or a C locale has no letters for a path or a
question in another language; Python's streams then stop the command with a
``UnicodeEncodeError`` halfway through its output. :func:`printable_streams`, called once as
the command starts, makes each write such a letter as a backslash escape (``caf\\xe9``). A
stream that already writes back the bytes of an argument it could not decode (a C locale's
``surrogateescape``) keeps doing so, so that a path typed in such a terminal prints as typed.
"""

from __future__ import annotations

import codecs
import sys

__all__ = ["printable_streams"]

_ESCAPES = "roomkit.surrogateescape_else_backslash"
"""The error handler of a stream that wrote with ``surrogateescape``."""

_NEVER_FAIL = {"backslashreplace", "namereplace", "xmlcharrefreplace", "replace", "ignore"}
"""The error handlers with which a stream writes any text (``surrogateescape`` is not one:
it writes back undecodable bytes, but fails on a letter the encoding lacks)."""


def _escape(error: UnicodeError) -> tuple[bytes, int]:
    """``surrogateescape`` for the bytes an argument held, a backslash escape for the rest."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    out = bytearray()
    for char in error.object[error.start : error.end]:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(code - 0xDC00)
        else:
            out += char.encode("ascii", "backslashreplace")
    return bytes(out), error.end


def printable_streams() -> None:
    """Let stdout and stderr write what their encoding cannot, instead of failing."""
    try:
        codecs.lookup_error(_ESCAPES)
    except LookupError:
        codecs.register_error(_ESCAPES, _escape)
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        errors = getattr(stream, "errors", None)
        if reconfigure is None or errors in _NEVER_FAIL or errors == _ESCAPES:
            continue
        reconfigure(errors=_ESCAPES if errors == "surrogateescape" else "backslashreplace")
