"""The vocabulary of problems: one stable code per kind of inconsistency of a bench.

``check`` reports every one of them; ``show``, ``plan`` and the library's
callers meet some of them one at a time, and say them with the same code
(:mod:`codegenie.eval.problems` words each one once for every command).
Codes are kebab-case and never change meaning; ``codegenie-bench explain CODE``
prints each one's meaning, an example and its fix, from the installed package
(:mod:`codegenie.eval._code_docs`, which ``docs/check-codes.md`` reproduces).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from codegenie.eval.diagnostics import Diagnostic, Severity

__all__ = (
    "CODES",
    "RUBRIC_VERBOSE_CLAUSE",
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


@dataclass(frozen=True, slots=True)
class Code:
    """A check code: its name, severity and the usual fix."""

    name: str
    severity: Severity
    summary: str
    hint: str


CODES: Final[dict[str, Code]] = {
    code.name: code
    for code in (
        Code(
            "manifest-syntax",
            "error",
            "bench.toml cannot be read: bad bytes or TOML syntax",
            "fix the TOML at this position; the rest of the file is checked once it parses",
        ),
        Code(
            "manifest-schema",
            "error",
            "bench.toml is valid TOML but breaks the manifest schema",
            "`codegenie-bench schema` prints the expected format; editors flag it as you type",
        ),
        Code(
            "root-missing",
            "error",
            "an entry's root directory does not exist",
            "create the directory, or fix the entry's root",
        ),
        Code(
            "root-outside",
            "error",
            "an entry's root resolves (symbolic links followed) outside the manifest's directory",
            "keep task classes inside the repository: copy them in, or fix the link or the root",
        ),
        Code(
            "module-missing",
            "error",
            "an entry's registration file does not exist",
            "create the registration file, or fix the entry's module",
        ),
        Code(
            "module-convention",
            "warning",
            "an entry's package is not the slug with hyphens turned into underscores",
            "rename the package directory and the module to the slug's form",
        ),
        Code(
            "duplicate-module",
            "error",
            "two slugs name the same module",
            "give each task class its own package and registration module",
        ),
        Code(
            "orphan-task-class",
            "error",
            "a registration.py under a declared root that no entry lists",
            "add an entry for it to bench.toml (`codegenie-bench new` does both), or delete it",
        ),
        Code(
            "import-failed",
            "error",
            "importing the registration raised (sys.exit included)",
            "fix the error" + VERBOSE_CLAUSE,
        ),
        Code(
            "import-crashed",
            "error",
            "importing the registration killed the interpreter (os._exit, a signal)",
            "remove the os._exit or the crashing extension call from the import path",
        ),
        Code(
            "import-timeout",
            "error",
            "importing the registration did not finish within --timeout",
            "move slow or blocking work out of module import, into the task class's methods",
        ),
        Code(
            "import-left-running",
            "warning",
            "importing the registration left threads or child processes running",
            "start threads and processes in the task class's methods, not at import",
        ),
        Code(
            "source-unparsable",
            "error",
            "the registration's source cannot be parsed at all (nesting too deep, NUL bytes)",
            "simplify the source: split the expression, generate data at run time",
        ),
        Code(
            "not-registered",
            "error",
            "the registration imported but did not register its slug",
            "decorate the task class with @register_task_class(SLUG)",
        ),
        Code(
            "extra-registration",
            "error",
            "the registration registered something other than its own slug",
            "register exactly one task class per registration module, under its own slug",
        ),
        Code(
            "rubric-imported",
            "error",
            "the registration imports, reads or runs a rubric",
            "remove the import: a rubric runs only as a script, in a subprocess "
            "(`codegenie-bench explain rubric-imported`)",
        ),
        Code(
            "rubric-missing",
            "error",
            "the task class's rubric file does not exist",
            "create rubric.py beside registration.py, or fix the decorator's rubric=",
        ),
        Code(
            "cases-missing",
            "warning",
            "the task class has no cases",
            "add cases/<case-id>/ with case.toml, input/ and expected/",
        ),
        Code(
            "case-layout",
            "error",
            "a case directory lacks case.toml, input/ or expected/, or has an invalid id",
            "give every case directory a valid id and its case.toml, input/ and expected/",
        ),
        Code(
            "case-invalid",
            "error",
            "a case.toml breaks the common keys or the task class's case model",
            "fix the key at this position; `codegenie-bench explain case-invalid` "
            "lists the common keys",
        ),
        Code(
            "golden-fails",
            "error",
            "the case's known-good solution (expected/) fails its rubric",
            "fix expected/ or the rubric: a gold solution must pass",
        ),
        Code(
            "input-passes",
            "error",
            "the case's unsolved input (input/) already passes its rubric",
            "make the rubric reject the input, or the case is solved by doing nothing",
        ),
        Code(
            "rubric-error",
            "error",
            "the rubric broke its protocol on a case",
            "make the rubric print one verdict object and exit 0 (passed) or 1 (failed); "
            "`codegenie-bench explain rubric-error` has the protocol",
        ),
        Code(
            "rubric-timeout",
            "error",
            "the rubric did not decide within the case's timeout",
            "make the rubric faster, or raise the case's timeout in case.toml",
        ),
        Code(
            "case-flaky",
            "error",
            "the case's rubric gave different verdicts on the same input over repeated runs",
            "make the rubric and the case deterministic (seeds, time, network, ordering), "
            "then check again with --repeat",
        ),
        Code(
            "timeout-tight",
            "warning",
            "the known-good solution used more than half of the case's timeout",
            "raise the case's timeout to at least twice what expected/ needs",
        ),
        Code(
            "unused-ignore",
            "warning",
            "a code an entry's accept lists no longer occurs for that task class",
            "remove the code from the entry's accept: the problem it accepted is gone",
        ),
        Code(
            "memory-tight",
            "warning",
            "the known-good solution used more than half of the case's memory limit",
            "raise the case's memory to at least twice what expected/ needs",
        ),
    )
}


def diagnostic(
    code: str,
    message: str,
    file: str | None = None,
    line: int | None = None,
    column: int | None = None,
    *,
    slug: str | None = None,
    hint: str | None = None,
) -> Diagnostic:
    """Return a diagnostic of ``code``, with the code's severity and (by default) its hint."""
    spec = CODES[code]
    return Diagnostic(
        code=code,
        severity=spec.severity,
        message=message,
        file=file,
        line=line,
        column=column,
        slug=slug,
        hint=hint or spec.hint,
    )
