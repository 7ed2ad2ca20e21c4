"""Structured logs for the desk: one JSON object per line, from the standard logging module.

``roomkit desk --log-format json`` installs :class:`JsonFormatter` on the root logger, so the
desk's own events, uvicorn's and the stores' come out alike::

    {"time": "2026-01-02T03:04:05.678Z", "level": "INFO", "logger": "roomkit.desk",
     "message": "Answered 3f2a...", "event": "answer", "pending_id": "3f2a...",
     "actor": "alice", "surface": "desk", "room_id": "demo"}

The fields a call passes in ``extra=`` (``event``, ``pending_id``, ``actor``, ...) become
fields of the line; an exception comes as ``exception``, its formatted traceback. Tokens and
answers are never among them.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

__all__ = ["JsonFormatter", "log_as_json"]

# What every LogRecord carries: anything else on a record came from ``extra=``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message",
    "asctime",
    "taskName",
    # uvicorn's copy of the message with terminal colour codes in it.
    "color_message",
}


class JsonFormatter(logging.Formatter):
    """Formats a record as one line of JSON: time, level, logger, message, then its extras."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name, value in vars(record).items():
            if name not in _STANDARD and name not in line:
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            line["stack"] = self.formatStack(record.stack_info)
        # Whatever an extra holds, the line stays one line of valid JSON.
        return json.dumps(line, default=str, ensure_ascii=False)


def log_as_json(level: str | int = logging.INFO, *, stream: TextIO | None = None) -> None:
    """Send every log record at ``level`` or above to ``stream`` (stderr) as JSON lines.

    Replaces the root logger's handlers; loggers that propagate (uvicorn's, roomkit's) follow.

    Raises:
        ValueError: ``level`` is not a logging level (``debug``, ``info``, ``warning``, ...).
    """
    if isinstance(level, str):
        named = logging.getLevelNamesMapping().get(level.upper())
        if named is None:
            raise ValueError(
                f"Unknown log level {level!r}: use debug, info, warning, error or critical"
            )
        level = named
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
