"""Email without a mail server: each message written as an ``.eml`` file, or to the console.

For local work and tests: the messages are the ones :class:`~roomkit.notify.email.Email`
sends (the same subject, texts and answer links), so a developer opens the file in a mail
program, or reads the link on the console, and answers as the person would. Needs no extra.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from roomkit.notify._email_message import Mailbox, address_problem
from roomkit.notify.surface import DeliveryError, Notice

__all__ = ["EmailFiles"]

# What a delivery id may keep in a file name; anything else becomes "_".
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def _write_whole(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that the file appears whole or not at all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    os.replace(partial, path)


class EmailFiles(Mailbox):
    """Write each notice to its recipient as an ``.eml`` file in ``directory``.

    The file is named after the delivery (``<delivery id>.eml``), so a retried delivery
    writes the same file again rather than a second one; it appears whole or not at all.

    Args:
        directory: where the files go; made (with its parents) on the first message.
            ``None`` prints each message on ``stream`` instead.
        sender: the ``From`` address.
        stream: the console, when ``directory`` is ``None`` (standard output by default).

    Raises:
        ValueError: ``sender`` is not an email address, or ``directory`` names a file.
    """

    name = "email"

    def __init__(
        self,
        directory: str | os.PathLike[str] | None,
        *,
        sender: str = "roomkit@localhost",
        stream: TextIO | None = None,
    ) -> None:
        if (problem := address_problem(sender)) is not None:
            raise ValueError(
                f"EmailFiles(sender=...) must be one email address, not {sender!r}: it {problem}"
            )
        self.directory = None if directory is None else Path(directory)
        if self.directory is not None and self.directory.is_file():
            raise ValueError(
                f"EmailFiles({os.fspath(self.directory)!r}) names a file: give a directory"
            )
        self.sender = sender
        self._stream = stream

    async def send(self, notice: Notice) -> Mapping[str, Any] | None:
        """Write one message; raises :class:`DeliveryError` saying what to fix."""
        address, message = self._addressed(notice)
        receipt: dict[str, Any] = {"to": address, "message_id": message["Message-ID"]}
        if self.directory is None:
            stream = self._stream if self._stream is not None else sys.stdout
            stream.write(f"{message.as_string()}\n")
            stream.flush()
            return receipt
        path = self.directory / f"{_UNSAFE.sub('_', notice.delivery_id)}.eml"
        try:
            await asyncio.to_thread(_write_whole, path, message.as_bytes())
        except OSError as error:
            raise DeliveryError(
                f"cannot write {os.fspath(path)!r} ({error.strerror or error}): check that "
                "EmailFiles' directory is writable",
                retry=True,
            ) from None
        receipt["file"] = os.fspath(path)
        return receipt

    async def aclose(self) -> None:
        """Nothing is held open between messages."""
