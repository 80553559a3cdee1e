"""Write a report file whole or not at all."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ("append_text", "write_atomically")


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file in its directory.

    A reader never sees half a report: the file is renamed into place once
    complete. Raises ``OSError`` when the directory cannot be written.
    """
    directory = path.parent if str(path.parent) else Path()
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def append_text(path: Path, text: str) -> None:
    """Append ``text`` (UTF-8) to ``path``, as GitHub expects of ``$GITHUB_STEP_SUMMARY``."""
    with path.open("a", encoding="utf-8") as stream:
        stream.write(text)
