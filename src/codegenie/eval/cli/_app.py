"""Parse the command line, run one command, and report what it raised.

:func:`fail` is the one place where an error becomes output and an exit code;
:func:`internal_error` reports a bug (an exception no command expected).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final, NoReturn

from codegenie.eval._output import (
    ResultStream,
    escape_control,
    readable_data,
    reserve_stdout,
    wants_colour,
)
from codegenie.eval._reports.formats import commands_writing
from codegenie.eval.cli import (
    cmd_check,
    cmd_compare,
    cmd_env,
    cmd_explain,
    cmd_exploits,
    cmd_grade,
    cmd_init,
    cmd_list,
    cmd_merge,
    cmd_new,
    cmd_plan,
    cmd_schema,
    cmd_show,
)
from codegenie.eval.cli._base import (
    PROG,
    VERSION,
    Command,
    Output,
    UsageError,
    command_line_text,
    dumps,
)
from codegenie.eval.cli._settings_args import add_setting_option
from codegenie.eval.errors import EvalError, RunPlanError

__all__ = ("COMMANDS", "fail", "main")

#: Every subcommand, in the order ``--help`` lists them.
COMMANDS: Final[dict[str, Command]] = {
    command.name: command
    for command in (
        cmd_init.COMMAND,
        cmd_list.COMMAND,
        cmd_show.COMMAND,
        cmd_plan.COMMAND,
        cmd_check.COMMAND,
        cmd_explain.COMMAND,
        cmd_exploits.COMMAND,
        cmd_grade.COMMAND,
        cmd_merge.COMMAND,
        cmd_compare.COMMAND,
        cmd_env.COMMAND,
        cmd_new.COMMAND,
        cmd_schema.COMMAND,
    )
}

_EXAMPLES: Final = f"""\
examples:
  {PROG} init
  {PROG} new secret-rotation --description "Rotate a leaked credential."
  {PROG} show secret-rotation
  {PROG} plan --format json
  {PROG} check --strict --format github
  {PROG} explain rubric-imported
  {PROG} grade secret-rotation runs/42
  {PROG} compare base.json new.json --fail-on-regression
"""


# -- the parser ------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """An argument parser that raises ``UsageError`` instead of printing and exiting.

    Every argument but a path is text (a slug, a description, a root written
    into ``bench.toml``, a case id): before its type sees it, it goes through
    :func:`command_line_text`, which recovers what a locale that could not
    decode it made of it, or refuses it, naming it. A path (``type=Path``)
    keeps the form the file system gives names, which is what opens it. The
    subcommand's name and arguments pass through the parser of the whole
    command line as they are: the subcommand's parser converts each.
    """

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        if action.type is not Path and action.nargs != argparse.PARSER:
            try:
                arg_string = command_line_text(arg_string)
            except argparse.ArgumentTypeError as exc:
                raise argparse.ArgumentError(action, str(exc)) from None
        return super()._get_value(action, arg_string)

    def error(self, message: str) -> NoReturn:
        """Raise ``UsageError`` for ``message`` (argparse's own errors end here)."""
        raise UsageError(self.format_usage().strip(), message)


def _global_options(
    parser: argparse.ArgumentParser, *, defaults: bool, command: str | None = None
) -> None:
    """Add the global options; subcommand copies leave the top-level values alone.

    A subcommand's copy (``command``) shows only the formats that command
    writes; it still takes every name, so that one it does not write gets
    the same "only for" usage error wherever ``--format`` was typed.
    """

    def default(value: object) -> object:
        return value if defaults else argparse.SUPPRESS

    group = parser.add_argument_group("global options")
    group.add_argument(
        "-V", "--version", action="version", version=VERSION, help="print the version and exit"
    )
    group.add_argument(
        "--manifest",
        type=Path,
        metavar="PATH",
        default=default(None),
        help="the bench.toml to use (default: the nearest one in . or its parents)",
    )
    # None: not given, so check and grade may take it from [tool.codegenie-bench]
    # (_parse says text).
    add_setting_option(group, "format", command, default=default(None))
    group.add_argument(
        "--output-file",
        type=Path,
        metavar="PATH",
        default=default(None),
        help="write the report (what would go to stdout) to PATH instead, atomically",
    )
    group.add_argument(
        "--log-format",
        choices=("console", "json"),
        default=default("console"),
        help="log format on stderr (default: console)",
    )
    group.add_argument(
        "--no-cache",
        action="store_true",
        default=default(False),
        help=(
            "neither read nor write the caches: validate the manifest (list, show, plan, new;"
            " check always validates) and run every rubric again (grade, check --rubrics)"
        ),
    )
    group.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=default(0),
        help="show the traceback of a registration that raised, logs (-v info, -vv debug) "
        "and tracebacks of unexpected errors",
    )
    group.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=default(False),
        help="print results only: no notes or hints on stderr",
    )


def _parser() -> argparse.ArgumentParser:
    formatter = argparse.RawDescriptionHelpFormatter
    description = "Curate and resolve the task classes declared in bench.toml."
    parser = _Parser(
        prog=PROG, description=description, epilog=_EXAMPLES, formatter_class=formatter
    )
    _global_options(parser, defaults=True)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS.values():
        sub = subparsers.add_parser(
            command.name,
            help=command.summary,
            description=command.summary,
            epilog=command.examples,
            formatter_class=formatter,
        )
        _global_options(sub, defaults=False, command=command.name)
        command.configure(sub)
    return parser


def _requested_format(argv: Sequence[str]) -> str:
    """Return the ``--format`` that ``argv`` asks for, read even when it does not parse."""
    scout = _Parser(add_help=False)
    scout.add_argument("--format")
    try:
        known, _ = scout.parse_known_args(list(argv))
    except UsageError:  # a --format without a value: text, then
        return "text"
    return known.format if known.format in {"json", "github"} else "text"


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    """Parse ``argv``; raise ``UsageError`` for a command line that does not make sense."""
    parser = _parser()
    args = parser.parse_args(argv)
    args.format_given = args.format is not None
    if args.format is None:
        args.format = "text"
    allowed = commands_writing(args.format)
    if allowed is not None and args.command not in allowed:
        detail = f"--format {args.format} is only for {', '.join(allowed)}"
        raise UsageError(parser.format_usage().strip(), detail)
    return args


# -- reporting -------------------------------------------------------------------------


def _jsonable(value: object) -> object:
    from codegenie.eval.models import TaskClass  # noqa: PLC0415 - start-up: only this command pays for it

    if isinstance(value, Path):
        return str(value)
    if isinstance(value, EvalError):
        return _error_document(value)
    if isinstance(value, TaskClass):
        return value.to_json()
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if hasattr(value, "__dataclass_fields__"):
        return {k: _jsonable(getattr(value, k)) for k in value.__dataclass_fields__}
    return value


def _error_document(error: EvalError) -> dict[str, Any]:
    return {
        "type": type(error).__name__,
        "exit_code": error.exit_code,
        "code": error.code,
        "message": str(error),
        "hint": error.hint,
        "attributes": _jsonable(error.attributes()),
    }


def fail(error: EvalError, out: Output) -> int:
    """Report ``error`` and return its exit code: the one place errors become exit codes.

    Text: its diagnostics on stderr (a usage error: argparse's usage line and
    message). JSON: one error document on stdout. GitHub: one workflow
    command per diagnostic on stdout. Diagnostics are worded and located as
    ``check`` would (:func:`codegenie.eval.problems.error_diagnostics`), with
    what the command was working on (``out.manifest``, ``out.slug``).
    """
    from codegenie.eval.problems import error_diagnostics  # noqa: PLC0415 - start-up: only this command pays for it

    found = error_diagnostics(error, out.manifest, out.slug, tree=out.tree)
    if out.json:
        document = _error_document(error)
        document["diagnostics"] = [d.to_json() for d in found]
        out.stdout.write(dumps({"error": document}))
        return error.exit_code
    if out.format == "github":
        base = out.manifest.directory if out.manifest is not None else None
        out.diagnostics(found, stream=out.stdout, base=base)
    elif isinstance(error, UsageError):
        usage = "".join(escape_control(line) + "\n" for line in error.usage.splitlines())
        out.stderr.write(f"{usage}{PROG}: error: {escape_control(error.detail)}\n")
    else:
        out.diagnostics(found, stream=out.stderr, base=None)
    if isinstance(error, RunPlanError):
        total = len(error.errors) + len(error.resolved)
        out.note(f"{len(error.errors)} of {total} task classes failed to resolve")
    return error.exit_code


def internal_error(error: Exception, out: Output) -> int:
    """Report a bug (an exception no command expected): exit 1, the traceback with ``-v``."""
    try:
        detail = str(error)
    except Exception:  # the bug's own __str__ may be broken too
        detail = f"<unprintable {type(error).__name__} object>"
    message = f"internal error: {type(error).__name__}: {detail}"
    hint = "run again with -v for the traceback, and report it"
    if out.json:
        document = {
            "type": type(error).__name__,
            "exit_code": 1,
            "code": "internal-error",
            "message": message,
            "hint": hint,
            "attributes": {},
            "diagnostics": [],
        }
        out.stdout.write(dumps({"error": document}))
    if out.verbose:
        lines = "".join(traceback.format_exception(error)).splitlines()
        out.stderr.write("".join(escape_control(line) + "\n" for line in lines))
    elif not out.json:
        out.stderr.write(f"{PROG}: {escape_control(message)}\n  hint: {hint}\n")
    return 1


# -- running ---------------------------------------------------------------------------


@contextlib.contextmanager
def _registrations_off_stdout(*, console: bool) -> Iterator[ResultStream]:
    """Yield the stream for results while registrations cannot write to stdout.

    In a console process the results go to a private copy of file
    descriptor 1, which now points at stderr for good (:func:`reserve_stdout`),
    so ``os.write(1, …)``, ``sys.__stdout__``, child processes and threads
    that outlive the import all write to stderr. In-process (tests, embedding)
    only ``sys.stdout`` is redirected, for the duration of the command.
    """
    if console:
        results = ResultStream(reserve_stdout())
        try:
            yield results
        finally:
            results.close()
        return
    results = ResultStream(sys.stdout)
    with contextlib.redirect_stdout(sys.stderr):
        yield results


def _configure_logging(args: argparse.Namespace) -> None:
    """Send the library's log events to stderr when -v asks for them.

    Logs are off by default (diagnostics carry the errors). Then structlog is
    not even imported, and the library, finding it unused, emits nothing.
    Console logs are coloured by the same rule as diagnostics (:func:`wants_colour`).
    """
    if args.quiet or not args.verbose:
        return
    import logging  # noqa: PLC0415 - start-up: only this command pays for it

    import structlog  # noqa: PLC0415 - only when logs are wanted

    level = logging.INFO if args.verbose == 1 else logging.DEBUG
    processors: list[Any] = [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if args.log_format == "json":
        processors += [_readable_log_values, structlog.processors.JSONRenderer(sort_keys=True)]
    else:
        processors += [
            _escape_log_strings,
            structlog.dev.ConsoleRenderer(colors=wants_colour(sys.stderr)),
        ]
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(level),
        # Looked up per logger, so a replaced sys.stderr (tests, redirection) is honoured.
        logger_factory=lambda *_: structlog.PrintLogger(sys.stderr),
        cache_logger_on_first_use=False,
    )


def _escape_log_strings(_logger: object, _method: str, event: dict[str, Any]) -> dict[str, Any]:
    """Escape control characters in a console log line's strings (JSON escapes its own)."""
    event = _readable_log_values(_logger, _method, event)
    return {key: escape_control(v) if isinstance(v, str) else v for key, v in event.items()}


def _readable_log_values(_logger: object, _method: str, event: dict[str, Any]) -> dict[str, Any]:
    """Write a log line's paths that the locale could not decode as the text they stand for."""
    return {key: readable_data(value) for key, value in event.items()}


def main(argv: Sequence[str] | None = None, *, console: bool = False) -> int:
    """Run ``codegenie-bench`` with ``argv`` (default ``sys.argv[1:]``); return the exit code.

    0 success; 1, 3, 4 as the error's class says (docs/errors.md); 2 a
    command-line usage error. No traceback for an expected failure; an
    unexpected one shows its traceback with ``-v``. Under ``--format json``
    every failure is a JSON error document on stdout. A reader that goes
    away early, or a closed stdout, drops the rest of the output quietly;
    the exit status is the command's own.

    ``console=True`` says that this call is the whole process (the console
    script): the commands that import registrations then point file
    descriptor 1 at stderr for the rest of the process. Otherwise only
    ``sys.stdout`` is redirected while they run.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = _parse(argv)
    except UsageError as error:
        fallback = argparse.Namespace(format=_requested_format(argv), quiet=False, verbose=0)
        return fail(error, Output(fallback, ResultStream(sys.stdout), sys.stderr))
    except SystemExit as exit_:  # --help or --version, printed on stdout
        return exit_.code if isinstance(exit_.code, int) else 0
    command = COMMANDS[args.command]
    if args.output_file is not None:
        return _to_file(command, args, args.output_file, console=console)
    if not command.imports_registrations:
        return _run(command, args, Output(args, ResultStream(sys.stdout), sys.stderr))
    _configure_logging(args)
    with _registrations_off_stdout(console=console) as stdout:
        return _run(command, args, Output(args, stdout, sys.stderr))


def _to_file(command: Command, args: argparse.Namespace, path: Path, *, console: bool) -> int:
    """Run the command with its results collected, then write them to ``path`` in one piece.

    The file is replaced atomically, so a reader never sees half a report;
    one that cannot be written is reported on stderr (exit 1).
    """
    from codegenie.eval._reports.files import write_report  # noqa: PLC0415 - start-up: only --output-file pays for it

    buffer = io.StringIO()
    results = ResultStream(buffer)
    if command.imports_registrations:
        _configure_logging(args)
        with _registrations_off_stdout(console=console):
            code = _run(command, args, Output(args, results, sys.stderr))
    else:
        code = _run(command, args, Output(args, results, sys.stderr))
    try:
        write_report(path, buffer.getvalue())
    except OSError as error:
        sys.stderr.write(
            f"{PROG}: error: cannot write {escape_control(str(path))}: "
            f"{escape_control(error.strerror or str(error))}\n"
        )
        return 1
    return code


def _run(command: Command, args: argparse.Namespace, out: Output) -> int:
    """Run the command; map what it raises to an exit code (and a report)."""
    try:
        try:
            return command.run(args, out)
        except EvalError as error:
            return fail(error, out)
    except Exception as error:  # a bug, in the command or in reporting its error
        return internal_error(error, out)
