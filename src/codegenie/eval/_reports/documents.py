"""The typed reports every format renders: a ``check`` or ``grade`` run's, or shards' merged.

:class:`CheckDocument` and :class:`GradeDocument` hold what a renderer may
show of one run (or of the shards :mod:`.merge` merged into one), and their
``to_json`` is the document ``--format json`` prints, key for key. A single
run's report carries its :class:`Proof` (which bench, which slice of it)
only when it is printed as JSON: computing the bench's digest reads the
whole bench, and only ``merge`` needs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, final

if TYPE_CHECKING:
    from codegenie.eval.check import CheckReport
    from codegenie.eval.check.golden import GoldenReport
    from codegenie.eval.diagnostics import Diagnostic
    from codegenie.eval.grading import GradeReport, RunInfo

__all__ = ("CheckDocument", "GradeDocument", "GradeSuiteDocument", "Proof")


@final
@dataclass(frozen=True, slots=True)
class Proof:
    """What ``merge`` needs of a shard's report: the bench's digest and the slice (index, count).

    ``shard`` is ``None`` for a run that was not sharded.
    """

    bench_digest: str | None
    shard: tuple[int, int] | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the report's ``bench_digest`` and ``shard`` keys."""
        shard = None if self.shard is None else {"index": self.shard[0], "count": self.shard[1]}
        return {"bench_digest": self.bench_digest, "shard": shard}


@final
@dataclass(frozen=True, slots=True)
class CheckDocument:
    """A ``check`` report as the formats render it.

    ``summary`` is the line text and GitHub output add on stderr. ``merged``
    is how many shard reports were merged into this one (``None``: one run).
    ``ok`` is the verdict (a merged report's: every shard's, and no error,
    nor under ``strict`` a warning, in the merge).
    """

    kind: ClassVar[Literal["check"]] = "check"

    manifest: Path
    ok: bool
    checked: int
    declared: int
    diagnostics: tuple[Diagnostic, ...]
    strict: bool
    task_classes: tuple[str, ...]
    summary: str
    rubrics: GoldenReport | None = None
    proof: Proof | None = None
    merged: int | None = None

    @classmethod
    def of(cls, report: CheckReport, *, strict: bool, proof: Proof | None = None) -> CheckDocument:
        """Return the document of one ``check`` run (``strict``: ``--strict`` was in force)."""
        return cls(
            manifest=report.manifest,
            ok=report.ok(strict=strict),
            checked=report.checked,
            declared=report.checked if report.declared is None else report.declared,
            diagnostics=report.diagnostics,
            strict=strict,
            task_classes=tuple(sorted(report.task_classes)),
            summary=report.summary(),
            rubrics=report.rubrics,
            proof=proof,
        )

    @property
    def errors(self) -> int:
        """How many diagnostics are errors."""
        return sum(d.severity == "error" for d in self.diagnostics)

    @property
    def warnings(self) -> int:
        """How many diagnostics are warnings."""
        return sum(d.severity == "warning" for d in self.diagnostics)

    def to_json(self) -> dict[str, Any]:
        """Return the documented JSON shape (``check --format json``, ``merge`` of checks)."""
        document = {
            "ok": self.ok,
            "manifest": str(self.manifest),
            "checked": self.checked,
            "declared": self.declared,
            "errors": self.errors,
            "warnings": self.warnings,
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "strict": self.strict,
            "task_classes": list(self.task_classes),
        }
        if self.rubrics is not None:
            document["rubrics"] = self.rubrics.to_json()
        if self.proof is not None:
            document |= self.proof.to_json()
        if self.merged is not None:
            document["merged"] = self.merged
        return document


@final
@dataclass(frozen=True, slots=True)
class GradeDocument:
    """A ``grade`` report as the formats render it.

    ``manifest`` and ``case_files`` (case id to its ``case.toml``) say where
    the bench and each case are, for annotations; ``cases`` are the ids of
    every valid case of the task class (graded or not). ``merged`` is how
    many shard reports were merged into this one (``None``: one run, whose
    text lines were printed as the cases were graded).
    """

    kind: ClassVar[Literal["grade"]] = "grade"

    report: GradeReport
    manifest: Path | None = None
    case_files: Mapping[str, Path] = field(default_factory=dict)
    cases: tuple[str, ...] = ()
    proof: Proof | None = None
    merged: int | None = None

    @property
    def ok(self) -> bool:
        """Whether there was a case to grade and every one passed."""
        return self.report.ok

    def to_json(self) -> dict[str, Any]:
        """Return the documented JSON shape (``grade --format json``, ``merge`` of grades).

        The report's keys, then, with a proof, ``manifest``, ``case_files``,
        ``cases``, ``bench_digest`` and ``shard``, then ``merged``.
        """
        document = self.report.to_json()
        if self.proof is not None:
            document["manifest"] = None if self.manifest is None else str(self.manifest)
            document["case_files"] = {case: str(file) for case, file in self.case_files.items()}
            document["cases"] = list(self.cases)
            document |= self.proof.to_json()
        if self.merged is not None:
            document["merged"] = self.merged
        return document


@final
@dataclass(frozen=True, slots=True)
class GradeSuiteDocument:
    """The report of ``grade --all``: one ``grade`` report per task class, and the whole run's.

    ``documents`` are the task classes' reports, in slug order; ``run`` the
    identity of the whole run (its ``candidates_digest`` is that of all of
    ``CANDIDATES``; each task class's report carries that of its own
    ``CANDIDATES/<slug>``). ``ok`` when there was a task class and every
    one's report is ok.
    """

    kind: ClassVar[Literal["grades"]] = "grades"

    documents: tuple[GradeDocument, ...]
    run: RunInfo | None = None

    @property
    def ok(self) -> bool:
        """Whether there was a task class to grade and every one's report is ok."""
        return bool(self.documents) and all(document.ok for document in self.documents)

    @property
    def passed(self) -> int:
        """How many cases passed, over every task class."""
        return sum(document.report.passed for document in self.documents)

    @property
    def total(self) -> int:
        """How many cases were graded, over every task class."""
        return sum(document.report.total for document in self.documents)

    def summary(self) -> str:
        """Return the last line of the text: ``all 3 task classes: 12/14 passed``."""
        count = len(self.documents)
        return (
            f"all {count} task class{'es' if count != 1 else ''}: {self.passed}/{self.total} "
            f"passed ({'ok' if self.ok else 'not ok'})"
        )

    def to_json(self) -> dict[str, Any]:
        """Return ``grade --all``'s JSON document.

        ``run``, ``task_classes`` (each task class's ``grade`` document, in
        slug order), ``passed``, ``total`` and ``ok``.
        """
        return {
            "run": None if self.run is None else self.run.to_json(),
            "task_classes": [document.to_json() for document in self.documents],
            "passed": self.passed,
            "total": self.total,
            "ok": self.ok,
        }
