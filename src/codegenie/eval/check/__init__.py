"""``codegenie-bench check``: every inconsistency of a bench, in one run.

Static checks read the manifest, the tree and the registrations' source;
import checks import each registration in a worker process (see
:mod:`codegenie.eval.check.workers`), so that a registration that raises,
exits, crashes its interpreter or hangs is reported as that slug's problem and
the check carries on. The report's diagnostics are sorted, so the output is
the same whatever ``jobs`` is.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codegenie.eval import codes
from codegenie.eval._command import RubricCommand
from codegenie.eval._sandbox.limits import Limits
from codegenie.eval.cases import Case
from codegenie.eval.check._protocol import Failure, Parts, Raised
from codegenie.eval.check.cheat import CheatRun, CheatSummary, reading_expected
from codegenie.eval.check.cheat import plan as cheat_plan
from codegenie.eval.check.exploit_choice import ExploitSelection
from codegenie.eval.check.golden import CaseRun, GoldenReport, golden
from codegenie.eval.check.options import DEFAULT_TIMEOUT, CheckOptions, RubricChecks, Shard
from codegenie.eval.check.static import ImportTarget, check_static
from codegenie.eval.check.workers import Outcome, import_all
from codegenie.eval.codes import CODES, Code, diagnostic
from codegenie.eval.diagnostics import Diagnostic, DiagnosticCounts
from codegenie.eval.errors import EvalError
from codegenie.eval.models import PlannedEnvironment
from codegenie.eval.naming import closest, slug_to_identifier
from codegenie.eval.problems import (
    Location,
    case_problem,
    display_path,
    import_failed,
    misspelt_slug,
    module_mismatch,
    not_registered,
)
from codegenie.eval.rubrics import Sandbox, choose_sandbox

if TYPE_CHECKING:
    from codegenie.eval._env.store import Environment
    from codegenie.eval._manifest.model import BenchManifest
    from codegenie.eval.errors import EnvironmentBuildFailed

__all__ = (
    "CODES",
    "DEFAULT_TIMEOUT",
    "CheckOptions",
    "CheckReport",
    "Code",
    "RubricChecks",
    "Shard",
    "run_check",
)


@dataclass(frozen=True, slots=True)
class CheckReport(DiagnosticCounts):
    """The outcome of one check run.

    ``checked`` counts the task classes that were checked, ``declared`` those
    the manifest declares (in the shard): an entry too broken to check (a bad
    slug, a module that is not a module name, a duplicate module) is declared
    but not checked. ``None`` means as many as were checked. ``readable`` is
    false when the manifest could not be read at all (bytes or TOML syntax:
    ``manifest-syntax``): then nothing was checked, in any shard, and the
    report is not ok. ``task_classes`` are the slugs checked;
    ``environments`` those of them whose entry declares its own environment,
    each as a :class:`~codegenie.eval.models.PlannedEnvironment` (as a run
    plan has it: what is declared, the digest when known without building).
    """

    manifest: Path
    checked: int
    diagnostics: tuple[Diagnostic, ...]
    declared: int | None = None
    readable: bool = True
    rubrics: GoldenReport | None = None
    task_classes: tuple[str, ...] = ()
    environments: Mapping[str, PlannedEnvironment] = field(default_factory=dict)

    def ok(self, *, strict: bool = False) -> bool:
        """Whether the bench passes: a readable manifest, no errors (strict: no warnings either)."""
        return self.readable and self.errors == 0 and (not strict or self.warnings == 0)

    def to_json(self, *, strict: bool = False) -> dict[str, Any]:
        """Return the documented JSON shape."""
        return {
            "ok": self.ok(strict=strict),
            "manifest": str(self.manifest),
            "checked": self.checked,
            "declared": self.checked if self.declared is None else self.declared,
            "errors": self.errors,
            "warnings": self.warnings,
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "strict": strict,
            "task_classes": sorted(self.task_classes),
            "environments": {
                slug: self.environments[slug].to_json() for slug in sorted(self.environments)
            },
            **({} if self.rubrics is None else {"rubrics": self.rubrics.to_json()}),
        }

    def summary(self) -> str:
        """Return one line: what was checked (of how many declared) and found."""
        declared = self.checked if self.declared is None else self.declared
        counted = f"{self.checked}" if declared == self.checked else f"{self.checked} of {declared}"
        noun = "task class" if declared == 1 else "task classes"
        where = display_path(self.manifest)
        if not self.readable:
            where += " (it cannot be read)"
        return (
            f"checked {counted} {noun} in {where}: "
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


def _misspelt(target: ImportTarget, outcome: Outcome, declared: Container[str]) -> str | None:
    """Return the slug a table its own module does not register probably meant, or ``None``."""
    if outcome.kind != "done" or outcome.error is not None or not outcome.not_registered:
        return None
    return misspelt_slug(target.slug, target.module, outcome.registered, declared)


def _import_diagnostics(
    target: ImportTarget,
    outcome: Outcome,
    *,
    manifest: str,
    rubric_flagged: bool,
    meant: str | None = None,
) -> Iterable[Diagnostic]:
    module, slug = target.module, target.slug
    header = _at_entry(target, manifest)
    if outcome.kind == "timeout":
        message = f"importing {module} for {slug!r} did not finish ({outcome.detail})"
        yield diagnostic(codes.IMPORT_TIMEOUT, message, *header, slug=slug)
        return
    if outcome.kind == "crashed":
        message = f"the interpreter died while importing {module} for {slug!r} ({outcome.detail})"
        yield diagnostic(codes.IMPORT_CRASHED, message, *header, slug=slug)
        return
    if outcome.kind == "tampered":
        message = f"importing {module} for {slug!r} cannot be judged: {outcome.detail}"
        # No traceback to show: the registration wrote on descriptors it did not open.
        hint = "stop the import from writing to file descriptors it did not open itself"
        yield diagnostic(codes.IMPORT_FAILED, message, *header, slug=slug, hint=hint)
        return
    if outcome.error is not None:
        yield _failed(target, outcome.error, manifest)
    elif outcome.not_registered:
        yield not_registered(slug, module, outcome.registered, header, meant=meant)
    lines = dict(target.register_lines)
    for name in dict.fromkeys(outcome.registered):
        if name not in {slug, meant}:  # the misspelt table's own slug: one problem, said once
            where = (target.display_file, lines[name], 1) if name in lines else header
            message = f"importing {module} for {slug!r} also registered {name!r}"
            yield diagnostic(codes.EXTRA_REGISTRATION, message, *where, slug=slug)
    if outcome.rubric and not rubric_flagged:
        message = f"importing {module} for {slug!r} loaded rubric {', '.join(outcome.rubric)}"
        yield diagnostic(codes.RUBRIC_IMPORTED, message, *header, slug=slug)
    if outcome.left_running:
        message = f"importing {module} for {slug!r} left {outcome.left_running} running"
        yield diagnostic(codes.IMPORT_LEFT_RUNNING, message, *header, slug=slug)
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
        yield diagnostic(codes.RUBRIC_MISSING, message, *at, slug=slug)
    for problem in parts["case_problems"]:
        yield case_problem(
            slug,
            code=CODES[problem["code"]],
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
        yield diagnostic(codes.CASE_INVALID, message, *at, slug=slug)
    if not parts["cases_found"] or not (parts["cases"] or parts["case_problems"]):
        message = f"{slug!r} has no cases: nothing can be graded"
        yield diagnostic(codes.CASES_MISSING, message, *at, slug=slug)


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
                limits=Limits.of(case),
            ),
            side,
            RubricCommand() if target.command is None else RubricCommand(target.command),
            warm=parts.get("warm", True),
            reads_expected=parts.get("reads_expected", False),
        )
        for case in parts["cases"]
        for side in ("expected", "input")
    ]


def _cheat_summary(
    report: GoldenReport, cheat: CheatRun, selection: ExploitSelection, runs: Sequence[CaseRun]
) -> CheatSummary:
    """Return what the cheat run of ``report`` did (``runs``: every side that ran)."""
    exploits = [e for e in report.envelopes if e.side == "exploit"]
    return CheatSummary(
        selection=selection,
        runs=sum(len(e.statuses) for e in exploits),
        passed=sum(e.statuses.count("passed") for e in exploits),
        skipped=cheat.skipped,
        reads_expected=reading_expected(runs),
    )


def _accepted(
    diagnostics: list[Diagnostic],
    accepts: Mapping[str, tuple[tuple[str, ...], tuple[int, int]]],
    *,
    manifest: str,
    rubrics: bool,
) -> list[Diagnostic]:
    """Leave out what each entry's ``accept`` lists; report each accepted code that did not occur.

    An accepted code is judged unused only when it could have occurred: a
    code only ``--rubrics`` reports needs ``--rubrics``, and a slug with an
    error of its own was not checked in full.
    """
    if not accepts:
        return diagnostics
    kept = [
        d
        for d in diagnostics
        if d.slug is None or d.slug not in accepts or d.code not in accepts[d.slug][0]
    ]
    occurred = {(d.slug, d.code) for d in diagnostics}
    failed = {d.slug for d in kept if d.severity == "error"}
    for slug, (accepted, (line, column)) in accepts.items():
        if slug in failed:
            continue
        for code in dict.fromkeys(accepted):
            if (slug, code) in occurred or (CODES[code].rubrics_only and not rubrics):
                continue
            message = f"{slug!r} accepts {code!r}, which no longer occurs for it"
            kept.append(diagnostic(codes.UNUSED_IGNORE, message, manifest, line, column, slug=slug))
    return kept


def _declared(slugs: Iterable[str], declared: frozenset[str], manifest: Path) -> None:
    """Raise ``TaskClassNotFound`` for the first of ``slugs`` the manifest does not declare."""
    from codegenie.eval.errors import TaskClassNotFound  # noqa: PLC0415 - only for a slug not declared

    for slug in slugs:
        if slug not in declared:
            names = tuple(sorted(declared))
            raise TaskClassNotFound(slug, str(manifest), names, closest(slug, names))


def _environments(
    manifest: Path, runs: Sequence[CaseRun], rubrics: RubricChecks
) -> tuple[dict[str, Environment], set[str], list[Diagnostic]]:
    """Return the environment of each task class of ``runs`` that declares one.

    Built first unless ``rubrics.build`` is false (``EnvironmentNotBuilt``:
    the command was told not to build, and stops). The second value are the
    task classes whose rubrics cannot run: their requirements file or their
    Python cannot be used, which the static checks report
    (``environment-invalid``, ``python-unavailable``), or uv could not build
    their environment: ``environment-build-failed``, the third value, one
    diagnostic per such task class. The other task classes go on.
    """
    from codegenie.eval._manifest.model import BenchManifest  # noqa: PLC0415 - only check --rubrics reads it again
    from codegenie.eval.errors import EnvironmentBuildFailed, PythonUnavailable  # noqa: PLC0415 - only check --rubrics raises them
    from codegenie.eval.grading import task_class_environment  # noqa: PLC0415 - only check --rubrics needs it

    environments: dict[str, Environment] = {}
    unusable: set[str] = set()
    diagnostics: list[Diagnostic] = []
    try:
        bench = BenchManifest.load(manifest)
    except EvalError:
        return environments, unusable, diagnostics  # the static checks report it
    for slug in sorted({run.slug for run in runs}):
        if slug not in bench:
            continue
        try:
            ready = task_class_environment(
                bench, slug, build=rubrics.build, progress=rubrics.on_build
            )
        except PythonUnavailable:
            unusable.add(slug)
            continue
        except EnvironmentBuildFailed as failed:
            unusable.add(slug)
            if (
                failed.step != "requirements"
            ):  # the static checks report a file that may not be used
                diagnostics.append(_build_failed(bench, slug, failed))
            continue
        if ready is not None:
            environments[slug] = ready
    return environments, unusable, diagnostics


def _build_failed(bench: BenchManifest, slug: str, failed: EnvironmentBuildFailed) -> Diagnostic:
    """Return the ``environment-build-failed`` diagnostic of ``slug``, at its declaring value.

    At the entry's ``environment`` (its ``python`` when it declares only that,
    or when finding the interpreter failed); uv's output is the diagnostic's
    traceback (``-v``, and JSON).
    """
    entry = bench.entry(slug)
    key = "environment" if entry.environment is not None and failed.step != "python" else "python"
    line, column = bench.value_position("task-classes", slug, key)
    said = failed.output.strip().splitlines()[-1:] or ["(uv said nothing)"]
    message = (
        f"the environment of {slug!r} cannot be built ({failed.step} failed): {said[0].strip()}"
    )
    found = diagnostic(
        codes.ENVIRONMENT_BUILD_FAILED,
        message,
        display_path(bench.path),
        line,
        column,
        slug=slug,
        # The error's own hint sends the reader to uv's output "above": here it is under -v.
        hint=failed.hint
        if failed.step == "store"
        else "read uv's output (-v shows it); fix the requirements file, or build offline "
        f"from a wheel directory (`UV_FIND_LINKS=DIR UV_NO_INDEX=1 codegenie-bench env build "
        f"{slug}`)",
    )
    return replace(found, traceback=failed.output.strip() or None)


def _planned_environments(manifest: Path, slugs: Iterable[str]) -> dict[str, PlannedEnvironment]:
    """Return the environment each of ``slugs`` declares, as a run plan has it (none built)."""
    from codegenie.eval._cache.memo import load_manifest_cached  # noqa: PLC0415 - only for the report

    try:
        bench = load_manifest_cached(str(manifest))
    except EvalError:
        return {}  # the static checks report it
    found: dict[str, PlannedEnvironment] = {}
    for slug in slugs:
        if slug not in bench:
            continue
        entry = bench.entry(slug)
        if entry.environment is None and entry.python is None:
            continue
        from codegenie.eval._env.declared import planned_environment  # noqa: PLC0415 - only benches with environments pay for it

        planned = planned_environment(
            bench.directory, entry.environment, entry.python, task_class=slug
        )
        if planned is not None:
            found[slug] = planned
    return found


def run_check(
    manifest: Path,
    options: CheckOptions | None = None,
    *,
    on_progress: Callable[[int, int], None] | None = None,
) -> CheckReport:
    """Check the bench of ``manifest`` as ``options`` say; return every diagnostic, sorted.

    ``options`` (default: :class:`CheckOptions`'s defaults) says how many
    slugs are imported at once (each in a process of its own), how long
    each import may take, which slice (``shard``) and which task classes
    (``slugs``) are checked, and which codes are reported. Each task class
    that loads has its rubric and cases checked too; with
    ``options.rubrics``, every case's rubric also runs on copies of its
    ``expected/`` (which must pass) and its ``input/`` (which must fail),
    ``jobs`` at a time, in its sandbox, each side ``repeat`` times (a case
    whose runs disagree is ``case-flaky``), measured, and answered from the
    store of results when nothing it depends on changed (``reuse``);
    ``on_progress(done, total)`` follows the rubric runs. A slug of
    ``options.slugs`` that the manifest does not declare raises
    ``TaskClassNotFound`` (with the closest declared slugs) before anything
    is imported; the manifest's own checks always run. Raises
    ``BenchManifestNotFound`` when there is no manifest; a manifest that
    cannot be read is a diagnostic like any other.
    """
    from codegenie.eval.errors import BenchManifestNotFound  # noqa: PLC0415 - only when the manifest is missing

    options = options or CheckOptions()
    shard = options.shard or Shard()
    slugs, select, ignore = options.slugs, options.select, options.ignore
    rubrics = options.rubrics
    path = manifest.absolute()
    if not path.exists():
        raise BenchManifestNotFound(path, searched_parents=False)
    box = None
    ledger: GoldenReport | None = None
    if rubrics is not None:
        sandbox = rubrics.sandbox
        box = sandbox if isinstance(sandbox, Sandbox) else choose_sandbox(sandbox)
        ledger = GoldenReport(repeat=rubrics.repeat, sandbox=box.mode)
    chosen = None if slugs is None else frozenset(slugs)

    def in_run(slug: str | None) -> bool:
        return slug in shard and (chosen is None or slug is None or slug in chosen)

    static = check_static(path, in_run, orphans_in=shard.__contains__)
    if chosen is not None and static.readable:
        _declared(slugs or (), static.every_slug, path)
    diagnostics = list(static.diagnostics)
    jobs = options.jobs or os.cpu_count() or 1
    if static.targets:
        outcomes = import_all(static.targets, jobs=jobs, timeout=options.timeout)
        shown = display_path(path)
        runs: list[CaseRun] = []
        misspelt: set[str] = set()
        for target in static.targets:
            outcome = outcomes[target.slug]
            meant = _misspelt(target, outcome, static.every_slug)
            if meant is not None and target.module.split(".")[1:-1] == [slug_to_identifier(meant)]:
                misspelt.add(target.slug)  # the package is the meant slug's: no convention issue
            diagnostics += _import_diagnostics(
                target,
                outcome,
                manifest=shown,
                rubric_flagged=target.slug in static.rubric_flagged,
                meant=meant,
            )
            if rubrics is not None:
                runs += _case_runs(target, outcome)
        if box is not None and rubrics is not None:
            environments, unusable, unbuilt = _environments(path, runs, rubrics)
            diagnostics += unbuilt
            usable = [run for run in runs if run.slug not in unusable]
            with cheat_plan(usable, rubrics.exploits) as cheat:
                ledger = golden(
                    usable + cheat.runs,
                    jobs=jobs,
                    sandbox=box,
                    repeat=rubrics.repeat,
                    reuse=rubrics.reuse,
                    on_progress=on_progress,
                    environments=environments,
                    executor=rubrics.executor,
                )
            summary = _cheat_summary(ledger, cheat, rubrics.exploits, usable)
            ledger = replace(ledger, exploits=summary)
            diagnostics += ledger.diagnostics
        diagnostics = [
            d
            for d in diagnostics
            if not (d.code == codes.MODULE_CONVENTION.name and d.slug in misspelt)
        ]
    diagnostics = _accepted(
        diagnostics, static.accepts, manifest=display_path(path), rubrics=rubrics is not None
    )
    diagnostics = [
        d for d in diagnostics if (select is None or d.code in select) and d.code not in ignore
    ]
    diagnostics.sort(key=Diagnostic.sort_key)
    return CheckReport(
        manifest=path,
        checked=len(static.slugs),
        diagnostics=tuple(diagnostics),
        declared=len(static.declared),
        readable=static.readable,
        rubrics=ledger,
        task_classes=tuple(static.slugs),
        environments=_planned_environments(path, static.slugs) if static.readable else {},
    )
