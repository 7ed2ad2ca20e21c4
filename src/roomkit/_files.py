"""Files a process makes once, that every process starting at the same time must agree on
(the desk's key): each writes its own beside the file and links it into place."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["create_once"]


def create_once(path: Path, content: bytes) -> bool:
    """Put ``content`` at ``path`` whole (mode 0600), unless a file is there already.

    Processes starting at once each write a file of their own and link it into place:
    whichever links first wins, and none ever sees the file before its content is in.
    Returns whether this call made the file.

    Raises:
        OSError: the folder cannot be written.
    """
    fd, name = tempfile.mkstemp(prefix=f"{path.name}.", suffix=".tmp", dir=path.parent)
    temporary = Path(name)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(content)
            file.flush()
            os.fsync(file.fileno())
        os.link(temporary, path)
    except FileExistsError:
        return False
    finally:
        temporary.unlink()
    return True
