"""``codegenie-bench check``: every inconsistency of the manifest and the bench tree (CI gate)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from codegenie.eval._output import escape_control
from codegenie.eval.cli._base import (
    Command,
    Output,
    UsageError,
    add_build_option,
    choose_executor,
    choose_sandbox,
    executor_flags,
    executor_options_given,
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
    from codegenie.eval.check import CheckReport, Shard

__all__ = ("COMMAND",)

_USAGE: Final = "usage: codegenie-bench check [-h] [SLUG ...] [options]"


def run(args: argparse.Namespace, out: Output) -> int:
    """Check the bench; print the diagnostics on stdout (they are the result), a summary on stderr.

    Exit 0 when there is no error (and, under ``--strict``, no warning), else
    1; 4 when there is no manifest it can read (missing, or not TOML: the
    exit code of that mistake in every command).
    """
    from codegenie.eval.check import CheckOptions, RubricChecks, run_check  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval.check.exploit_choice import ExploitSelection  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval.errors import BenchManifestInvalid, InvalidTaskClassName  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval.naming import slug_problem  # noqa: PLC0415 - start-up: only this command pays for it

    if not args.rubrics and not args.show_settings:
        # What only a rubric run uses, typed without --rubrics: a mistake, never silently dropped.
        # (A table's `repeat` is passed over instead: one table serves the plain and the
        # --rubrics job alike.)
        only_rubrics = (
            (args.repeat is not None, "--repeat"),
            (args.exploits is not None, "--exploits"),
            (args.ignore_exploits is not None, "--ignore-exploits"),
            (args.no_build, "--no-build"),
        )
        for given, option in only_rubrics:
            if given:
                raise UsageError(
                    _USAGE, f"{option} is for check --rubrics: add --rubrics, or drop {option}"
                )
    for slug in args.slugs:
        reason = slug_problem(slug)
        if reason is not None:
            _read_for_suggestions(args, out)
            raise InvalidTaskClassName(slug, reason)
    path = manifest_path(args)
    # The command line's, else [tool.codegenie-bench]'s (at or above the manifest), else defaults.
    settings = read_settings(args, out, path)
    if args.show_settings:
        out.result(settings.to_json(), settings.render())
        return 0
    options = settings.options
    rubrics = None
    executor = None
    if args.rubrics:
        executor = choose_executor(options.executor, args, _USAGE)
        sandbox = choose_sandbox(options.sandbox, out, here=executor.runs_here)
        rubrics = RubricChecks(
            sandbox=sandbox,
            repeat=options.repeat,
            reuse=not args.no_cache,
            build=not args.no_build,
            on_build=None if out.quiet else _say_build(out),
            executor=executor,
            exploits=ExploitSelection(select=options.exploits, ignore=options.ignore_exploits),
        )
    elif args.executor is not None or executor_options_given(args):
        flags = " and ".join(("--executor", *executor_flags()))
        raise UsageError(_USAGE, f"{flags} are for check --rubrics")
    progress = Progress(
        out.stderr,
        "rubrics",
        0,
        shown=args.rubrics and not out.quiet and stderr_is_a_terminal(out.stderr),
        verb="checking",
    )

    def advanced(done: int, total: int) -> None:
        progress.done, progress.total = done, total
        progress.draw()

    try:
        report = run_check(
            path,
            CheckOptions(
                jobs=options.jobs,
                timeout=options.timeout,
                shard=args.shard,
                slugs=args.slugs or None,
                select=options.select,
                ignore=options.ignore,
                rubrics=rubrics,
            ),
            on_progress=advanced,
        )
    finally:
        progress.clear()
        if executor is not None:
            executor.close()
    summary = None if report.rubrics is None else report.rubrics.ledger
    why = None if summary is None else summary.not_reused_sentence("rubric result")
    if why is not None:
        out.note(why)
    elif report.rubrics is not None and report.rubrics.reused:
        reused = report.rubrics.reused
        out.note(
            f"{reused} rubric result{'s' if reused != 1 else ''} reused from earlier runs of "
            "unchanged cases (--no-cache runs every rubric)"
        )
    _report(out, report, strict=options.strict, shard=args.shard)
    if not report.readable:
        return BenchManifestInvalid.exit_code
    return 0 if report.ok(strict=options.strict) else 1


def _read_for_suggestions(args: argparse.Namespace, out: Output) -> None:
    """Read the manifest so that an invalid slug is answered with the declared slugs close to it.

    Nothing else is looked at first: the slug is refused (exit 1) whatever the
    manifest is, and a manifest that cannot be read only leaves the
    suggestions to the slug's own form (none found, none readable: still exit 1).
    """
    from codegenie.eval.errors import EvalError  # noqa: PLC0415 - start-up: only this command pays for it

    with contextlib.suppress(EvalError):
        load_manifest(args, out)


def _report(out: Output, report: CheckReport, *, strict: bool, shard: Shard | None) -> None:
    """Write ``report`` in the chosen format, and the step summary when CI asks for one."""
    from codegenie.eval._reports.documents import CheckDocument, Proof  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval._reports.formats import render  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval._reports.summary import check_summary  # noqa: PLC0415 - start-up: only this command pays for it

    proof = None
    if out.format == "json":  # the proof merge needs: which bench, which slice of it
        digest = proven_bench_digest(report.manifest, out)
        proof = Proof(digest, (shard.index, shard.count) if shard else None)
    document = CheckDocument.of(report, strict=strict, proof=proof)
    step_summary(check_summary(document))
    render(out.format, document, out)


def _say_build(out: Output) -> Callable[[str], None]:
    """Return what tells stderr, in one line, that an environment is being built."""

    def say(line: str) -> None:
        out.stderr.write(f"codegenie-bench: {escape_control(line)}\n")

    return say


def configure(parser: argparse.ArgumentParser) -> None:
    """Add check's options; its settings' options are made from the settings table."""
    add_setting_options(
        parser,
        "check",
        (
            _add_slugs,
            "jobs",
            "timeout",
            _add_shard,
            "strict",
            "select",
            "ignore",
            _add_show_settings,
            _add_rubrics,
            "repeat",
            "exploits",
            "ignore-exploits",
            "sandbox",
            "executor",
            add_build_option,
        ),
    )


def _add_slugs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "slugs",
        nargs="*",
        metavar="SLUG",
        help="check only these task classes, and the manifest itself (default: every one)",
    )


def _add_shard(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--shard",
        type=shard_type,
        default=None,
        metavar="K/N",
        help="check only slice K of N (1/4 … 4/4) of the slugs, for a CI matrix",
    )


def _add_show_settings(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--show-settings",
        action="store_true",
        help="print the settings in force and where each came from, then exit",
    )


def _add_rubrics(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rubrics",
        action="store_true",
        help="also run every case's rubric on copies of expected/ (must pass), input/ (must fail)",
    )


COMMAND = Command(
    name="check",
    summary="Report every inconsistency of the manifest and the bench tree.",
    examples="""\
examples:
  codegenie-bench check                         every problem, compiler-style
  codegenie-bench check -v                      with the traceback of each registration that raised
  codegenie-bench check --strict --format github   in a GitHub Actions job
  codegenie-bench check --shard 2/4 --jobs 8     one slice of a CI matrix
  codegenie-bench check secret-rotation          one task class (and the manifest)
  codegenie-bench check --show-settings         what pyproject.toml sets, and from where
""",
    run=run,
    configure=configure,
    imports_registrations=True,
)
