"""A progress line on a terminal's stderr: ``[done/total] grading SLUG…``, redrawn in place."""

from __future__ import annotations

from typing import TextIO, final

from codegenie.eval._output import escape_control

__all__ = ("Progress", "stderr_is_a_terminal")


@final
class Progress:
    """``[done/total] VERB LABEL…`` on a terminal's stderr, redrawn in place, then cleared."""

    def __init__(
        self, stream: TextIO, slug: str, total: int, *, shown: bool, verb: str = "grading"
    ) -> None:
        self.stream = stream
        self.verb = verb
        self.label = escape_control(slug)
        self.total = total
        self.done = 0
        self.shown = shown
        self.width = 0

    def draw(self) -> None:
        """Draw the line (again), with the current count."""
        if not self.shown:
            return
        text = f"[{self.done}/{self.total}] {self.verb} {self.label}…"
        self._write("\r" + text.ljust(self.width) + "\r" + text)
        self.width = len(text)

    def clear(self) -> None:
        """Erase the line."""
        if self.shown and self.width:
            self._write("\r" + " " * self.width + "\r")
            self.width = 0

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # stderr went away: no more progress
            self.shown = False


def stderr_is_a_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (OSError, ValueError, AttributeError):
        return False
