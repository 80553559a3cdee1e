"""One side of one case that ``check --rubrics`` runs its rubric on: :class:`CaseRun`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from codegenie.eval._command import PROTOCOL_COMMAND, RubricCommand
from codegenie.eval.cases import Case

__all__ = ("CaseRun", "Side")

#: What a run is given as its candidate: the case's known-good solution, its unsolved
#: input, or an exploit of the cheat run.
Side = Literal["expected", "input", "exploit"]


@dataclass(frozen=True, slots=True)
class CaseRun:
    """One side of one case to check: ``case`` of ``slug`` on its ``side`` (run N times).

    ``warm``: the task class's (``False``: never a warm worker's fork);
    ``reads_expected``: the task class's (its runs' ``CASE_DIR`` holds
    ``expected/``). An ``"exploit"`` side is the cheat run's
    (:mod:`codegenie.eval.check.cheat`): ``exploit`` names it, ``family``
    is its family and ``candidate`` its tree; the other two sides run on
    the case's own ``expected/`` and ``input/``.
    """

    slug: str
    rubric: Path
    case: Case
    side: Side
    #: The rubric's command (by default the rubric protocol's).
    command: RubricCommand = PROTOCOL_COMMAND
    warm: bool = True
    reads_expected: bool = False
    exploit: str | None = None
    family: str | None = None
    candidate: Path | None = None

    @property
    def tree(self) -> Path:
        """The candidate the side runs on: the exploit's tree, or the case's own side."""
        return self.candidate if self.candidate is not None else self.case.directory / self.side

    @property
    def case_id(self) -> str:
        """The case's id."""
        return self.case.id

    @property
    def directory(self) -> Path:
        """The case's directory."""
        return self.case.directory

    @property
    def timeout(self) -> float:
        """The case's timeout, in seconds."""
        return self.case.timeout
