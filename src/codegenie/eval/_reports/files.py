"""Report files: write one whole, or append to one (:mod:`.reader` reads them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from codegenie.eval._atomic import write_atomically
from codegenie.eval._output import readable

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ("append_text", "write_report")


def write_report(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through the package's one atomic write.

    A reader never sees half a report: the file is written beside its
    target, synced and renamed into place (:mod:`codegenie.eval._atomic`). A
    path the locale could not decode is written as the text it stands for
    (:func:`readable`). Raises ``OSError`` when the directory cannot be
    written.
    """
    write_atomically(path, readable(text).encode("utf-8"))


def append_text(path: Path, text: str) -> None:
    """Append ``text`` (UTF-8) to ``path``, as GitHub expects of ``$GITHUB_STEP_SUMMARY``."""
    with path.open("a", encoding="utf-8") as stream:
        stream.write(readable(text))
