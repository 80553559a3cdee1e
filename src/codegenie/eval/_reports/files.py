"""Write a report file whole or not at all."""

from __future__ import annotations

from pathlib import Path

from codegenie.eval._output import readable
from codegenie.eval._paths import replace_file

__all__ = ("append_text", "write_atomically")


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file in its directory.

    A reader never sees half a report: the file is renamed into place once
    complete. A path the locale could not decode is written as the text it
    stands for (:func:`readable`). Raises ``OSError`` when the directory
    cannot be written.
    """
    replace_file(path, readable(text).encode("utf-8"))


def append_text(path: Path, text: str) -> None:
    """Append ``text`` (UTF-8) to ``path``, as GitHub expects of ``$GITHUB_STEP_SUMMARY``."""
    with path.open("a", encoding="utf-8") as stream:
        stream.write(readable(text))
