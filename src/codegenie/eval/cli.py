"""``codegenie-bench``: the command line for curators, the harness and CI.

The only module that prints, reads ``sys.argv``, exits or configures logging.
``main(argv)`` returns the exit code; exceptions map to exit codes through
their class's ``exit_code`` in one place (:func:`_fail`), never through
message text. Modules are imported inside the commands that need them, so the
cheap commands (``--help``, ``--version``, ``list``, ``schema``) import neither
the loader nor structlog.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

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

__all__ = ("main",)

PROG = "codegenie-bench"
EXIT_USAGE = 2


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


def _parser() -> argparse.ArgumentParser:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog=PROG, description=_DESCRIPTION, epilog=_EXAMPLES[None], formatter_class=formatter
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
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
    """Where results (stdout) and notes (stderr) go, in the chosen format."""

    def __init__(self, args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> None:
        self.json = args.format == "json"
        self.quiet = args.quiet
        self.verbose = args.verbose
        self.stdout = stdout
        self.stderr = stderr

    def result(self, document: dict[str, Any], text: str) -> None:
        if self.json:
            self.stdout.write(json.dumps(document, indent=2) + "\n")
        elif text:
            self.stdout.write(text if text.endswith("\n") else text + "\n")

    def note(self, text: str) -> None:
        if not self.quiet and not self.json:
            self.stderr.write(text + "\n")


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
        out.stdout.write(json.dumps({"error": document}, indent=2) + "\n")
        return error.exit_code
    for diagnostic in _diagnostics(error, manifest, slug):
        text = diagnostic.render_text()
        if out.quiet:
            text = text.split("\n  hint: ", 1)[0]
        out.stderr.write(text + "\n")
    return error.exit_code


@contextlib.contextmanager
def _registrations_quiet_on_stdout() -> Iterator[None]:
    """Send whatever registration modules print to stderr: stdout carries results."""
    with contextlib.redirect_stdout(sys.stderr):
        yield


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
    renderer: Any
    if args.log_format == "json":
        renderer = structlog.processors.JSONRenderer(sort_keys=True)
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        # Looked up per logger, so a replaced sys.stderr (tests, redirection) is honoured.
        logger_factory=lambda *_: structlog.PrintLogger(sys.stderr),
        cache_logger_on_first_use=False,
    )


def _load_manifest(args: argparse.Namespace) -> BenchManifest:
    from codegenie.eval.manifest import BenchManifest  # noqa: PLC0415

    if args.manifest is not None:
        return BenchManifest.load(args.manifest)
    return BenchManifest.discover(Path.cwd())


def _root_for(manifest: BenchManifest, slug: str) -> Path:
    # An undeclared slug is refused by the loader (with suggestions) before it
    # looks at the root, so any existing directory will do.
    return manifest.root_dir(slug) if slug in manifest else manifest.directory


def _describe(task_class: TaskClass) -> str:
    document = task_class.to_json()
    width = max(len(key) for key in document) + 1
    return "\n".join(f"{key + ':':<{width}} {value}" for key, value in document.items())


def _columns(rows: Sequence[tuple[str, ...]]) -> str:
    if not rows:
        return ""
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
        out.stdout.write(_listing.render_text(listing))
    if not listing[0]:
        out.note(f"{path}: no task classes declared")
    return 0


def _cmd_show(args: argparse.Namespace, out: _Output) -> int:
    from codegenie.eval.loader import load_task_class  # noqa: PLC0415
    from codegenie.eval.registry import TaskClassRegistry  # noqa: PLC0415

    _configure_logging(args)
    manifest = _load_manifest(args)
    try:
        with _registrations_quiet_on_stdout():
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
        with _registrations_quiet_on_stdout():
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
        out.stdout.write("".join(line + "\n" for line in lines))
        out.stdout.write(report.summary() + "\n")
    else:
        for diagnostic in report.diagnostics:
            text = diagnostic.render_text()
            if out.quiet:
                text = text.split("\n  hint: ", 1)[0]
            out.stdout.write(text + "\n")
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
    text = "\n".join(str(f) for f in created.files)
    out.result(document, text)
    out.note(
        f"added [task-classes.{created.slug}] to {created.manifest}; "
        f"try: {PROG} show {created.slug}"
    )
    return 0


def _cmd_schema(args: argparse.Namespace, out: _Output) -> int:
    from codegenie.eval.manifest import json_schema  # noqa: PLC0415

    out.stdout.write(json.dumps(json_schema(), indent=2) + "\n")
    return 0


_COMMANDS: dict[str, Callable[[argparse.Namespace, _Output], int]] = {
    "list": _cmd_list,
    "show": _cmd_show,
    "plan": _cmd_plan,
    "check": _cmd_check,
    "new": _cmd_new,
    "schema": _cmd_schema,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``codegenie-bench`` with ``argv`` (default ``sys.argv[1:]``); return the exit code.

    0 success; 1, 3, 4 as the error's class says (docs/errors.md); 2 a
    command-line usage error. No traceback for an expected failure; an
    unexpected one shows its traceback with ``-v``.
    """
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, --version, or a usage error (2)
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    if args.format == "github" and args.command != "check":
        parser.print_usage(sys.stderr)
        sys.stderr.write(f"{PROG}: error: --format github is only for check\n")
        return EXIT_USAGE
    out = _Output(args, sys.stdout, sys.stderr)
    try:
        return _COMMANDS[args.command](args, out)
    except EvalError as error:
        return _fail(error, out)
    except Exception as error:  # an unexpected bug: say so, with the traceback on -v
        if args.verbose:
            traceback.print_exc()
        else:
            sys.stderr.write(
                f"{PROG}: internal error: {type(error).__name__}: {error}\n"
                f"  hint: run again with -v for the traceback, and report it\n"
            )
        return 1
