"""``codegenie-bench grade SLUG CANDIDATES_DIR``: a task class's rubric on each case's candidate.

This module parses, calls and renders. The grading itself — resolving the
task class as ``show`` does (same errors, same exit codes), reading its
cases as ``plan`` does (``BenchCasesInvalid``, exit 4), choosing the cases
(``--case``, ``-k``, ``--tag``, ``--lf``, ``--shard``), running the rubric
on ``CANDIDATES_DIR/<case-id>/`` ``--jobs`` at a time, stopping after the
first case that did not pass (``-x``) and remembering what did not pass —
is the library's :func:`codegenie.eval.grading.grade_task_class`, which
tells this command what happens as it goes (:class:`_Events`). Text: one
line per case, in case-id order, printed as soon as it and every case
before it are graded, then the summary line. JSON: the report, one
document. Exit 0 when there was a case and every case passed, 1 otherwise
(a missing candidate or a rubric error is not a pass, and grading nothing
proves nothing).

``--jobs``, ``--sandbox`` and ``--format`` not given are taken from the
``[tool.codegenie-bench]`` table (:data:`SETTINGS`), as ``check`` takes its
own; a table ``format`` that grade does not write (``"sarif"``) is passed
over for the default, ``text``.
"""

from __future__ import annotations

import argparse
import contextlib
import re
from pathlib import Path
from typing import TYPE_CHECKING, Final

from codegenie.eval._output import escape_control, wants_colour
from codegenie.eval._setting_table import settings_of
from codegenie.eval.cli._base import (
    Command,
    Output,
    UsageError,
    add_build_option,
    choose_executor,
    choose_sandbox,
    load_manifest,
    manifest_path,
    proven_bench_digest,
    read_settings,
    shard_type,
    step_summary,
)
from codegenie.eval.cli._progress import Progress, stderr_is_a_terminal
from codegenie.eval.cli._settings_args import add_setting_options

if TYPE_CHECKING:
    from collections.abc import Sequence

    from codegenie.eval._env.store import Environment
    from codegenie.eval._exec import Executor
    from codegenie.eval._manifest.model import BenchManifest
    from codegenie.eval._reports.documents import GradeDocument
    from codegenie.eval._sandbox.provider import Sandbox
    from codegenie.eval.cases import Case
    from codegenie.eval.check import Shard
    from codegenie.eval.errors import BenchCasesInvalid
    from codegenie.eval.grading import GradeReport, GradeResult
    from codegenie.eval.models import TaskClass

__all__ = ("COMMAND", "SETTINGS")

#: The settings of ``[tool.codegenie-bench]`` that mean something for grade; the
#: others (select, ignore, strict, timeout, repeat) are check's, validated but not used.
SETTINGS = settings_of("grade")


def _candidates(path: Path) -> Path:
    """Return ``path``, absolute, when it is a directory or a file; else ``CandidatesDirInvalid``.

    Made absolute here, before any bench code runs: a registration that
    changes directory while it is imported changes nothing of what is graded.
    A file is read as JSON Lines of samples once the task class's cases are known.
    """
    from codegenie.eval.errors import CandidatesDirInvalid  # noqa: PLC0415 - start-up: only this command pays for it

    if path.is_dir() or path.is_file():
        return path.absolute()
    if path.exists() or path.is_symlink():
        raise CandidatesDirInvalid(path, "is neither a directory nor a JSON Lines file")
    raise CandidatesDirInvalid(path, "does not exist")


def run(args: argparse.Namespace, out: Output) -> int:
    """Resolve the slug, read its cases, grade the candidates; print the results and the summary.

    With ``--all``, every task class of the manifest in turn, from
    ``CANDIDATES/<slug>/``, in one report.
    """
    if args.show_settings:  # SLUG and CANDIDATES are not looked at
        settings = read_settings(args, out, manifest_path(args), SETTINGS)
        out.result(settings.to_json(), settings.render())
        return 0
    slug, typed = _positionals(args)
    # A mistake on the command line (exit 2) is reported before the bench is read.
    candidates = _candidates(typed)
    path = manifest_path(args)
    # The command line's, else [tool.codegenie-bench]'s (at or above the manifest), else defaults.
    options = read_settings(args, out, path, SETTINGS).options
    executor = choose_executor(options.executor, args, _USAGE)
    with contextlib.closing(executor):
        sandbox = choose_sandbox(options.sandbox, out, here=executor.runs_here)
        manifest = load_manifest(args, out, path)
        grading = _Grading(args, out, manifest, options.jobs, sandbox, executor)
        if slug is not None:
            grading.prepare([slug])
            document = grading.task_class(slug, candidates, typed)
            _render(document, out)
            return 0 if document.ok else 1
        return _grade_all(grading, candidates, typed)


_USAGE: Final = "usage: codegenie-bench grade [-h] (SLUG | --all) CANDIDATES [options]"


def _positionals(args: argparse.Namespace) -> tuple[str | None, Path]:
    """Return ``(SLUG, CANDIDATES)``; under ``--all``, ``(None, CANDIDATES)``.

    Raises ``UsageError`` for a command line with too few or too many of them.
    """
    usage = _USAGE
    given = [value for value in (args.slug, args.candidates) if value is not None]
    if args.all:
        if len(given) != 1:
            raise UsageError(usage, "grade --all takes CANDIDATES alone (no SLUG)")
        if args.cases:
            raise UsageError(usage, "--case names a case of one task class: not with --all")
        return None, Path(given[0])
    if len(given) != 2:
        raise UsageError(usage, "the following arguments are required: SLUG CANDIDATES")
    return str(args.slug), Path(args.candidates)


def _grade_all(grading: _Grading, candidates: Path, typed: Path) -> int:
    """Grade every task class of the manifest from ``CANDIDATES/<slug>/``; print one report."""
    from codegenie.eval._reports.documents import GradeSuiteDocument  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval._reports.formats import render  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval._run.digest import labelled, tree_digest  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval._samples.directory import unmatched  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval._tree import NO_BOUNDS  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval.errors import CandidatesDirInvalid  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval.grading import RunInfo  # noqa: PLC0415 - start-up: only this command pays for it

    out = grading.out
    if not candidates.is_dir():
        raise CandidatesDirInvalid(typed, "is not a directory of task classes (grade --all)")
    slugs = sorted(grading.manifest.slugs())
    if not out.quiet:
        for entry in unmatched(str(candidates), slugs):
            close = f"; did you mean {', '.join(map(repr, entry.close))}?" if entry.close else ""
            out.stderr.write(
                f"codegenie-bench: warning: {escape_control(str(typed / entry.name))} "
                f"matches no task class, and is not graded{escape_control(close)}\n"
            )
    grading.prepare(slugs)  # every environment, before any rubric runs
    documents = []
    for slug in slugs:
        if out.format == "text":
            out.stdout.write(f"{slug}:\n")
        document = grading.task_class(slug, candidates / slug, typed / slug)
        if out.format == "text":
            _render(document, out)
        documents.append(document)
    runs = [document.report.run for document in documents if document.report.run is not None]
    run = None
    if runs:
        digest = labelled(tree_digest(candidates, bounds=NO_BOUNDS))
        run = RunInfo.of_runs(runs, name=grading.args.run_name, candidates_digest=digest)
    suite = GradeSuiteDocument(tuple(documents), run=run)
    render(out.format, suite, out)
    return 0 if suite.ok else 1


class _Grading:
    """What grading one task class after another needs: the command line, the bench, the sandbox."""

    def __init__(  # noqa: PLR0917 - what the whole command shares
        self,
        args: argparse.Namespace,
        out: Output,
        manifest: BenchManifest,
        jobs: int | None,
        sandbox: Sandbox,
        executor: Executor,
    ) -> None:
        self.args = args
        self.out = out
        self.manifest = manifest
        self.jobs = jobs
        self.sandbox = sandbox
        self.executor = executor
        self.environments: dict[str, Environment] = {}

    def prepare(self, slugs: Sequence[str]) -> None:
        """Make ready the environments ``slugs`` declare (built unless ``--no-build``)."""
        from codegenie.eval.cli._environments import ready_environments  # noqa: PLC0415 - start-up: only this command pays for it

        for slug in slugs:
            if slug not in self.manifest:
                return  # resolving it says what is wrong, as for any slug
        self.environments = ready_environments(
            self.manifest, slugs, self.out, build=not self.args.no_build
        )

    def task_class(self, slug: str, candidates: Path, typed: Path) -> GradeDocument:
        """Grade ``candidates`` for ``slug`` (the library's flow); print each case's line (text)."""
        from codegenie.eval._selection import Selection  # noqa: PLC0415 - start-up: only this command pays for it
        from codegenie.eval.grading import GradeOptions, PassAtTooHigh, grade_task_class  # noqa: PLC0415 - start-up: only this command pays for it

        args, out = self.args, self.out
        out.slug = slug
        events = _Events(out, candidates)
        try:
            graded = grade_task_class(
                self.manifest,
                slug,
                candidates,
                GradeOptions(
                    jobs=self.jobs,
                    reuse=not args.no_cache,
                    stop_after=1 if args.exitfirst else None,
                    run_name=args.run_name,
                    pass_at=None if args.pass_at is None else tuple(args.pass_at),
                    fail_under=args.fail_under,
                ),
                self.sandbox,
                self.executor,
                environment=self.environments.get(slug),
                selection=Selection(
                    ids=args.cases,
                    keyword=args.keyword,
                    tags=tuple(args.tags or ()),
                    shard=args.shard,
                ),
                last_failed=args.last_failed,
                samples=args.samples,
                shown_as=typed,
                remember=not args.no_cache,
                events=events,
            )
        except PassAtTooHigh as exc:
            usage = "usage: codegenie-bench grade [-h] SLUG CANDIDATES [--pass-at K[,K...]]"
            detail = (
                f"--pass-at {exc.k} needs at least {exc.k} samples of every case; "
                f"case {exc.case.id!r} has {exc.samples}"
            )
            raise UsageError(usage, detail) from None
        return _document(graded.report, out, graded.cases, self.manifest.path, args.shard)


class _Events:
    """What the command line shows of a grading as it goes: notes, warnings, progress, lines.

    Text: each case's line in case-id order, printed as soon as it and every
    case before it are graded (and under ``-x``, at the end, those that
    arrived out of order); the progress line on a terminal.
    """

    def __init__(self, out: Output, candidates: Path) -> None:
        self.out = out
        self.candidates = candidates
        self.text = out.format == "text"
        self.colour = self.text and wants_colour(out.stdout)
        self.ready: dict[int, GradeResult] = {}
        self.printed = 0
        self.width = 0
        self.paths: list[Path] = []
        self.progress: Progress | None = None

    def note(self, text: str) -> None:
        self.out.note(text)

    def warning(self, text: str) -> None:
        if not self.out.quiet:
            self.out.stderr.write(f"codegenie-bench: warning: {escape_control(text)}\n")

    def invalid_apart(self, error: BenchCasesInvalid) -> None:
        from codegenie.eval.problems import error_diagnostics  # noqa: PLC0415 - start-up: only this command pays for it

        out = self.out
        if out.quiet:
            return
        ids = sorted({p.case for p in error.problems if p.case})
        out.stderr.write(
            f"codegenie-bench: note: not selected and not graded, {len(ids)} invalid "
            f"case{'s' if len(ids) != 1 else ''}: {escape_control(', '.join(ids))}\n"
        )
        found = error_diagnostics(error, out.manifest, error.task_class, tree=out.tree)
        out.diagnostics(found, stream=out.stderr, base=None)

    def started(self, task_class: TaskClass, cases: Sequence[Case]) -> None:
        self.width = max((len(case.id) for case in cases), default=0)
        # A reason names the rubric or a candidate by its absolute path; text shows it relative.
        self.paths = [p for p in (task_class.rubric, self.candidates.absolute()) if p is not None]
        out = self.out
        self.progress = Progress(
            out.stderr,
            task_class.name,
            len(cases),
            shown=not out.quiet and stderr_is_a_terminal(out.stderr),
        )
        self.progress.draw()

    def arrived(self, index: int, result: GradeResult) -> None:
        assert self.progress is not None
        self.progress.done += 1
        self.ready[index] = result
        if self.text and self.printed in self.ready:
            self.progress.clear()
            while self.printed in self.ready:
                self._write(self.printed)
                self.printed += 1
        self.progress.draw()

    def ended(self, *, completed: bool) -> None:
        if self.progress is not None:
            self.progress.clear()
        if completed and self.text:  # stopped (-x): the results that arrived out of order, in order
            for index in sorted(self.ready):
                self._write(index)

    def _write(self, index: int) -> None:
        from codegenie.eval._reports.text import result_line  # noqa: PLC0415 - start-up: only this command pays for it
        from codegenie.eval.problems import with_shown_paths  # noqa: PLC0415 - start-up: only this command pays for it

        def shown(reason: str) -> str:
            return with_shown_paths(reason, self.paths)

        result = self.ready.pop(index)
        line = result_line(result, self.width, colour=self.colour, shown=shown)
        self.out.stdout.write(line + "\n")
        if self.out.verbose and result.traceback:  # -v: where the rubric broke
            for trace in result.traceback.rstrip().splitlines():
                self.out.stdout.write("    " + escape_control(trace) + "\n")


# A k: ASCII digits, at least 1, at most nine of them (a billion samples is past any bench).
_K: Final = re.compile(r"0*[1-9][0-9]{0,8}")


def _pass_at_type(text: str) -> tuple[int, ...]:
    """Return ``K[,K…]`` as whole numbers of at least 1 (an argparse ``type``: ``--pass-at``)."""
    parts = [part.strip() for part in text.split(",")]
    if not all(_K.fullmatch(part) for part in parts):
        msg = f"expected whole numbers of at least 1, separated by commas (1,10,100), not {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return tuple(sorted({int(part) for part in parts}))


def _fraction(text: str) -> float:
    """Return ``text`` as a fraction between 0 and 1 (an argparse ``type``: ``--fail-under``)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        msg = f"expected a fraction between 0 and 1 (0.5 for half), not {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _document(
    report: GradeReport, out: Output, cases: Sequence[Case], manifest: Path, shard: Shard | None
) -> GradeDocument:
    """Return ``report`` as the document every format renders; append its summary to the CI job's.

    Under ``--format json`` the report carries what ``merge`` needs of a
    shard's: which bench, which cases, which slice of them.
    """
    from codegenie.eval._reports.documents import GradeDocument, Proof  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval._reports.summary import grade_summary  # noqa: PLC0415 - start-up: only this command pays for it

    proof = None
    if out.format == "json":
        digest = proven_bench_digest(manifest, out)
        proof = Proof(digest, (shard.index, shard.count) if shard else None)
    document = GradeDocument(
        report=report,
        manifest=manifest,
        case_files={case.id: case.directory / "case.toml" for case in cases},
        cases=tuple(sorted(case.id for case in cases)),
        proof=proof,
    )
    step_summary(grade_summary(document))
    return document


def _render(document: GradeDocument, out: Output) -> None:
    """Print one task class's report in ``out``'s format, then how many results were reused."""
    from codegenie.eval._reports.formats import render  # noqa: PLC0415 - start-up: only this command pays for it

    render(out.format, document, out)
    environment = document.report.environment
    if environment is not None:
        digest = environment.digest.removeprefix("blake2b-256:")[:12]
        out.note(
            f"rubrics ran in the task class's environment {digest} (Python {environment.python})"
        )
    reused = document.report.reused
    summary = document.report.ledger
    why = None if summary is None else summary.not_reused_sentence()
    if why is not None:
        out.note(why)
    elif reused:
        out.note(
            f"{reused} result{'s' if reused != 1 else ''} reused from earlier "
            "runs of unchanged cases and candidates (--no-cache runs every rubric)"
        )


def _case_id(text: str) -> str:
    """Return ``text`` when it is a valid case id (an argparse ``type``: ``--case``)."""
    from codegenie.eval.cases import case_id_problem  # noqa: PLC0415 - start-up: only this command pays for it

    problem = case_id_problem(text)
    if problem is not None:
        msg = f"invalid case id {text!r}: {problem}"
        raise argparse.ArgumentTypeError(msg)
    return text


def configure(parser: argparse.ArgumentParser) -> None:
    """Add grade's arguments; its settings' options are made from the settings table."""
    add_setting_options(
        parser,
        "grade",
        (_add_what, "jobs", _add_which, "sandbox", "executor", add_build_option),
    )


def _add_what(parser: argparse.ArgumentParser) -> None:
    """Add what is graded: the task class(es), the candidates, their samples, the run."""
    parser.add_argument(
        "slug", nargs="?", metavar="SLUG", help="the task class, e.g. vuln-remediation"
    )
    parser.add_argument(
        "candidates",
        nargs="?",
        type=Path,
        metavar="CANDIDATES",
        help="a directory holding one candidate directory per case (CANDIDATES/<case-id>/), "
        "with --samples one directory per sample (CANDIDATES/<case-id>/<sample-id>/), or a "
        'JSON Lines file of samples ({"case": ID, "files": {PATH: TEXT}} a line)',
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="grade every task class of the manifest, each from CANDIDATES/<slug>/ "
        "(a directory or a JSON Lines file), in one run and one report; give CANDIDATES alone",
    )
    parser.add_argument(
        "--samples",
        action="store_true",
        help="grade each CANDIDATES/<case-id>/<sample-id>/ as one sample of its case, "
        "and report pass@k (a JSON Lines file always holds samples)",
    )
    parser.add_argument(
        "--pass-at",
        type=_pass_at_type,
        default=None,
        metavar="K[,K...]",
        help="the k of pass@k (default: 1, and 10 and 100 where every case has that many samples)",
    )
    parser.add_argument(
        "--fail-under",
        type=_fraction,
        default=None,
        metavar="X",
        help="exit 1 when pass@1 is below X (a fraction, 0.5 for half); a failed case or "
        "sample then fails the command only through pass@1",
    )
    parser.add_argument(
        "--run-name",
        default=None,
        metavar="NAME",
        help="what this run is (the model, say): in the report's run identity, "
        "and merge refuses shards of differently named runs",
    )
    parser.add_argument(
        "--case",
        dest="cases",
        action="append",
        type=_case_id,
        default=None,
        metavar="ID",
        help="grade only this case (repeat for several; default: every case)",
    )


def _add_which(parser: argparse.ArgumentParser) -> None:
    """Add which cases are graded, and ``--show-settings``."""
    parser.add_argument(
        "-k",
        dest="keyword",
        default=None,
        metavar="EXPR",
        help="grade only the cases whose id holds EXPR, or matches it as a glob "
        "when it holds * ? or [ (e.g. -k 'cve-2024-*')",
    )
    parser.add_argument(
        "--tag",
        dest="tags",
        action="append",
        default=None,
        metavar="TAG",
        help="grade only the cases whose case.toml tags include TAG (repeat: any of them)",
    )
    parser.add_argument(
        "-x",
        "--exitfirst",
        action="store_true",
        help="stop at the first case that did not pass: cases not started are not graded",
    )
    parser.add_argument(
        "--lf",
        "--last-failed",
        dest="last_failed",
        action="store_true",
        help="grade only the cases that did not pass when this task class was last graded "
        "(every case when none is known)",
    )
    parser.add_argument(
        "--shard",
        type=shard_type,
        default=None,
        metavar="K/N",
        help="grade only slice K of N (1/4 … 4/4) of the cases, for a CI matrix "
        "(the split check --shard makes of slugs, on case ids)",
    )
    parser.add_argument(
        "--show-settings",
        action="store_true",
        help="print the settings this grading would use (jobs, sandbox, format) and where "
        "each came from, then exit without grading",
    )


COMMAND = Command(
    name="grade",
    summary="Run a task class's rubric on a candidate for each of its cases.",
    examples="""\
examples:
  codegenie-bench grade vuln-remediation runs/42           CANDIDATES_DIR/<case-id>/ per case
  codegenie-bench grade vuln-remediation runs/42 --case jinja2-cve-2024-22195 --jobs 4
  codegenie-bench grade vuln-remediation runs/42 --format json
  codegenie-bench grade humaneval runs/42 --samples --pass-at 1,10   CANDIDATES/<case>/<sample>/
  codegenie-bench grade humaneval samples.jsonl --run-name model-a --fail-under 0.5
  codegenie-bench grade --all runs/42                      CANDIDATES/<slug>/… for every task class
  codegenie-bench grade vuln-remediation runs/42 --show-settings   what pyproject.toml sets
""",
    run=run,
    configure=configure,
    imports_registrations=True,
)
