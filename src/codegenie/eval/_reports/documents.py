"""The typed reports every format renders: a check's or grade's (one run's or merged), a comparison.

:class:`CheckDocument` and :class:`GradeDocument` hold what a renderer may
show of one run (or of the shards :mod:`.merge` merged into one), and their
``to_json`` is the document ``--format json`` prints, key for key. A single
run's report carries its :class:`Proof` (which bench, which slice of it)
only when it is printed as JSON: computing the bench's digest reads the
whole bench, and only ``merge`` needs it. :class:`CompareDocument` is how
one grade report differs from another (:mod:`.compare` makes it): each
report as a :class:`Side`, each case's :class:`CaseChange`, each k's
:class:`KComparison`, and the test (:class:`McNemar` or :class:`Bootstrap`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, final

from codegenie.eval.diagnostics import DiagnosticCounts

if TYPE_CHECKING:
    from codegenie.eval._stats.compare import Interval
    from codegenie.eval.check import CheckReport
    from codegenie.eval.check.golden import GoldenReport
    from codegenie.eval.diagnostics import Diagnostic
    from codegenie.eval.grading import GradeReport, GradeStatus, RunInfo
    from codegenie.eval.models import PlannedEnvironment

__all__ = (
    "CHANGES",
    "Bootstrap",
    "CaseChange",
    "Change",
    "CheckDocument",
    "CompareDocument",
    "GradeDocument",
    "GradeSuiteDocument",
    "KComparison",
    "McNemar",
    "Outcome",
    "Proof",
    "Side",
)


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
class CheckDocument(DiagnosticCounts):
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
    # Each checked task class's own environment (one run's report; None: not known, merged).
    environments: Mapping[str, PlannedEnvironment] | None = None

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
            environments=report.environments,
        )

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
        if self.environments is not None:
            document["environments"] = {
                slug: self.environments[slug].to_json() for slug in sorted(self.environments)
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


# -- compare -----------------------------------------------------------------------------

#: What became of a case from BASE to NEW (:mod:`.compare` says how each is decided).
Change = Literal["regressed", "improved", "error", "new", "gone", "unchanged"]
#: Every change, in the order the document counts them.
CHANGES: Final[tuple[Change, ...]] = ("regressed", "improved", "error", "new", "gone", "unchanged")
#: The confidence of the bootstrap's interval (the 2.5th and 97.5th percentiles).
CONFIDENCE: Final = 0.95


@final
@dataclass(frozen=True, slots=True)
class Outcome:
    """One case in one report: its status and reason, and how many of its samples passed.

    A single-sample run's case has one sample (none when ``missing``).
    """

    status: GradeStatus
    reason: str | None
    samples_total: int
    samples_passed: int

    @property
    def share(self) -> Fraction:
        """The share of its samples that passed, exactly (0 for a case without samples)."""
        return (
            Fraction(self.samples_passed, self.samples_total) if self.samples_total else Fraction()
        )

    @property
    def pass_at_1(self) -> float:
        """pass@1: the share of its samples that passed (0.0 without samples)."""
        return float(self.share)

    def to_json(self) -> dict[str, Any]:
        """Return the case's ``base`` or ``new`` object of the compare document."""
        return {
            "status": self.status,
            "reason": self.reason,
            "samples_total": self.samples_total,
            "samples_passed": self.samples_passed,
            "pass_at_1": self.pass_at_1,
        }


@final
@dataclass(frozen=True, slots=True)
class Side:
    """One of the two reports, as compared: where it came from and each case's outcome.

    ``file`` is the name it was given by; ``run`` the report's identity
    (``None`` for a report without one); ``outcomes`` map each case id to its
    outcome, in case-id order; ``pass_at_k`` maps k to the report's pass@k.
    """

    file: str
    run: RunInfo | None
    task_class: str
    sampled: bool
    bench_digest: str | None
    outcomes: Mapping[str, Outcome]
    pass_at_k: Mapping[int, float | None]

    @property
    def total(self) -> int:
        """How many cases the report has a result for."""
        return len(self.outcomes)

    @property
    def passed(self) -> int:
        """How many of them passed."""
        return sum(outcome.status == "passed" for outcome in self.outcomes.values())

    def to_json(self) -> dict[str, Any]:
        """Return the document's ``base`` or ``new`` object."""
        return {
            "file": self.file,
            "run": None if self.run is None else self.run.to_json(),
            "task_class": self.task_class,
            "sampled": self.sampled,
            "total": self.total,
            "passed": self.passed,
            "pass_at_k": {str(k): value for k, value in self.pass_at_k.items()},
        }


@final
@dataclass(frozen=True, slots=True)
class CaseChange:
    """What became of one case: its change, and its outcome on each side (``None``: absent)."""

    case: str
    change: Change
    base: Outcome | None
    new: Outcome | None

    def to_json(self) -> dict[str, Any]:
        """Return one entry of the document's ``cases``."""
        return {
            "case": self.case,
            "change": self.change,
            "base": None if self.base is None else self.base.to_json(),
            "new": None if self.new is None else self.new.to_json(),
        }


@final
@dataclass(frozen=True, slots=True)
class KComparison:
    """pass@k of each report for one k both have, and NEW's minus BASE's (``None``: unknown)."""

    k: int
    base: float | None
    new: float | None

    @property
    def difference(self) -> float | None:
        """NEW's pass@k minus BASE's; ``None`` when either is unknown (no case)."""
        return None if self.base is None or self.new is None else self.new - self.base

    def to_json(self) -> dict[str, Any]:
        """Return the value of ``pass_at_k[k]`` in the document."""
        return {"base": self.base, "new": self.new, "difference": self.difference}


@final
@dataclass(frozen=True, slots=True)
class McNemar:
    """McNemar's exact test of two single-sample runs over the cases in both."""

    name: ClassVar[Literal["mcnemar-exact"]] = "mcnemar-exact"

    improved: int
    regressed: int
    p_value: float

    def to_json(self) -> dict[str, Any]:
        """Return the document's ``test``."""
        return {
            "name": self.name,
            "improved": self.improved,
            "regressed": self.regressed,
            "p_value": self.p_value,
        }


@final
@dataclass(frozen=True, slots=True)
class Bootstrap:
    """The paired bootstrap of the pass@1 difference over the cases in both, and its interval."""

    name: ClassVar[Literal["paired-bootstrap"]] = "paired-bootstrap"

    interval: Interval
    resamples: int
    seed: int
    confidence: float = CONFIDENCE

    def to_json(self) -> dict[str, Any]:
        """Return the document's ``test``."""
        return {
            "name": self.name,
            "difference": self.interval.difference,
            "low": self.interval.low,
            "high": self.interval.high,
            "confidence": self.confidence,
            "resamples": self.resamples,
            "seed": self.seed,
        }


@final
@dataclass(frozen=True, slots=True)
class CompareDocument:
    """How NEW differs from BASE, as every format renders it.

    ``bench_digest`` is the bench both reports carry (``None`` unless both
    carry the same one); ``pass_at_k`` the ks both reports have, in order;
    ``cases`` every case of either report, in case-id order; ``test`` is
    ``None`` when no case is in both.
    """

    kind: ClassVar[Literal["compare"]] = "compare"

    base: Side
    new: Side
    task_class: str
    bench_digest: str | None
    pass_at_k: tuple[KComparison, ...]
    cases: tuple[CaseChange, ...]
    test: McNemar | Bootstrap | None

    @property
    def changes(self) -> dict[Change, int]:
        """How many cases had each change, every change a key (zeros included)."""
        return {change: sum(c.change == change for c in self.cases) for change in CHANGES}

    @property
    def regressions(self) -> int:
        """The regressed cases, and the gone ones that passed in BASE (pass@1 above 0)."""
        return sum(
            c.change == "regressed"
            or (c.change == "gone" and c.base is not None and c.base.samples_passed > 0)
            for c in self.cases
        )

    @property
    def ok(self) -> bool:
        """Whether there is no regression (``--fail-on-regression`` exits 0 exactly then)."""
        return self.regressions == 0

    def to_json(self) -> dict[str, Any]:
        """Return ``compare --format json``'s document, key for key."""
        return {
            "base": self.base.to_json(),
            "new": self.new.to_json(),
            "task_class": self.task_class,
            "bench_digest": self.bench_digest,
            "pass_at_k": {str(c.k): c.to_json() for c in self.pass_at_k},
            "cases": [c.to_json() for c in self.cases],
            "changes": dict(self.changes),
            "test": None if self.test is None else self.test.to_json(),
            "regressions": self.regressions,
            "ok": self.ok,
        }
