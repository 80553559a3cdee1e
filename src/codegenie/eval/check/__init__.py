"""``codegenie-bench check``: every inconsistency of a bench, in one run.

Static checks read the manifest, the tree and the registrations' source;
import checks import each registration in a worker process (see
:mod:`codegenie.eval.check.workers`), so that a registration that raises,
exits, crashes its interpreter or hangs is reported as that slug's problem and
the check carries on. The report's diagnostics are sorted, so the output is
the same whatever ``jobs`` is.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codegenie.eval.check.codes import CODES, Code, diagnostic
from codegenie.eval.check.golden import CaseRun, golden_diagnostics
from codegenie.eval.check.static import ImportTarget, check_static, display_path
from codegenie.eval.check.workers import Outcome, import_all
from codegenie.eval.diagnostics import Diagnostic

__all__ = ("CODES", "CheckReport", "Code", "Shard", "run_check")

DEFAULT_TIMEOUT = 60.0


@dataclass(frozen=True, slots=True)
class Shard:
    """Slice ``index`` (1-based) of ``count``: a stable share of the slugs.

    A slug belongs to the slice its SHA-256 picks, so the assignment does not
    depend on the manifest's order, the machine or the Python version.
    Diagnostics that belong to no slug go to slice 1.
    """

    index: int = 1
    count: int = 1

    def __post_init__(self) -> None:
        if not 1 <= self.index <= self.count:
            msg = f"shard {self.index}/{self.count}: need 1 <= K <= N"
            raise ValueError(msg)

    @classmethod
    def parse(cls, text: str) -> Shard:
        """Parse ``K/N``; raise ``ValueError`` when it is not one."""
        index, sep, count = text.partition("/")
        if not sep or not index.isdigit() or not count.isdigit():
            msg = f"shard must look like K/N (e.g. 1/4), not {text!r}"
            raise ValueError(msg)
        return cls(int(index), int(count))

    def __contains__(self, slug: object) -> bool:
        if self.count == 1:
            return True
        if not isinstance(slug, str):
            return self.index == 1
        digest = hashlib.sha256(slug.encode()).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index - 1


@dataclass(frozen=True, slots=True)
class CheckReport:
    """The outcome of one check run."""

    manifest: Path
    checked: int
    diagnostics: tuple[Diagnostic, ...]

    @property
    def errors(self) -> int:
        """Return how many diagnostics are errors."""
        return sum(d.severity == "error" for d in self.diagnostics)

    @property
    def warnings(self) -> int:
        """Return how many diagnostics are warnings."""
        return sum(d.severity == "warning" for d in self.diagnostics)

    def ok(self, *, strict: bool = False) -> bool:
        """Return whether the bench passes: no errors (and, when strict, no warnings)."""
        return self.errors == 0 and (not strict or self.warnings == 0)

    def to_json(self, *, strict: bool = False) -> dict[str, Any]:
        """Return the documented JSON shape."""
        return {
            "ok": self.ok(strict=strict),
            "manifest": str(self.manifest),
            "checked": self.checked,
            "errors": self.errors,
            "warnings": self.warnings,
            "diagnostics": [d.to_json() for d in self.diagnostics],
        }

    def summary(self) -> str:
        """Return one line: what was checked and found."""
        noun = "task class" if self.checked == 1 else "task classes"
        return (
            f"checked {self.checked} {noun} in {display_path(self.manifest)}: "
            f"{self.errors} error{'s' if self.errors != 1 else ''}, "
            f"{self.warnings} warning{'s' if self.warnings != 1 else ''}"
        )


def _diagnostic(
    code: str,
    message: str,
    target: ImportTarget,
    *,
    file: str | None = None,
    line: int | None = None,
    manifest: str,
) -> Diagnostic:
    """Return an import diagnostic: at ``file:line``, else at the slug's manifest table."""
    if file is None:
        file, line = manifest, target.manifest_line
    column = 1 if line is not None else None
    return diagnostic(code, message, file=file, line=line, column=column, slug=target.slug)


def _import_diagnostics(
    target: ImportTarget, outcome: Outcome, *, manifest: str, rubric_flagged: bool
) -> Iterable[Diagnostic]:
    module = target.module
    if outcome.kind == "timeout":
        yield _diagnostic(
            "import-timeout",
            f"importing {module} for {target.slug!r} did not finish ({outcome.detail})",
            target,
            manifest=manifest,
        )
        return
    if outcome.kind == "crashed":
        yield _diagnostic(
            "import-crashed",
            f"the interpreter died while importing {module} for {target.slug!r} ({outcome.detail})",
            target,
            manifest=manifest,
        )
        return
    if outcome.kind == "tampered":
        yield _diagnostic(
            "import-failed",
            f"importing {module} for {target.slug!r} cannot be judged: {outcome.detail}",
            target,
            manifest=manifest,
        )
        return
    if outcome.error is not None:
        line = outcome.error.get("line")
        where = {"file": target.display_file, "line": line} if line else {}
        detail = outcome.error["type"]
        if outcome.error["message"]:
            detail += f": {outcome.error['message']}"
        yield _diagnostic(
            "import-failed",
            f"importing {module} for {target.slug!r} raised {detail}",
            target,
            manifest=manifest,
            **where,
        )
    elif outcome.not_registered:
        others = ", ".join(repr(n) for n in outcome.registered) or "nothing"
        yield _diagnostic(
            "not-registered",
            f"importing {module} did not register {target.slug!r} (it registered {others})",
            target,
            manifest=manifest,
        )
    lines = dict(target.register_lines)
    for name in dict.fromkeys(outcome.registered):
        if name != target.slug:
            where = {"file": target.display_file, "line": lines[name]} if name in lines else {}
            yield _diagnostic(
                "extra-registration",
                f"importing {module} for {target.slug!r} also registered {name!r}",
                target,
                manifest=manifest,
                **where,
            )
    if outcome.rubric and not rubric_flagged:
        yield _diagnostic(
            "rubric-imported",
            f"importing {module} for {target.slug!r} loaded rubric {', '.join(outcome.rubric)}",
            target,
            manifest=manifest,
        )
    if outcome.left_running:
        yield _diagnostic(
            "import-left-running",
            f"importing {module} for {target.slug!r} left {outcome.left_running} running",
            target,
            manifest=manifest,
        )
    if outcome.parts is not None:
        yield from _part_diagnostics(target, outcome.parts, manifest=manifest)


def _part_diagnostics(
    target: ImportTarget, parts: dict[str, Any], *, manifest: str
) -> Iterable[Diagnostic]:
    """Report the rubric and cases of a task class that loaded."""
    slug = target.slug
    line = dict(target.register_lines).get(slug)
    file = target.display_file if line else None
    rubric = parts["rubric_file"]
    if not parts["rubric_exists"]:
        shown = display_path(Path(rubric)) if rubric else "(none: no source file)"
        yield _diagnostic(
            "rubric-missing",
            f"the rubric of {slug!r}, {shown}, does not exist",
            target,
            file=file,
            line=line,
            manifest=manifest,
        )
    for problem in parts["case_problems"]:
        case = f"case {problem['case']!r} of {slug!r}" if problem["case"] else f"{slug!r} cases"
        key = f"{problem['key']}: " if problem["key"] else ""
        column = problem["column"] if problem["line"] is not None else None
        yield diagnostic(
            problem["code"],
            f"{case}: {key}{problem['message']}",
            file=display_path(Path(problem["file"])),
            line=problem["line"],
            column=column,
            slug=slug,
        )
    if not parts["cases_found"] or not (parts["cases"] or parts["case_problems"]):
        yield _diagnostic(
            "cases-missing",
            f"{slug!r} has no cases: nothing can be graded",
            target,
            file=file,
            line=line,
            manifest=manifest,
        )


def _case_runs(target: ImportTarget, outcome: Outcome) -> list[CaseRun]:
    parts = outcome.parts
    if parts is None or not parts["rubric_exists"]:
        return []
    return [
        CaseRun(
            target.slug,
            Path(parts["rubric_file"]),
            case["id"],
            Path(case["directory"]),
            float(case["timeout"]),
            side,
        )
        for case in parts["cases"]
        for side in ("expected", "input")
    ]


def run_check(
    manifest: Path,
    *,
    jobs: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    shard: Shard | None = None,
    rubrics: bool = False,
) -> CheckReport:
    """Check the bench of ``manifest``; return every diagnostic, sorted.

    ``jobs`` slugs are imported at once (default: the number of CPUs), each in
    a process of its own; ``timeout`` bounds each slug's import in seconds;
    ``shard`` restricts the run to a stable slice of the slugs. Each task class
    that loads has its rubric and cases checked too; with ``rubrics``, every
    case's rubric also runs on copies of its ``expected/`` (which must pass)
    and its ``input/`` (which must fail), ``jobs`` at a time. Raises
    ``BenchManifestNotFound`` when there is no manifest; a manifest that cannot
    be read is a diagnostic like any other.
    """
    from codegenie.eval.errors import BenchManifestNotFound  # noqa: PLC0415

    shard = shard or Shard()
    path = manifest.absolute()
    if not path.exists():
        raise BenchManifestNotFound(path)
    static = check_static(path, shard.__contains__)
    diagnostics = list(static.diagnostics)
    jobs = jobs or os.cpu_count() or 1
    if static.targets:
        outcomes = import_all(static.targets, jobs=jobs, timeout=timeout)
        shown = display_path(path)
        runs: list[CaseRun] = []
        for target in static.targets:
            outcome = outcomes[target.slug]
            diagnostics += _import_diagnostics(
                target,
                outcome,
                manifest=shown,
                rubric_flagged=target.slug in static.rubric_flagged,
            )
            if rubrics:
                runs += _case_runs(target, outcome)
        diagnostics += golden_diagnostics(runs, jobs=jobs)
    diagnostics.sort(key=Diagnostic.sort_key)
    return CheckReport(manifest=path, checked=len(static.slugs), diagnostics=tuple(diagnostics))
