"""``codegenie-bench``: the command line for curators, the harness and CI.

The only module that prints, reads ``sys.argv``, exits or configures logging.
``main(argv)`` returns the exit code; exceptions map to exit codes through
their class's ``exit_code`` in one place (:func:`_fail`), never through
message text. Modules are imported inside the commands that need them, so the
cheap commands (``--help``, ``--version``, ``list``, ``schema``) import neither
the loader nor structlog.

Output is hostile-proof (design section 10): every string from a manifest, a
path or a registration is printed with its control characters escaped; a
reader that goes away or a closed stdout ends the command quietly with its
usual exit status; under ``--format json`` every failure, usage errors and
internal errors included, is one JSON error document on stdout. The commands
that import registrations (``show``, ``plan``, ``check``) write their results
to a private copy of stdout while file descriptor 1 points at stderr, so
nothing a registration writes, by any route, reaches stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO, final

from codegenie.eval._output import ResultStream, escape_control, reserve_stdout
from codegenie.eval._version import __version__
from codegenie.eval.diagnostics import Diagnostic
from codegenie.eval.errors import (
    BenchCaseLoadError,
    BenchManifestInvalid,
    BenchRootNotFound,
    EvalError,
    InvalidTaskClassName,
    RunPlanError,
    TaskClassModuleMismatch,
    TaskClassNotFound,
    TaskClassRegistrationFailed,
    TaskClassRootConflict,
)

if TYPE_CHECKING:
    from codegenie.eval.manifest import BenchManifest
    from codegenie.eval.models import TaskClass

__all__ = ("UsageError", "main")

PROG = "codegenie-bench"
EXIT_USAGE = 2
VERSION = f"{PROG} {__version__}"

#: The commands that import registration modules: their stdout is protected.
_IMPORTING = frozenset({"show", "plan", "check"})


@final
class UsageError(EvalError):
    """The command line itself is wrong: an unknown option, a missing argument (exit 2).

    ``usage`` is the usage line of the command concerned and ``detail`` what
    is wrong with the command line.
    """

    code = "usage-error"
    exit_code = EXIT_USAGE
    fields = ("usage", "detail")

    def __init__(self, usage: str, detail: str) -> None:
        self.usage = usage
        self.detail = detail
        super().__init__(detail)

    @property
    def hint(self) -> str:
        """Where to read how the command is used."""
        return f"run `{PROG} --help` for the commands and options"


# -- the parser ------------------------------------------------------------------

_DESCRIPTION = """\
Curate and resolve the task classes declared in bench.toml.

Commands:
  list      list the declared task classes (imports nothing)
  show      resolve one task class and print it
  plan      resolve task classes into a run plan
  check     report every inconsistency of the bench (CI gate)
  new       scaffold a task class and add it to bench.toml
  schema    print the JSON Schema of bench.toml
"""

_EXAMPLES = {
    None: """\
examples:
  codegenie-bench list
  codegenie-bench show vuln-remediation
  codegenie-bench plan --format json
  codegenie-bench check --strict --format github
  codegenie-bench new secret-rotation --description "Rotate a leaked credential."
""",
    "list": """\
examples:
  codegenie-bench list
  codegenie-bench list --format json --manifest path/to/bench.toml
""",
    "show": """\
examples:
  codegenie-bench show vuln-remediation
  codegenie-bench show vuln-remediation --format json
""",
    "plan": """\
examples:
  codegenie-bench plan                      every task class, in manifest order
  codegenie-bench plan vuln-remediation migration-chainguard-distroless --format json
""",
    "check": """\
examples:
  codegenie-bench check                         every problem, compiler-style
  codegenie-bench check --strict --format github   in a GitHub Actions job
  codegenie-bench check --shard 2/4 --jobs 8     one slice of a CI matrix
""",
    "new": """\
examples:
  codegenie-bench new secret-rotation
  codegenie-bench new secret-rotation --root bench --description "Rotate a leaked credential."
""",
    "schema": """\
examples:
  codegenie-bench schema > docs/bench.schema.json
""",
}


def _global_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """Add the global options; subcommand copies leave the top-level values alone."""

    def default(value: object) -> object:
        return value if defaults else argparse.SUPPRESS

    group = parser.add_argument_group("global options")
    group.add_argument("--version", action="version", version=VERSION, help="print the version")
    group.add_argument(
        "--manifest",
        type=Path,
        metavar="PATH",
        default=default(None),
        help="the bench.toml to use (default: the nearest one in . or its parents)",
    )
    group.add_argument(
        "--format",
        choices=("text", "json", "github"),
        default=default("text"),
        help="output format (default: text; github: workflow annotations, check only)",
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
        help="neither read nor write the cache of validated manifests (list)",
    )
    group.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=default(0),
        help="show logs (-v info, -vv debug) and tracebacks of unexpected errors",
    )
    group.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=default(False),
        help="print results only: no notes or hints on stderr",
    )


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        msg = f"must be at least 1, not {value}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        msg = f"must be more than 0, not {text}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _shard(text: str) -> object:
    from codegenie.eval.check import Shard  # noqa: PLC0415

    try:
        return Shard.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class _Parser(argparse.ArgumentParser):
    """An argument parser that raises ``UsageError`` instead of printing and exiting."""

    def error(self, message: str) -> NoReturn:
        """Raise ``UsageError`` for ``message`` (argparse's own errors end here)."""
        raise UsageError(self.format_usage().strip(), message)


def _parser() -> argparse.ArgumentParser:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = _Parser(
        prog=PROG, description=_DESCRIPTION, epilog=_EXAMPLES[None], formatter_class=formatter
    )
    _global_options(parser, defaults=True)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, summary: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(
            name,
            help=summary,
            description=summary,
            epilog=_EXAMPLES[name],
            formatter_class=formatter,
        )
        _global_options(sub, defaults=False)
        return sub

    command("list", "List the task classes declared in bench.toml; imports no task class.")
    show = command("show", "Resolve one task class (import its registration) and print it.")
    show.add_argument("slug", help="the task class, e.g. vuln-remediation")
    plan = command("plan", "Resolve task classes into a run plan, as Runner.plan does.")
    plan.add_argument("slugs", nargs="*", metavar="SLUG", help="default: every declared one")
    check = command("check", "Report every inconsistency of the manifest and the bench tree.")
    check.add_argument(
        "--jobs",
        type=_positive_int,
        default=None,
        metavar="N",
        help="worker processes importing registrations (default: the number of CPUs)",
    )
    check.add_argument(
        "--timeout",
        type=_positive_float,
        default=60.0,
        metavar="SECONDS",
        help="how long one registration may take to import (default: 60)",
    )
    check.add_argument(
        "--shard",
        type=_shard,
        default=None,
        metavar="K/N",
        help="check only slice K of N (1/4 … 4/4) of the slugs, for a CI matrix",
    )
    check.add_argument(
        "--strict", action="store_true", help="fail on warnings too, not only on errors"
    )
    new = command("new", "Scaffold bench/<package>/ for a new task class and add it to bench.toml.")
    new.add_argument("slug", help="the new task class's slug, e.g. secret-rotation")
    new.add_argument(
        "--root", default="bench", help="root directory, relative to bench.toml (default: bench)"
    )
    new.add_argument("--description", help="one line saying what the task class asks for")
    command("schema", "Print the JSON Schema of bench.toml (what editors validate against).")
    return parser


# -- output helpers ----------------------------------------------------------------


class _Output:
    """Where results (stdout) and notes (stderr) go, in the chosen format.

    ``stdout`` is a :class:`ResultStream`: a reader that goes away makes the
    rest of the results vanish quietly. Notes are printed with their control
    characters escaped.
    """

    def __init__(self, args: argparse.Namespace, stdout: ResultStream, stderr: TextIO) -> None:
        self.json = args.format == "json"
        self.quiet = args.quiet
        self.verbose = args.verbose
        self.stdout = stdout
        self.stderr = stderr

    def result(self, document: dict[str, Any], text: str) -> None:
        """Print the JSON ``document`` or the (already escaped) ``text``."""
        if self.json:
            self.stdout.write(_dumps(document))
        elif text:
            self.stdout.write(text if text.endswith("\n") else text + "\n")

    def note(self, text: str) -> None:
        """Print one line of ``text`` on stderr, unless quiet or under JSON."""
        if not self.quiet and not self.json:
            self.stderr.write(escape_control(text) + "\n")


def _dumps(document: object) -> str:
    """Return ``document`` as JSON text: ASCII only, so valid under any locale."""
    return json.dumps(document, indent=2, ensure_ascii=True) + "\n"


def _jsonable(value: object) -> object:
    from codegenie.eval.models import TaskClass  # noqa: PLC0415

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


def _entry_position(
    manifest: BenchManifest | None, slug: str | None, key: str | None = None
) -> tuple[str | None, int | None, int | None]:
    if manifest is None:
        return (None, None, None)
    if slug is None or slug not in manifest:
        line, column = manifest.position("task-classes")
        return (str(manifest.path), line, column)
    path = ("task-classes", slug) if key is None else ("task-classes", slug, key)
    line, column = manifest.position(*path)
    return (str(manifest.path), line, column)


def _diagnostics(
    error: EvalError, manifest: BenchManifest | None, slug: str | None
) -> list[Diagnostic]:
    """Locate ``error`` for a curator: in the manifest, or in the file that failed."""
    if isinstance(error, BenchManifestInvalid):
        return [
            Diagnostic(
                code=error.code,
                severity="error",
                message=f"{p.key}: {p.message}" if p.key else p.message,
                file=str(error.path),
                line=p.line,
                column=p.column,
                hint=error.hint if i == len(error.problems) - 1 else None,
            )
            for i, p in enumerate(error.problems)
        ]
    if isinstance(error, RunPlanError):
        found = []
        for failed_slug, failure in error.errors.items():
            found += _diagnostics(failure, manifest, failed_slug)
        return found
    slug = getattr(error, "name", slug)
    where: tuple[str | None, int | None, int | None] = (None, None, None)
    if isinstance(error, InvalidTaskClassName):
        pass  # a command-line argument: no file to point at
    elif isinstance(error, TaskClassRegistrationFailed) and error.source is not None:
        where = (str(error.source), error.line, 1 if error.line is not None else None)
    elif isinstance(error, TaskClassNotFound):
        if error.looked_up_in.endswith(".toml"):
            where = _entry_position(manifest, None)
        else:
            where = _entry_position(manifest, slug, "module")
    elif isinstance(error, TaskClassRootConflict | BenchRootNotFound):
        where = _entry_position(manifest, slug, "root")
    elif isinstance(error, BenchCaseLoadError | TaskClassModuleMismatch):
        where = _entry_position(manifest, slug, "module")
    elif manifest is not None:
        where = _entry_position(manifest, slug)
    if getattr(error, "path", None) is not None and where[0] is None:
        where = (str(error.path), None, None)  # type: ignore[attr-defined]
    file, line, column = where
    return [
        Diagnostic(
            code=error.code,
            severity="error",
            message=str(error),
            file=file,
            line=line,
            column=column,
            slug=slug,
            hint=error.hint,
        )
    ]


def _fail(
    error: EvalError, out: _Output, manifest: BenchManifest | None = None, slug: str | None = None
) -> int:
    """Report ``error`` and return its exit code: the one place errors become exit codes."""
    if out.json:
        document = _error_document(error)
        document["diagnostics"] = [d.to_json() for d in _diagnostics(error, manifest, slug)]
        out.stdout.write(_dumps({"error": document}))
        return error.exit_code
    if isinstance(error, UsageError):
        usage = "".join(escape_control(line) + "\n" for line in error.usage.splitlines())
        out.stderr.write(f"{usage}{PROG}: error: {escape_control(error.detail)}\n")
        return error.exit_code
    out.stderr.write(_render_text(_diagnostics(error, manifest, slug), quiet=out.quiet))
    return error.exit_code


def _render_text(diagnostics: Sequence[Diagnostic], *, quiet: bool) -> str:
    """Return the diagnostics in compiler style, without hint lines when ``quiet``."""
    lines = []
    for diagnostic in diagnostics:
        text = diagnostic.render_text()
        if quiet:
            text = text.split("\n  hint: ", 1)[0]
        lines.append(text + "\n")
    return "".join(lines)


def _internal_error(error: Exception, out: _Output) -> int:
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
        out.stdout.write(_dumps({"error": document}))
    if out.verbose:
        lines = "".join(traceback.format_exception(error)).splitlines()
        out.stderr.write("".join(escape_control(line) + "\n" for line in lines))
    elif not out.json:
        out.stderr.write(f"{PROG}: {escape_control(message)}\n  hint: {hint}\n")
    return 1


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
    """
    if args.quiet or not args.verbose:
        return
    import logging  # noqa: PLC0415

    import structlog  # noqa: PLC0415 - only when logs are wanted

    level = logging.INFO if args.verbose == 1 else logging.DEBUG
    processors: list[Any] = [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if args.log_format == "json":
        processors.append(structlog.processors.JSONRenderer(sort_keys=True))
    else:
        processors += [
            _escape_log_strings,
            structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty()),
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
    return {key: escape_control(v) if isinstance(v, str) else v for key, v in event.items()}


def _load_manifest(args: argparse.Namespace) -> BenchManifest:
    from codegenie.eval.manifest import (  # noqa: PLC0415
        BenchManifest,
        find_manifest,
        load_manifest_cached,
    )

    path = args.manifest if args.manifest is not None else find_manifest(Path.cwd())
    if args.no_cache:
        return BenchManifest.load(path)
    return load_manifest_cached(str(path.absolute()))


def _root_for(manifest: BenchManifest, slug: str) -> Path:
    # An undeclared slug is refused by the loader (with suggestions) before it
    # looks at the root, so any existing directory will do.
    return manifest.root_dir(slug) if slug in manifest else manifest.directory


def _describe(task_class: TaskClass) -> str:
    """Return ``show``'s text: one ``key: value`` line per field, values escaped."""
    document = task_class.to_json()
    width = max(len(key) for key in document) + 1
    return "\n".join(
        f"{key + ':':<{width}} {escape_control(str(value))}" for key, value in document.items()
    )


def _columns(rows: Sequence[tuple[str, ...]]) -> str:
    """Return ``rows`` as aligned columns, each cell's control characters escaped."""
    if not rows:
        return ""
    rows = [tuple(escape_control(cell) for cell in row) for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)


# -- commands ----------------------------------------------------------------------


def _cmd_list(args: argparse.Namespace, out: _Output) -> int:
    from codegenie.eval import _listing  # noqa: PLC0415
    from codegenie.eval.manifest import (  # noqa: PLC0415
        BenchManifest,
        find_manifest,
        read_manifest_bytes,
    )

    path = (args.manifest or find_manifest(Path.cwd())).absolute()
    data = read_manifest_bytes(path)
    listing = None if args.no_cache else _listing.read_cached(data)
    if listing is None:
        manifest = BenchManifest.from_bytes(data, path)
        listing = (
            list(manifest.slugs()),
            [entry.module for _, entry in manifest],
            [entry.root for _, entry in manifest],
        )
        if not args.no_cache:
            _listing.store(data, listing)
    if out.json:
        out.stdout.write(_listing.render_json(str(path), listing))
    else:
        slugs, modules, roots = ([escape_control(cell) for cell in column] for column in listing)
        out.stdout.write(_listing.render_text((slugs, modules, roots)))
    if not listing[0]:
        out.note(f"{path}: no task classes declared")
    return 0


def _cmd_show(args: argparse.Namespace, out: _Output) -> int:
    from codegenie.eval.loader import load_task_class  # noqa: PLC0415
    from codegenie.eval.registry import TaskClassRegistry  # noqa: PLC0415

    _configure_logging(args)
    manifest = _load_manifest(args)
    try:
        task_class = load_task_class(
            args.slug,
            _root_for(manifest, args.slug),
            registry=TaskClassRegistry(),
            manifest=manifest,
        )
    except EvalError as error:
        return _fail(error, out, manifest, args.slug)
    out.result(task_class.to_json(), _describe(task_class))
    return 0


def _cmd_plan(args: argparse.Namespace, out: _Output) -> int:
    import asyncio  # noqa: PLC0415

    from codegenie.eval.registry import TaskClassRegistry  # noqa: PLC0415
    from codegenie.eval.runner import Runner  # noqa: PLC0415

    _configure_logging(args)
    manifest = _load_manifest(args)
    runner = Runner(manifest, registry=TaskClassRegistry())
    try:
        plan = asyncio.run(runner.plan(args.slugs or None))
    except RunPlanError as error:
        if not out.json and error.resolved:
            rows = [(tc.name, tc.module, str(tc.source)) for tc in error.resolved]
            out.result({}, _columns(rows))
        code = _fail(error, out, manifest)
        total = len(error.errors) + len(error.resolved)
        out.note(f"{len(error.errors)} of {total} task classes failed to resolve")
        return code
    rows = [(tc.name, tc.module, str(tc.source)) for tc in plan.task_classes]
    out.result(plan.to_json(), _columns(rows))
    return 0


def _cmd_check(args: argparse.Namespace, out: _Output) -> int:
    from codegenie.eval.check import run_check  # noqa: PLC0415
    from codegenie.eval.manifest import find_manifest  # noqa: PLC0415

    path = args.manifest if args.manifest is not None else find_manifest(Path.cwd())
    report = run_check(path, jobs=args.jobs, timeout=args.timeout, shard=args.shard)
    if args.format == "json":
        out.result(report.to_json(strict=args.strict), "")
    elif args.format == "github":
        lines = [d.render_github() for d in report.diagnostics]
        # A plain log line, escaped so that no path can start a workflow command.
        lines.append(escape_control(report.summary()))
        out.stdout.write("".join(line + "\n" for line in lines))
    else:
        out.stdout.write(_render_text(report.diagnostics, quiet=out.quiet))
        out.note(report.summary())
    return 0 if report.ok(strict=args.strict) else 1


def _cmd_new(args: argparse.Namespace, out: _Output) -> int:
    from codegenie.eval.scaffold import scaffold_task_class  # noqa: PLC0415

    manifest = _load_manifest(args)
    created = scaffold_task_class(manifest, args.slug, root=args.root, description=args.description)
    document = {
        "slug": created.slug,
        "module": created.module,
        "directory": str(created.directory),
        "files": [str(f) for f in created.files],
        "manifest": str(created.manifest),
    }
    text = "\n".join(escape_control(str(f)) for f in created.files)
    out.result(document, text)
    out.note(
        f"added [task-classes.{created.slug}] to {created.manifest}; "
        f"try: {PROG} show {created.slug}"
    )
    return 0


def _cmd_schema(args: argparse.Namespace, out: _Output) -> int:
    from codegenie.eval.manifest import json_schema  # noqa: PLC0415

    out.stdout.write(_dumps(json_schema()))
    return 0


_COMMANDS: dict[str, Callable[[argparse.Namespace, _Output], int]] = {
    "list": _cmd_list,
    "show": _cmd_show,
    "plan": _cmd_plan,
    "check": _cmd_check,
    "new": _cmd_new,
    "schema": _cmd_schema,
}


def _json_requested(argv: Sequence[str]) -> bool:
    """Whether ``argv`` asks for ``--format json``, read even when it does not parse."""
    scout = _Parser(add_help=False)
    scout.add_argument("--format")
    try:
        known, _ = scout.parse_known_args(list(argv))
    except UsageError:  # a --format without a value: not json, then
        return False
    return bool(known.format == "json")


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    """Parse ``argv``; raise ``UsageError`` for a command line that does not make sense."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.format == "github" and args.command != "check":
        raise UsageError(parser.format_usage().strip(), "--format github is only for check")
    return args


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
        fallback = argparse.Namespace(format="json" if _json_requested(argv) else "text")
        vars(fallback).update(quiet=False, verbose=0)
        return _fail(error, _Output(fallback, ResultStream(sys.stdout), sys.stderr))
    except SystemExit as exit_:  # --help or --version, printed on stdout
        return exit_.code if isinstance(exit_.code, int) else 0
    if args.command not in _IMPORTING:
        return _run(args, _Output(args, ResultStream(sys.stdout), sys.stderr))
    with _registrations_off_stdout(console=console) as stdout:
        return _run(args, _Output(args, stdout, sys.stderr))


def _run(args: argparse.Namespace, out: _Output) -> int:
    """Run the command; map what it raises to an exit code (and a report)."""
    try:
        try:
            return _COMMANDS[args.command](args, out)
        except EvalError as error:
            return _fail(error, out)
    except Exception as error:  # a bug, in the command or in reporting its error
        return _internal_error(error, out)
