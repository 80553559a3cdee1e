"""Where a renderer writes a report: the results stream, notes, and diagnostics.

The command line's ``Output`` is a :class:`Sink`; a renderer knows nothing
else of it. Results go to ``stdout``; a note (a summary line, say) goes to
``stderr`` unless the reader asked for quiet or a format that has no notes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO

if TYPE_CHECKING:
    from codegenie.eval._output import ResultStream
    from codegenie.eval.diagnostics import Diagnostic

__all__ = ("Sink",)


class Sink(Protocol):
    """What a renderer writes to (the command line's ``Output`` is one)."""

    stdout: ResultStream
    stderr: TextIO
    quiet: bool

    def result(self, document: dict[str, Any], text: str) -> None:
        """Print the JSON ``document`` (``--format json``) or the (escaped) ``text``."""

    def note(self, text: str) -> None:
        """Print one line of ``text`` on stderr, when the format and ``-q`` allow it."""

    def diagnostics(
        self, found: Sequence[Diagnostic], *, stream: ResultStream | TextIO, base: Path | None
    ) -> None:
        """Print ``found`` on ``stream``: compiler-style text, or GitHub workflow commands."""
