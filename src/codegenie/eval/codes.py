"""The vocabulary of problems: one stable code per kind of inconsistency of a bench.

``check`` reports every one of them; ``show``, ``plan`` and the library's
callers meet some of them one at a time, and say them with the same code
(:mod:`codegenie.eval.problems` words each one once for every command).

Each code is a constant of this module (``codes.GOLDEN_FAILS``), as mypy's
``errorcodes`` are: the code that reports a problem names the constant, so a
mistyped code is an error of the type checker, never a string only a test
would catch. :data:`CODES` holds them all, by name, in the order ``explain
--all``, ``docs/check-codes.md`` and SARIF's rules list them; it is how a
code written by a person (``accept``, ``--select``, ``explain CODE``) or
carried as text (a probe's answer) becomes its constant.

A code's name is kebab-case, is what every output prints, and never changes
meaning. Its long reference (meaning, example, fix), which only ``explain``
and the docs need, is kept apart and loaded only by them
(:mod:`codegenie.eval._code_docs`, one entry per constant of this module;
``docs/check-codes.md`` reproduces it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, final

from codegenie.eval.diagnostics import Diagnostic, Severity

__all__ = (
    "ANSWER_KEY_READABLE",
    "CASES_MISSING",
    "CASE_FLAKY",
    "CASE_INVALID",
    "CASE_LAYOUT",
    "CODES",
    "DUPLICATE_MODULE",
    "ENVIRONMENT_BUILD_FAILED",
    "ENVIRONMENT_INVALID",
    "EXTRA_REGISTRATION",
    "GOLDEN_FAILS",
    "IMPORT_CRASHED",
    "IMPORT_FAILED",
    "IMPORT_LEFT_RUNNING",
    "IMPORT_TIMEOUT",
    "INPUT_PASSES",
    "MANIFEST_SCHEMA",
    "MANIFEST_SYNTAX",
    "MEMORY_TIGHT",
    "MODULE_CONVENTION",
    "MODULE_MISSING",
    "NOT_REGISTERED",
    "ORPHAN_TASK_CLASS",
    "PYTHON_UNAVAILABLE",
    "ROOT_MISSING",
    "ROOT_OUTSIDE",
    "RUBRIC_ERROR",
    "RUBRIC_EXPLOITABLE",
    "RUBRIC_IMPORTED",
    "RUBRIC_MISSING",
    "RUBRIC_TIMEOUT",
    "RUBRIC_VERBOSE_CLAUSE",
    "SOURCE_UNPARSABLE",
    "TIMEOUT_TIGHT",
    "UNUSED_IGNORE",
    "VERBOSE_CLAUSE",
    "VERBOSE_CLAUSES",
    "Code",
    "diagnostic",
)

#: The end of a hint that sends the reader to ``-v``: left out when ``-v`` is already given.
VERBOSE_CLAUSE: Final = "; -v shows the registration's traceback"
#: The same, for a rubric that raised.
RUBRIC_VERBOSE_CLAUSE: Final = "; -v shows the rubric's traceback"
#: Every hint ending that ``-v`` makes pointless.
VERBOSE_CLAUSES: Final = (VERBOSE_CLAUSE, RUBRIC_VERBOSE_CLAUSE)


@final
@dataclass(frozen=True, slots=True)
class Code:
    """A check code: its name, its severity, one line on what it means and the usual fix.

    ``name`` is the kebab-case word every output prints (``golden-fails``):
    a diagnostic's ``code``, SARIF's rule id, ``explain``'s heading.
    ``severity`` is the severity of every diagnostic of the code.
    ``summary`` says in one line what is wrong; ``hint`` is the fix a
    diagnostic carries unless its reporter words a better one.
    ``rubrics_only``: reported only by ``check --rubrics`` (so an ``accept``
    of it is judged unused only under ``--rubrics``).
    """

    name: str
    severity: Severity
    summary: str
    hint: str
    rubrics_only: bool = False


MANIFEST_SYNTAX: Final = Code(
    "manifest-syntax",
    "error",
    "bench.toml cannot be read: bad bytes or TOML syntax",
    "fix the TOML at this position; the rest of the file is checked once it parses",
)

MANIFEST_SCHEMA: Final = Code(
    "manifest-schema",
    "error",
    "bench.toml is valid TOML but breaks the manifest schema",
    "`codegenie-bench schema` prints the expected format; editors flag it as you type",
)

ROOT_MISSING: Final = Code(
    "root-missing",
    "error",
    "an entry's root directory does not exist",
    "create the directory, or fix the entry's root",
)

ROOT_OUTSIDE: Final = Code(
    "root-outside",
    "error",
    "an entry's root resolves (symbolic links followed) outside the manifest's directory",
    "keep task classes inside the repository: copy them in, or fix the link or the root",
)

MODULE_MISSING: Final = Code(
    "module-missing",
    "error",
    "an entry's registration file does not exist",
    "create the registration file, or fix the entry's module",
)

MODULE_CONVENTION: Final = Code(
    "module-convention",
    "warning",
    "an entry's package is not the slug with hyphens turned into underscores",
    "rename the package directory and the module to the slug's form",
)

DUPLICATE_MODULE: Final = Code(
    "duplicate-module",
    "error",
    "two slugs name the same module",
    "give each task class its own package and registration module",
)

ENVIRONMENT_INVALID: Final = Code(
    "environment-invalid",
    "error",
    "an entry's environment (requirements file) is missing, unreadable or not usable",
    "fix the requirements file at this position, or the entry's environment",
)

PYTHON_UNAVAILABLE: Final = Code(
    "python-unavailable",
    "error",
    "an entry asks for a Python version this machine does not have",
    "install that Python (`uv python install VERSION`), or change the entry's python",
)

ENVIRONMENT_BUILD_FAILED: Final = Code(
    "environment-build-failed",
    "error",
    "uv could not build an entry's environment (create it, or install its requirements)",
    "read uv's output (-v shows it); fix the requirements file, or build offline from a "
    "wheel directory with `codegenie-bench env build SLUG`",
    rubrics_only=True,
)

ORPHAN_TASK_CLASS: Final = Code(
    "orphan-task-class",
    "error",
    "a registration.py under a declared root that no entry lists",
    "add an entry for it to bench.toml (`codegenie-bench new` does both), or delete it",
)

IMPORT_FAILED: Final = Code(
    "import-failed",
    "error",
    "importing the registration raised (sys.exit included)",
    "fix the error" + VERBOSE_CLAUSE,
)

IMPORT_CRASHED: Final = Code(
    "import-crashed",
    "error",
    "importing the registration killed the interpreter (os._exit, a signal)",
    "remove the os._exit or the crashing extension call from the import path",
)

IMPORT_TIMEOUT: Final = Code(
    "import-timeout",
    "error",
    "importing the registration did not finish within --timeout",
    "move slow or blocking work out of module import, into the task class's methods",
)

IMPORT_LEFT_RUNNING: Final = Code(
    "import-left-running",
    "warning",
    "importing the registration left threads or child processes running",
    "start threads and processes in the task class's methods, not at import",
)

SOURCE_UNPARSABLE: Final = Code(
    "source-unparsable",
    "error",
    "the registration's source cannot be parsed at all (nesting too deep, NUL bytes)",
    "simplify the source: split the expression, generate data at run time",
)

NOT_REGISTERED: Final = Code(
    "not-registered",
    "error",
    "the registration imported but did not register its slug",
    "decorate the task class with @register_task_class(SLUG)",
)

EXTRA_REGISTRATION: Final = Code(
    "extra-registration",
    "error",
    "the registration registered something other than its own slug",
    "register exactly one task class per registration module, under its own slug",
)

RUBRIC_IMPORTED: Final = Code(
    "rubric-imported",
    "error",
    "the registration imports, reads or runs a rubric",
    "remove the import: a rubric runs only as a script, in a subprocess "
    "(`codegenie-bench explain rubric-imported`)",
)

RUBRIC_MISSING: Final = Code(
    "rubric-missing",
    "error",
    "the task class's rubric file does not exist",
    "create rubric.py beside registration.py, or fix the decorator's rubric=",
)

CASES_MISSING: Final = Code(
    "cases-missing",
    "warning",
    "the task class has no cases",
    "add cases/<case-id>/ with case.toml, input/ and expected/",
)

CASE_LAYOUT: Final = Code(
    "case-layout",
    "error",
    "a case directory lacks case.toml, input/ or expected/, or has an invalid id",
    "give every case directory a valid id and its case.toml, input/ and expected/",
)

CASE_INVALID: Final = Code(
    "case-invalid",
    "error",
    "a case.toml breaks the common keys or the task class's case model",
    "fix the key at this position; `codegenie-bench explain case-invalid` lists the common keys",
)

GOLDEN_FAILS: Final = Code(
    "golden-fails",
    "error",
    "the case's known-good solution (expected/) fails its rubric",
    "fix expected/ or the rubric: a gold solution must pass",
    rubrics_only=True,
)

INPUT_PASSES: Final = Code(
    "input-passes",
    "error",
    "the case's unsolved input (input/) already passes its rubric",
    "make the rubric reject the input, or the case is solved by doing nothing",
    rubrics_only=True,
)

RUBRIC_ERROR: Final = Code(
    "rubric-error",
    "error",
    "the rubric broke its protocol on a case",
    "make the rubric print one verdict object and exit 0 (passed) or 1 (failed); "
    "`codegenie-bench explain rubric-error` has the protocol",
    rubrics_only=True,
)

RUBRIC_TIMEOUT: Final = Code(
    "rubric-timeout",
    "error",
    "the rubric did not decide within the case's timeout",
    "make the rubric faster, or raise the case's timeout in case.toml",
    rubrics_only=True,
)

CASE_FLAKY: Final = Code(
    "case-flaky",
    "error",
    "the case's rubric gave different verdicts on the same input over repeated runs",
    "make the rubric and the case deterministic (seeds, time, network, ordering), "
    "then check again with --repeat",
    rubrics_only=True,
)

TIMEOUT_TIGHT: Final = Code(
    "timeout-tight",
    "warning",
    "the known-good solution used more than half of the case's timeout",
    "raise the case's timeout to at least twice what expected/ needs",
    rubrics_only=True,
)

UNUSED_IGNORE: Final = Code(
    "unused-ignore",
    "warning",
    "a code an entry's accept lists no longer occurs for that task class",
    "remove the code from the entry's accept: the problem it accepted is gone",
)

MEMORY_TIGHT: Final = Code(
    "memory-tight",
    "warning",
    "the known-good solution used more than half of the case's memory limit",
    "raise the case's memory to at least twice what expected/ needs",
    rubrics_only=True,
)

RUBRIC_EXPLOITABLE: Final = Code(
    "rubric-exploitable",
    "error",
    "the rubric graded a candidate that solves nothing (an exploit of the cheat run) passed",
    "harden the rubric as `codegenie-bench explain rubric-exploitable` says: run candidate code "
    "in a child process and read its outcome over a channel only the rubric holds",
    rubrics_only=True,
)

ANSWER_KEY_READABLE: Final = Code(
    "answer-key-readable",
    "warning",
    "the rubric reads the case's reference (reads_expected) and lets candidate code read it too",
    "read what the rubric needs of CASE_DIR/expected, then delete that copy before any "
    "candidate code runs; or grade without the reference",
    rubrics_only=True,
)

#: Every code by its name, in the order the reference and SARIF's rules list them.
CODES: Final[Mapping[str, Code]] = MappingProxyType(
    {
        code.name: code
        for code in (
            MANIFEST_SYNTAX,
            MANIFEST_SCHEMA,
            ROOT_MISSING,
            ROOT_OUTSIDE,
            MODULE_MISSING,
            MODULE_CONVENTION,
            DUPLICATE_MODULE,
            ENVIRONMENT_INVALID,
            PYTHON_UNAVAILABLE,
            ENVIRONMENT_BUILD_FAILED,
            ORPHAN_TASK_CLASS,
            IMPORT_FAILED,
            IMPORT_CRASHED,
            IMPORT_TIMEOUT,
            IMPORT_LEFT_RUNNING,
            SOURCE_UNPARSABLE,
            NOT_REGISTERED,
            EXTRA_REGISTRATION,
            RUBRIC_IMPORTED,
            RUBRIC_MISSING,
            CASES_MISSING,
            CASE_LAYOUT,
            CASE_INVALID,
            GOLDEN_FAILS,
            INPUT_PASSES,
            RUBRIC_ERROR,
            RUBRIC_TIMEOUT,
            CASE_FLAKY,
            TIMEOUT_TIGHT,
            UNUSED_IGNORE,
            MEMORY_TIGHT,
            RUBRIC_EXPLOITABLE,
            ANSWER_KEY_READABLE,
        )
    }
)


def diagnostic(
    code: Code,
    message: str,
    file: str | None = None,
    line: int | None = None,
    column: int | None = None,
    *,
    slug: str | None = None,
    hint: str | None = None,
) -> Diagnostic:
    """Return a diagnostic of ``code``: its name, its severity and (by default) its hint."""
    return Diagnostic(
        code=code.name,
        severity=code.severity,
        message=message,
        file=file,
        line=line,
        column=column,
        slug=slug,
        hint=hint or code.hint,
    )
