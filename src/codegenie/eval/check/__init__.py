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
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codegenie.eval.cases import Case
from codegenie.eval.check._protocol import Failure, Parts, Raised
from codegenie.eval.check.golden import CaseRun, GoldenReport, golden
from codegenie.eval.check.static import ImportTarget, check_static
from codegenie.eval.check.workers import Outcome, import_all
from codegenie.eval.codes import CODES, Code, diagnostic
from codegenie.eval.diagnostics import Diagnostic
from codegenie.eval.problems import (
    Location,
    case_problem,
    display_path,
    import_failed,
    module_mismatch,
    not_registered,
)
from codegenie.eval.rubrics import Sandbox, choose_sandbox

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
    rubrics: GoldenReport | None = None

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
            **({} if self.rubrics is None else {"rubrics": self.rubrics.to_json()}),
        }

    def summary(self) -> str:
        """Return one line: what was checked and found."""
        noun = "task class" if self.checked == 1 else "task classes"
        return (
            f"checked {self.checked} {noun} in {display_path(self.manifest)}: "
            f"{self.errors} error{'s' if self.errors != 1 else ''}, "
            f"{self.warnings} warning{'s' if self.warnings != 1 else ''}"
        )


def _at_entry(target: ImportTarget, manifest: str) -> Location:
    """Return the slug's table header: where a problem with the entry as a whole is reported."""
    return (manifest, target.manifest_line, target.manifest_column)


def _raised_at(target: ImportTarget, error: Raised) -> Location | None:
    """Where the worker says the registration failed, if that is a line under its root."""
    file, line = error["file"], error["line"]
    if file is None or line is None or line < 1:
        return None
    if not os.path.realpath(file).startswith(os.path.join(target.root_dir, "")):
        return None  # an answer that points outside the bench is not believed
    return (display_path(file), line, 1)


def _failed(target: ImportTarget, error: Failure, manifest: str) -> Diagnostic:
    """Return the diagnostic of a load that failed in the worker (the probe's ``error``)."""
    header = _at_entry(target, manifest)
    if error["kind"] == "mismatch":
        actual = error["actual"]
        return module_mismatch(
            target.slug,
            target.module,
            Path(error["expected"]),
            None if actual is None else Path(actual),
            header,
        )
    return import_failed(
        target.slug,
        target.module,
        error["type"],
        error["message"],
        _raised_at(target, error) or header,
        traceback=error["traceback"],
    )


def _import_diagnostics(
    target: ImportTarget, outcome: Outcome, *, manifest: str, rubric_flagged: bool
) -> Iterable[Diagnostic]:
    module, slug = target.module, target.slug
    header = _at_entry(target, manifest)
    if outcome.kind == "timeout":
        message = f"importing {module} for {slug!r} did not finish ({outcome.detail})"
        yield diagnostic("import-timeout", message, *header, slug=slug)
        return
    if outcome.kind == "crashed":
        message = f"the interpreter died while importing {module} for {slug!r} ({outcome.detail})"
        yield diagnostic("import-crashed", message, *header, slug=slug)
        return
    if outcome.kind == "tampered":
        message = f"importing {module} for {slug!r} cannot be judged: {outcome.detail}"
        yield diagnostic("import-failed", message, *header, slug=slug)
        return
    if outcome.error is not None:
        yield _failed(target, outcome.error, manifest)
    elif outcome.not_registered:
        yield not_registered(slug, module, outcome.registered, header)
    lines = dict(target.register_lines)
    for name in dict.fromkeys(outcome.registered):
        if name != slug:
            where = (target.display_file, lines[name], 1) if name in lines else header
            message = f"importing {module} for {slug!r} also registered {name!r}"
            yield diagnostic("extra-registration", message, *where, slug=slug)
    if outcome.rubric and not rubric_flagged:
        message = f"importing {module} for {slug!r} loaded rubric {', '.join(outcome.rubric)}"
        yield diagnostic("rubric-imported", message, *header, slug=slug)
    if outcome.left_running:
        message = f"importing {module} for {slug!r} left {outcome.left_running} running"
        yield diagnostic("import-left-running", message, *header, slug=slug)
    if outcome.parts is not None:
        yield from _part_diagnostics(target, outcome.parts, manifest=manifest)


def _part_diagnostics(target: ImportTarget, parts: Parts, *, manifest: str) -> Iterable[Diagnostic]:
    """Report the rubric and cases of a task class that loaded."""
    slug = target.slug
    line = dict(target.register_lines).get(slug)
    at = (target.display_file, line, 1) if line else _at_entry(target, manifest)
    rubric = parts["rubric_file"]
    if not parts["rubric_exists"]:
        shown = display_path(Path(rubric)) if rubric else "(none: no source file)"
        message = f"the rubric of {slug!r}, {shown}, does not exist"
        yield diagnostic("rubric-missing", message, *at, slug=slug)
    for problem in parts["case_problems"]:
        yield case_problem(
            slug,
            code=problem["code"],
            file=problem["file"],
            line=problem["line"],
            column=problem["column"],
            key=problem["key"],
            message=problem["message"],
            case=problem["case"],
        )
    unlisted = parts["case_problems_unlisted"]
    if unlisted:
        listed = len(parts["case_problems"])
        message = (
            f"{slug!r} cases: {unlisted:,} more problem{'s' if unlisted != 1 else ''} "
            f"not listed (only the first {listed:,} are)"
        )
        yield diagnostic("case-invalid", message, *at, slug=slug)
    if not parts["cases_found"] or not (parts["cases"] or parts["case_problems"]):
        message = f"{slug!r} has no cases: nothing can be graded"
        yield diagnostic("cases-missing", message, *at, slug=slug)


def _case_runs(target: ImportTarget, outcome: Outcome) -> list[CaseRun]:
    parts = outcome.parts
    if parts is None or parts["rubric_file"] is None or not parts["rubric_exists"]:
        return []
    rubric = Path(parts["rubric_file"])
    return [
        CaseRun(
            target.slug,
            rubric,
            Case.model_construct(
                task_class=target.slug,
                id=case["id"],
                directory=Path(case["directory"]),
                timeout=float(case["timeout"]),
                memory=case["memory"],
                processes=case["processes"],
                file_size=case["file_size"],
                cpu_time=case["cpu_time"],
            ),
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
    sandbox: Sandbox | str = "auto",
    repeat: int = 1,
    reuse: bool = True,
    on_progress: Callable[[int, int], None] | None = None,
) -> CheckReport:
    """Check the bench of ``manifest``; return every diagnostic, sorted.

    ``jobs`` slugs are imported at once (default: the number of CPUs), each in
    a process of its own; ``timeout`` bounds each slug's import in seconds;
    ``shard`` restricts the run to a stable slice of the slugs. Each task class
    that loads has its rubric and cases checked too; with ``rubrics``, every
    case's rubric also runs on copies of its ``expected/`` (which must pass)
    and its ``input/`` (which must fail), ``jobs`` at a time, in ``sandbox``
    (a :class:`~codegenie.eval.rubrics.Sandbox`, or a ``--sandbox`` word:
    ``SandboxUnavailable`` is raised before anything runs when bubblewrap
    cannot start); each side ``repeat`` times (a case whose runs disagree
    is ``case-flaky``), measured, and answered from the store of results
    when nothing it depends on changed (``reuse``); ``on_progress(done,
    total)`` follows the rubric runs. Raises ``BenchManifestNotFound`` when there is no
    manifest; a manifest that cannot be read is a diagnostic like any other.
    """
    from codegenie.eval.errors import BenchManifestNotFound  # noqa: PLC0415 - only when the manifest is missing

    shard = shard or Shard()
    path = manifest.absolute()
    if not path.exists():
        raise BenchManifestNotFound(path, searched_parents=False)
    box = None
    ledger: GoldenReport | None = None
    if rubrics:
        box = sandbox if isinstance(sandbox, Sandbox) else choose_sandbox(sandbox)
        ledger = GoldenReport(repeat=repeat, sandbox=box.mode)
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
        if box is not None:
            ledger = golden(
                runs,
                jobs=jobs,
                sandbox=box,
                repeat=repeat,
                reuse=reuse,
                on_progress=on_progress,
            )
            diagnostics += ledger.diagnostics
    diagnostics.sort(key=Diagnostic.sort_key)
    return CheckReport(
        manifest=path,
        checked=len(static.slugs),
        diagnostics=tuple(diagnostics),
        rubrics=ledger,
    )
