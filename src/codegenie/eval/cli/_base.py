"""What every command shares: its description, its output, the usage error.

Cheap to import (no pydantic, no structlog): ``--help`` and ``--version`` run
through here.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO, final

from codegenie.eval._output import (
    ResultStream,
    escape_control,
    has_lone_surrogates,
    readable,
    readable_data,
    wants_colour,
)
from codegenie.eval._reports.formats import formats_of
from codegenie.eval._setting_table import setting
from codegenie.eval._version import __version__
from codegenie.eval.errors import EvalError

if TYPE_CHECKING:
    from codegenie.eval._exec import Executor
    from codegenie.eval._manifest.model import BenchManifest
    from codegenie.eval._settings import Settings
    from codegenie.eval.diagnostics import Diagnostic
    from codegenie.eval.rubrics import Sandbox

__all__ = (
    "EXIT_USAGE",
    "PROG",
    "VERSION",
    "Command",
    "Output",
    "UsageError",
    "add_executor_options",
    "choose_executor",
    "columns",
    "command_line_text",
    "dumps",
    "executor_flags",
    "executor_options_given",
    "load_manifest",
    "manifest_path",
    "positive_int",
    "read_settings",
    "shard_type",
    "step_summary",
)

PROG: Final = "codegenie-bench"
EXIT_USAGE: Final = 2
VERSION: Final = f"{PROG} {__version__}"


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


@dataclass(frozen=True, slots=True)
class Command:
    """One subcommand: what ``--help`` says about it, its options, and what it does.

    ``run(args, out)`` returns the exit status of a command that did its job
    (``check`` returns 1 when it found errors) and raises an ``EvalError``
    when it could not; :func:`codegenie.eval.cli._app.fail` reports that.
    ``imports_registrations``: the command imports bench code, so its results
    go to a private copy of stdout and logs are configured before it runs.
    """

    name: str
    summary: str
    examples: str
    run: Callable[[argparse.Namespace, Output], int]
    configure: Callable[[argparse.ArgumentParser], None] = lambda _parser: None
    imports_registrations: bool = False


class Output:
    """Where results (stdout), notes and diagnostics go, in the chosen format.

    ``stdout`` is a :class:`ResultStream`: a reader that goes away makes the
    rest of the results vanish quietly. Notes are printed with their control
    characters escaped. ``manifest`` and ``slug`` are what the command was
    working on when it failed, set by the command as it learns them: the
    report of an error locates it with them. ``tree`` says whether that
    report may look at the bench tree to describe a problem (``list``, which
    reads the manifest only, says no).
    """

    def __init__(self, args: argparse.Namespace, stdout: ResultStream, stderr: TextIO) -> None:
        self.format: str = args.format
        self.json = self.format == "json"
        self.quiet: bool = args.quiet
        self.verbose: int = args.verbose
        self.stdout = stdout
        self.stderr = stderr
        self.manifest: BenchManifest | None = None
        self.slug: str | None = None
        self.tree = True

    def result(self, document: dict[str, Any], text: str) -> None:
        """Print the JSON ``document`` or the (already escaped) ``text``."""
        if self.json:
            self.stdout.write(dumps(document))
        elif text:
            self.stdout.write(text if text.endswith("\n") else text + "\n")

    def note(self, text: str) -> None:
        """Print one line of ``text`` on stderr, unless quiet or under JSON or GitHub."""
        if not self.quiet and self.format == "text":
            self.stderr.write(escape_control(text) + "\n")

    def diagnostics(
        self, found: Sequence[Diagnostic], *, stream: ResultStream | TextIO, base: Path | None
    ) -> None:
        """Print ``found`` on ``stream``: compiler-style text, or GitHub workflow commands.

        Text: one line each (the traceback under ``-v``, the hint unless
        ``-q``; a hint that the next diagnostic repeats is printed once,
        after the last of them), in colour when :func:`wants_colour` says
        so. GitHub: paths relative to ``$GITHUB_WORKSPACE`` when it is set,
        else to ``base`` (the manifest's directory).
        """
        if self.format == "github":
            home = os.environ.get("GITHUB_WORKSPACE") or (str(base) if base else None)
            lines = [_rebased(d, home).render_github() for d in found]
        else:
            if self.verbose:  # -v is given: a hint that asks for it says nothing more
                found = [_without_verbose_clause(d) for d in found]
            colour = wants_colour(stream)
            lines = []
            for i, diagnostic in enumerate(found):
                repeated = i + 1 < len(found) and found[i + 1].hint == diagnostic.hint
                lines.append(
                    diagnostic.render_text(
                        colour=colour,
                        hint=not self.quiet and not repeated,
                        traceback=self.verbose > 0,
                    )
                )
        stream.write("".join(line + "\n" for line in lines))


def _without_verbose_clause(diagnostic: Diagnostic) -> Diagnostic:
    """``diagnostic`` without the end of its hint that sends the reader to ``-v``."""
    from codegenie.eval.codes import VERBOSE_CLAUSES  # noqa: PLC0415 - start-up: only when there is something to report

    hint = diagnostic.hint
    if hint is None or not hint.endswith(VERBOSE_CLAUSES):
        return diagnostic
    clause = next(clause for clause in VERBOSE_CLAUSES if hint.endswith(clause))
    return replace(diagnostic, hint=hint.removesuffix(clause))


def _rebased(diagnostic: Diagnostic, home: str | None) -> Diagnostic:
    """``diagnostic`` with its file relative to ``home`` when it lies under it."""
    if diagnostic.file is None or home is None:
        return diagnostic
    absolute = os.path.abspath(diagnostic.file)
    prefix = os.path.join(os.path.abspath(home), "")
    if absolute.startswith(prefix):
        return replace(diagnostic, file=absolute[len(prefix) :])
    return replace(diagnostic, file=absolute)


def step_summary(markdown: str) -> None:
    """Append ``markdown`` to ``$GITHUB_STEP_SUMMARY`` when it is set (a GitHub Actions job)."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return
    from codegenie.eval._reports.files import append_text  # noqa: PLC0415 - start-up: only in CI

    append_text(Path(target), markdown)


def shard_type(text: str) -> object:
    """Return ``text`` as a ``Shard`` (an argparse ``type``: ``--shard K/N``)."""
    from codegenie.eval.check import Shard  # noqa: PLC0415 - start-up: only the commands that shard pay for it

    try:
        return Shard.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_int(text: str) -> int:
    """Return ``text`` as a whole number of at least 1 (an argparse ``type``: ``--jobs``)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        msg = f"expected a whole number of at least 1, not {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def command_line_text(text: str) -> str:
    r"""Return the command-line argument ``text`` as the text it was typed (an argparse ``type``).

    Python decodes the command line as the locale says, keeping each byte it
    cannot decode as a lone surrogate: under ``LC_ALL=C`` (ASCII), ``données``
    arrives as ``"donn\udcc3\udca9es"``. Such an argument is decoded again as
    the UTF-8 it was; one whose bytes are not UTF-8 either is refused
    (``argparse`` names the argument: a usage error, exit 2), so that no
    undecodable byte is written into ``bench.toml`` or a file ``new`` makes.
    """
    if not has_lone_surrogates(text):
        return text
    try:
        return os.fsencode(text).decode("utf-8")
    except UnicodeError:
        shown = escape_control(readable(text))
        msg = f"not UTF-8 text: '{shown}' (\\xNN: a byte that is not UTF-8)"
        raise argparse.ArgumentTypeError(msg) from None


def dumps(document: object) -> str:
    r"""Return ``document`` as JSON text: ASCII only, so valid under any locale.

    A path the locale could not decode holds lone surrogates, which JSON can
    only write as ``\udcc3`` escapes that mean nothing to a reader: such
    strings are written as the text they stand for (:func:`readable_data`).
    A number that is not finite raises ``ValueError`` (JSON has none, and
    writing ``NaN`` would print a document no JSON reader takes): the
    readers and the rubric protocol refuse them, so one here is a bug.
    """
    import json  # noqa: PLC0415 - only --format json and schema print JSON (1 ms at start-up)

    text = json.dumps(document, indent=2, ensure_ascii=True, allow_nan=False)
    # Rare (a lone surrogate, or a character beyond the BMP): look at the strings again.
    if "\\ud" in text:
        text = json.dumps(readable_data(document), indent=2, ensure_ascii=True, allow_nan=False)
    return text + "\n"


def columns(rows: Sequence[tuple[str, ...]]) -> str:
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


def manifest_path(args: argparse.Namespace) -> Path:
    """Return ``--manifest``, else the nearest ``bench.toml`` (``BenchManifestNotFound``: none)."""
    from codegenie.eval._manifest.read import find_manifest  # noqa: PLC0415 - start-up: only the commands that read the manifest pay for it

    if args.manifest is not None:
        return Path(args.manifest)
    return find_manifest(Path.cwd())


def load_manifest(args: argparse.Namespace, out: Output, path: Path | None = None) -> BenchManifest:
    """Read ``path`` (default: :func:`manifest_path`); remember it for error reports."""
    from codegenie.eval._cache.memo import load_manifest_cached  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval._manifest.model import BenchManifest  # noqa: PLC0415 - start-up: only this command pays for it

    if path is None:
        path = manifest_path(args)
    if getattr(args, "no_cache", False):
        manifest = BenchManifest.load(path)
    else:
        # The content-keyed cache `list` uses: re-validated only when the bytes change.
        manifest = load_manifest_cached(str(path.absolute()))
    out.manifest = manifest
    return manifest


def add_executor_options(parser: argparse.ArgumentParser, words: str | None = None) -> None:
    """Add ``--executor NAME`` (the registered executors) and each executor's own options.

    Its ``--help`` says ``words`` (default: the settings table's), their
    ``{executors}`` the registered executors, each with what it is.
    """
    from codegenie.eval._exec import executor_kinds  # noqa: PLC0415 - the registry only: no executor is imported

    kinds = executor_kinds()
    described = [f"{kind.name} ({kind.help})" for kind in kinds]
    listed = ", ".join(described[:-1]) + " or " + described[-1] if len(kinds) > 1 else described[0]
    parser.add_argument(
        "--executor",
        choices=tuple(kind.name for kind in kinds),
        default=None,
        help=(setting("executor").help if words is None else words).format(executors=listed),
    )
    for kind in kinds:
        kind.add_arguments(parser)


def executor_options_given(args: argparse.Namespace) -> tuple[str, ...]:
    """Return the executors' own options (``--ray-address``) the command line gives."""
    from codegenie.eval._exec import executor_kinds  # noqa: PLC0415 - the registry only

    return tuple(
        flag for kind in executor_kinds() if kind.options_from(args) for flag in kind.flags
    )


def executor_flags() -> tuple[str, ...]:
    """Return every executor's own options, as typed (``--ray-address``)."""
    from codegenie.eval._exec import executor_kinds  # noqa: PLC0415 - the registry only

    return tuple(flag for kind in executor_kinds() for flag in kind.flags)


def choose_executor(name: str, args: argparse.Namespace, usage: str) -> Executor:
    """Return the executor ``name`` (the setting in force), made with its own options.

    Raises ``UsageError`` (exit 2) for an executor that cannot be made here
    (``ray`` where Ray is not installed, naming the extra), for an option
    it refuses, and for another executor's option (``--ray-address``
    without the ray executor). The executor's library's own warnings are
    shown under ``-v`` only.
    """
    from codegenie.eval._exec import RayMissing, executor_kind, executor_kinds  # noqa: PLC0415 - start-up: only the commands that run rubrics pay for it

    chosen = executor_kind(name)
    for kind in executor_kinds():
        if kind is not chosen and kind.options_from(args):
            raise UsageError(usage, f"{kind.flags[0]} is for --executor {kind.name}")
    try:
        executor = chosen.make(chosen.options_from(args))
    except (RayMissing, ValueError) as exc:
        raise UsageError(usage, str(exc)) from None
    if chosen.loggers and not getattr(args, "verbose", 0):
        import logging  # noqa: PLC0415 - only for an executor whose library logs

        # The executor's library warns through the standard library's logging, to a handler
        # of its own: its notices (Ray's token authentication, say) are for -v, as the
        # library's are; its errors still show.
        for logger in chosen.loggers:
            logging.getLogger(logger).setLevel(logging.ERROR)
    return executor


def add_build_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--no-build`` to a command that runs rubrics in task classes' environments."""
    parser.add_argument(
        "--no-build",
        action="store_true",
        help="refuse, rather than build, a task class's environment that is not built "
        "(codegenie-bench env build builds them)",
    )


def choose_sandbox(word: str, out: Output, *, here: bool = True) -> Sandbox:
    """Choose the sandbox ``word`` names, before anything runs; say so once under ``none``.

    Raises ``SandboxUnavailable`` (exit 4) when bubblewrap cannot start.
    ``here=False`` (the runs are made elsewhere: ``--executor ray``): the
    sandbox is named, not probed; each node chooses its own bubblewrap.
    """
    from codegenie.eval._sandbox.provider import named_sandbox  # noqa: PLC0415 - as above
    from codegenie.eval.rubrics import choose_sandbox as choose  # noqa: PLC0415 - start-up: only the commands that run rubrics pay for it

    sandbox = choose(word) if here else named_sandbox(word)
    used = sandbox.bubblewrap
    if used is not None and out.verbose and not out.quiet:
        note = f": {used.note}" if used.note else ""
        out.stderr.write(f"codegenie-bench: sandbox: {used.describe()}{note}\n")
    if not sandbox.contained:
        out.stderr.write(
            "codegenie-bench: warning: --sandbox none: rubrics, and the code they run, run "
            "with your rights, files, environment and network; nothing they start is stopped\n"
        )
    return sandbox


def proven_bench_digest(manifest: Path, out: Output) -> str | None:
    """Return the bench's digest for a report's proof; warn on stderr (unless -q) when none.

    A root that cannot be hashed whole leaves the report without a digest
    (``merge`` then refuses it): the warning names the root and why.
    """
    from codegenie.eval._reports.digest import bench_digest_of  # noqa: PLC0415 - start-up: only reports with a proof pay for it

    found = bench_digest_of(manifest)
    warning = found.warning()
    if warning is not None and not out.quiet:
        out.stderr.write(f"codegenie-bench: warning: {escape_control(warning)}\n")
    return found.value


def read_settings(
    args: argparse.Namespace,
    out: Output,
    manifest: Path,
    names: Sequence[str] | None = None,
) -> Settings:
    """Return the command's settings: the command line's, else the table's, else the defaults.

    Built once per command; the command reads them from the returned
    ``Settings.options`` (``args`` is left as the command line gave it). The
    ``[tool.codegenie-bench]`` table is looked for at and above
    ``manifest``'s directory and validated whole, so a broken table raises
    ``SettingsInvalid`` (exit 2) in every command that reads it, even for a
    key the command does not use. ``names`` are the settings the command
    uses (default: every one; an option's value ``None`` on ``args`` means
    not given). The ``format`` in force is put on ``out``. A ``format`` the
    table gives that the command does not write is passed over: the
    command's default, ``text``, is in force (``--show-settings`` says so).
    """
    from codegenie.eval._settings import DEFAULTS, load_settings, resolve  # noqa: PLC0415 - start-up: only the commands that use a setting pay for it

    used = tuple(DEFAULTS) if names is None else tuple(names)
    given = {name: getattr(args, name.replace("-", "_"), None) for name in used}
    if "format" in used:  # args.format is "text" when not given: only format_given tells
        given["format"] = args.format if args.format_given else None
    read = load_settings(manifest.absolute().parent)
    settings = resolve(read, given, names=used, formats=formats_of(args.command))
    if "format" in used:
        out.format = settings.options.format
        out.json = out.format == "json"
    return settings
