"""Typed check, grade and compare reports, for the ``html`` format's tests.

They are built from the writer's own models (:class:`GradeReport`,
:class:`GradeResult`, :class:`SampleResult`, :class:`Diagnostic`, the
documents of :mod:`codegenie.eval._reports.documents`), so every figure a
page shows is the one a real run's report carries; the page reads nothing
else. What a user hands ``merge`` or ``compare`` reaches these models only
through the one reader of reports, which refuses what they could not hold.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from pathlib import Path

from codegenie.eval._reports.documents import (
    CaseChange,
    Change,
    CheckDocument,
    CompareDocument,
    GradeDocument,
    KComparison,
    McNemar,
    Outcome,
    Side,
)
from codegenie.eval.check._sides import Side as GoldenSide
from codegenie.eval.check.golden import Envelope, GoldenReport, Spread
from codegenie.eval.diagnostics import Diagnostic, Severity
from codegenie.eval.grading import (
    GradeReport,
    GradeResult,
    GradeStatus,
    RunInfo,
    SampleResult,
    SampleStatus,
)

__all__ = (
    "HOSTILE",
    "check_document",
    "compare_document",
    "diagnostic",
    "grade_document",
    "grade_result",
    "sample",
    "with_results",
)

#: Strings an attacker would put in a reason, a case id, a tag or a run name.
HOSTILE = (
    "</script><script>window.__pwned=1</script>",
    '<img src=x onerror="window.__pwned=1">',
    "<!-- <script>window.__pwned=1</script>",
    "\"'><svg onload=window.__pwned=1>",
    "&lt;b&gt; &amp; \u2028\u2029 </style><style>body{display:none}</style>",
    "nul\x00 bell\x07 esc\x1b[31m \u202eevil",
    "javascript:window.__pwned=1",
)

_SAMPLE_STATUSES: tuple[SampleStatus, ...] = ("passed",) * 6 + ("failed",) * 3 + ("error",)
_STATUSES: tuple[GradeStatus, ...] = (*_SAMPLE_STATUSES, "missing")
_TAGS = ("python", "go", "java", "flaky", "slow")
_GOLDEN_SIDES: tuple[GoldenSide, ...] = ("expected", "input")


def sample(rng: random.Random, index: int, status: SampleStatus | None = None) -> SampleResult:
    """One sample of a sampled case."""
    chosen: SampleStatus = rng.choice(_SAMPLE_STATUSES) if status is None else status
    error = chosen == "error"
    tail = 'Traceback (most recent call last):\n  File "rubric.py", line 3\nRuntimeError: boom\n'
    return SampleResult(
        sample=f"s{index:02d}",
        status=chosen,
        score=1.0 if chosen == "passed" else round(rng.random() / 2, 4),
        reason="all expected files match"
        if chosen == "passed"
        else "test_cve failed: assert 403 == 200 (2 of 12 tests failed)",
        duration_s=rng.uniform(0.2, 9),
        wall_s=rng.uniform(0.2, 9),
        cpu_s=rng.uniform(0.1, 5),
        peak_memory_mib=rng.uniform(20, 400),
        stderr_tail=tail if error else None,
        traceback=tail if error else None,
        verdict={"passed": chosen == "passed", "score": 1.0, "reason": "r", "tests_run": 12},
        candidate_digest=f"sha256:{rng.getrandbits(256):064x}",
    )


def grade_result(
    case: str,
    status: GradeStatus,
    *,
    reason: str | None = None,
    tags: Sequence[str] = (),
    samples: Sequence[SampleResult] | None = None,
    score: float | None = None,
    duration_s: float | None = 1.0,
) -> GradeResult:
    """One result; a sampled one's status and measures from its ``samples`` (as grading sums them)."""
    if samples is not None:
        result = GradeResult.of_samples(case, samples, tags=tuple(tags))
        assert result.status == status, (result.status, status)
        return result
    return GradeResult(
        case=case,
        status=status,
        score=score,
        reason=reason,
        duration_s=duration_s,
        wall_s=duration_s,
        cpu_s=duration_s,
        peak_memory_mib=30.0,
        tags=tuple(tags),
    )


def grade_document(
    cases: int = 164,
    samples: int = 10,
    *,
    seed: int = 1,
    run_name: str = "nightly 42",
    task_class: str = "vuln-remediation",
) -> GradeDocument:
    """A grade report of ``cases`` cases of ``samples`` samples each (0: not sampled)."""
    rng = random.Random(seed)
    results = []
    for index in range(cases):
        case = f"cve-2024-{index:05d}"
        tags = rng.sample(_TAGS, 2)
        if samples:
            runs = [sample(rng, j) for j in range(samples)]
            passed = sum(s.status == "passed" for s in runs)
            status: GradeStatus = (
                "error"
                if any(s.status == "error" for s in runs)
                else "passed"
                if passed == samples
                else "failed"
            )
            results.append(grade_result(case, status, tags=tags, samples=runs))
        else:
            status = rng.choice(_STATUSES)
            results.append(
                grade_result(
                    case,
                    status,
                    reason=f"reason of {case}",
                    tags=tags,
                    score=None if status in {"missing", "error"} else rng.random(),
                    duration_s=None if status == "missing" else rng.uniform(0.1, 3),
                )
            )
    run = RunInfo(
        name=run_name,
        candidates_digest="sha256:" + "ab" * 32,
        started_at="2026-12-02T07:01:02Z",
        finished_at="2026-12-02T07:31:02Z",
        tool_version="0.4.0",
        python="3.11.2",
        sandbox="bwrap",
    )
    report = GradeReport(
        task_class=task_class,
        results=tuple(results),
        sandbox="bwrap",
        run=run,
        sampled=bool(samples),
        fail_under=0.5 if samples else None,
    )
    return GradeDocument(report=report)


def with_results(document: GradeDocument, results: Sequence[GradeResult]) -> GradeDocument:
    """``document`` with ``results`` instead of its own (each figure computed from them)."""
    return dataclasses.replace(
        document, report=document.report.model_copy(update={"results": tuple(results)})
    )


def check_document(
    diagnostics: Sequence[Diagnostic] | None = None,
    *,
    manifest: str = "/home/curator/bench/bench.toml",
) -> CheckDocument:
    """A check report: by default four diagnostics, two task classes' and the manifest's."""
    if diagnostics is None:
        diagnostics = [
            diagnostic("module-missing", "error", "no module bench.alpha", slug="alpha"),
            diagnostic("golden-fails", "error", "expected/ failed: boom", slug="beta"),
            diagnostic("timeout-tight", "warning", "took 9.1 s of 10 s", slug="beta"),
            diagnostic("manifest-unused-root", "warning", "root 'old' holds nothing", slug=None),
        ]
    rubrics = GoldenReport(
        envelopes=tuple(
            Envelope(
                slug="beta",
                case="one",
                side=side,
                statuses=("passed",),
                reused=False,
                wall_s=Spread(0.4, 0.5, 0.6),
                cpu_s=None,
                peak_memory_mib=None,
            )
            for side in _GOLDEN_SIDES
        ),
        ran=4,
        sandbox="bwrap",
    )
    return CheckDocument(
        manifest=Path(manifest),
        ok=not any(d.severity == "error" for d in diagnostics),
        checked=2,
        declared=2,
        diagnostics=tuple(diagnostics),
        strict=False,
        task_classes=("alpha", "beta"),
        summary="checked",
        rubrics=rubrics,
    )


def diagnostic(
    code: str, severity: Severity, message: str, *, slug: str | None, hint: str | None = "fix it"
) -> Diagnostic:
    """One diagnostic, of a task class's registration (or, without ``slug``, of the manifest)."""
    return Diagnostic(
        code=code,
        severity=severity,
        message=message,
        file=None if slug is None else f"bench/{slug}/registration.py",
        line=None if slug is None else 3,
        column=None if slug is None else 1,
        slug=slug,
        hint=hint,
    )


def _outcome(status: GradeStatus, reason: str, passed: int = 0) -> Outcome:
    return Outcome(status=status, reason=reason, samples_total=1, samples_passed=passed)


def compare_document(cases: int = 30, *, seed: int = 2) -> CompareDocument:
    """A comparison of ``cases`` cases with every kind of change."""
    rng = random.Random(seed)
    changes: tuple[Change, ...] = ("regressed", "improved", "error", "new", "gone", "unchanged")
    rows = []
    for index in range(cases):
        change = changes[index % len(changes)] if index < 12 else rng.choice(changes)
        base: Outcome | None
        new: Outcome | None
        if change == "regressed":
            base, new = _outcome("passed", "ok", 1), _outcome("failed", "README.txt differs")
        elif change == "improved":
            base, new = _outcome("failed", "README.txt differs"), _outcome("passed", "ok", 1)
        elif change == "error":
            base, new = _outcome("passed", "ok", 1), _outcome("error", "the rubric crashed")
        elif change == "new":
            base, new = None, _outcome("passed", "ok", 1)
        elif change == "gone":
            base, new = _outcome("failed", "no", 0), None
        else:
            base, new = _outcome("passed", "ok", 1), _outcome("passed", "ok", 1)
        rows.append(CaseChange(f"case-{index:03d}", change, base, new))

    def side(file: str, which: str) -> Side:
        outcomes = {
            row.case: outcome
            for row in rows
            if (outcome := row.base if which == "base" else row.new) is not None
        }
        return Side(
            file=file,
            run=RunInfo(name=file.removesuffix(".json"), tool_version="0.4.0"),
            task_class="vuln-remediation",
            sampled=False,
            bench_digest="sha256:" + "cd" * 32,
            outcomes=outcomes,
            pass_at_k={1: 0.5 if which == "base" else 0.6},
        )

    return CompareDocument(
        base=side("base.json", "base"),
        new=side("new.json", "new"),
        task_class="vuln-remediation",
        bench_digest="sha256:" + "cd" * 32,
        pass_at_k=(KComparison(1, 0.5, 0.6),),
        cases=tuple(rows),
        test=McNemar(improved=2, regressed=3, p_value=1.0),
    )
