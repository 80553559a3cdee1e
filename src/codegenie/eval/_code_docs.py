"""The reference of every check code, shipped with the package: ``codegenie-bench explain CODE``.

A curator who meets ``error[rubric-imported]`` in their own repository has
the installed package, not this project's documents: what a code means, an
example of what causes it, what ``check`` prints for it and how to fix it
live here, and every hint that needs more room than one line points at
``codegenie-bench explain CODE``. The project's ``docs/check-codes.md`` is
this text (``explain --all``) below a short introduction; a test holds the
two in step, and one that every code of :data:`codegenie.eval.codes.CODES`
has its entry here.

A code itself — its name, severity, summary, hint, and whether only
``check --rubrics`` reports it — is its constant in
:mod:`codegenie.eval.codes`, defined there once; each entry here names that
constant and adds only the prose. Only ``explain`` (and the tests that keep
the docs) import this module: ``check`` and the reports need the constants
alone.

The prose is Markdown, kept in this file wrapped as it reads best; it is
reflowed (one paragraph, one width) when it is shown, so the wrapping here
never shows through.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, final

from codegenie.eval import codes
from codegenie.eval.codes import CODES, Code

__all__ = ("DOCS", "WIDTH", "CodeDoc", "markdown", "reference")

#: Where ``explain`` and the generated reference wrap their paragraphs.
WIDTH: Final = 79


def _paragraphs(text: str) -> list[str]:
    """Split Markdown ``text`` into paragraphs; a fenced block is one paragraph, kept as it is."""
    paragraphs: list[str] = []
    current: list[str] = []
    fenced = False
    for line in textwrap.dedent(text).strip("\n").split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and not line.startswith("```") and not line.strip():
            if current:
                paragraphs.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        paragraphs.append("\n".join(current))
    return paragraphs


def _reflow(text: str, first: str = "") -> str:
    """Return ``text`` with each plain paragraph on lines of at most :data:`WIDTH`.

    ``first`` is put before the first paragraph (``Severity: error.``,
    ``Fix:``). Fenced blocks keep their lines.
    """
    out = []
    for index, paragraph in enumerate(_paragraphs(text)):
        lead = first if index == 0 else ""
        if paragraph.startswith("```"):
            out.append(f"{lead}\n\n{paragraph}" if lead else paragraph)
            continue
        joined = " ".join(line.strip() for line in paragraph.split("\n"))
        words = f"{lead} {joined}" if lead else joined
        out.append(textwrap.fill(words, WIDTH, break_long_words=False, break_on_hyphens=False))
    return "\n\n".join(out)


def _one_line(text: str) -> str:
    """Return ``text`` with each plain paragraph on one line (for JSON: the reader wraps)."""
    return "\n\n".join(
        paragraph
        if paragraph.startswith("```")
        else " ".join(line.strip() for line in paragraph.split("\n"))
        for paragraph in _paragraphs(text)
    )


@final
@dataclass(frozen=True, slots=True)
class CodeDoc:
    """The reference of one check code: the long text that only ``explain`` and the docs need.

    ``code`` is the code's constant (:mod:`codegenie.eval.codes`), where its
    name, severity, summary, hint and whether only ``check --rubrics``
    reports it are defined, once; this record adds the prose. ``meaning``:
    what the code says is wrong (Markdown paragraphs). ``example``: a
    situation that causes it (Markdown; may hold a fenced TOML block).
    ``output``: what ``check`` prints for that example, hint included.
    ``fix``: what to do.
    """

    code: Code
    meaning: str
    example: str
    output: str
    fix: str

    @property
    def severity(self) -> str:
        """``error`` or ``warning``: the code's severity."""
        return self.code.severity

    def severity_sentence(self) -> str:
        """``Severity: warning (an error under `--strict`).`` and the like."""
        words: str = self.code.severity
        if words == "warning":
            words += " (an error under `--strict`)"
        if self.code.rubrics_only:
            words += "; only with `check --rubrics`"
        return f"Severity: {words}."

    def markdown(self, level: int = 2) -> str:
        """Return the code's section, its heading at ``level``: what ``explain`` prints."""
        return "\n\n".join(
            (
                f"{'#' * level} `{self.code.name}`",
                _reflow(self.meaning, self.severity_sentence()),
                _reflow(self.example, "Example:"),
                f"```\n{self.output.strip()}\n```",
                _reflow(self.fix, "Fix:"),
            )
        )

    def to_json(self) -> dict[str, Any]:
        """Return ``explain --format json``'s document for the code."""
        return {
            "code": self.code.name,
            "severity": self.code.severity,
            "rubrics_only": self.code.rubrics_only,
            "summary": self.code.summary,
            "hint": self.code.hint,
            "meaning": _one_line(self.meaning),
            "example": _one_line(self.example),
            "output": self.output.strip(),
            "fix": _one_line(self.fix),
        }


def markdown(code: str) -> str:
    """Return the reference of the code named ``code`` as Markdown, headed ``# `code```.

    ``KeyError`` if no code has that name.
    """
    return DOCS[code].markdown(level=1) + "\n"


def reference() -> str:
    """Return every code's section, in the order of :data:`CODES`: ``explain --all``."""
    return "\n\n".join(DOCS[code].markdown() for code in CODES) + "\n"


#: Every code's reference, by the code's name, in the order of :data:`CODES`.
DOCS: Final[Mapping[str, CodeDoc]] = {
    doc.code.name: doc
    for doc in (
        CodeDoc(
            codes.MANIFEST_SYNTAX,
            meaning="""
            `bench.toml` cannot be read: invalid UTF-8, a byte-order mark, binary
            junk, a file over 16 MiB, or a TOML syntax error. Nothing else can be
            checked until it parses, so `check` exits 4, as every command does for a
            manifest it cannot read.
            """,
            example="""
            ```toml
            [task-classes.vuln-remediation
            module = "bench.vuln_remediation.registration"
            ```
            """,
            output="""
bench.toml:1:31: error[manifest-syntax]: TOML syntax error: Expected ']' at the end of a table declaration
  hint: fix the TOML at this position; the rest of the file is checked once it parses
            """,
            fix="""
            correct the TOML at that position.
            """,
        ),
        CodeDoc(
            codes.MANIFEST_SCHEMA,
            meaning="""
            Valid TOML that breaks the manifest schema: a wrong type, a missing or
            unknown key, a slug that breaks the rules, a module or root of the wrong
            form, an unsupported `schema-version`. A problem with a key (unknown,
            missing) is reported at the key, a problem with a value at the value. The
            other, valid entries are still checked.

            A misspelt key is one problem: the required key it misspells is not also
            reported as missing. A root or module that only needs normalising
            (`./bench`, `bench/`, a hyphen in a module name) comes with the value that
            was probably meant.
            """,
            example="""
            ```toml
            [task-classes.vuln-remediation]
            module = "bench.vuln_remediation.registration"
            roots = "bench"
            ```
            """,
            output="""
bench.toml:8:1: error[manifest-schema]: task-classes.vuln-remediation.roots: unknown key 'roots'; did you mean 'root'?
  hint: `codegenie-bench schema` prints the expected format; editors flag it as you type
            """,
            fix="""
            as the message says; `codegenie-bench schema` prints the format, and
            editors with a TOML language server (taplo) flag these as you type.
            """,
        ),
        CodeDoc(
            codes.ROOT_MISSING,
            meaning="""
            An entry's `root` is not a directory. Also reported, at the `root` value,
            for an entry whose `module` does not start with its root's name when that
            root does not exist: the root is what is wrong. The hint names the
            directory that is there when one is close, or holds the entry's package;
            a task class found under another root is not also reported as an orphan.
            """,
            example="""
            `root = "bnch"` where the task classes live in `bench/`.
            """,
            output="""
bench.toml:8:8: error[root-missing]: root 'bnch' of 'vuln-remediation' is not a directory (bnch)
  hint: did you mean root = "bench"? (bench/vuln_remediation/registration.py is there)
            """,
            fix="""
            create the directory, or correct the entry's `root`.
            """,
        ),
        CodeDoc(
            codes.ROOT_OUTSIDE,
            meaning="""
            An entry's `root` resolves, once symbolic links are followed, outside the
            directory of `bench.toml`. Nothing under it is imported: the manifest
            vouches only for code inside its own directory, and code from elsewhere
            is never run on its authority. The loader refuses it the same way
            (`BenchRootOutsideManifest`, exit 4).
            """,
            example="""
            `root = "vendor/bench"` where `vendor` is a symbolic link to
            `/opt/shared`.
            """,
            output="""
bench.toml:8:8: error[root-outside]: root 'vendor/bench' of 'vuln-remediation' resolves to /opt/shared/bench, outside the manifest's directory /home/curator/my-bench
  hint: keep task classes inside the repository: copy them in, or fix the link or the root
            """,
            fix="""
            copy the task classes into the repository, or point the link or the
            `root` at a directory inside it.
            """,
        ),
        CodeDoc(
            codes.MODULE_MISSING,
            meaning="""
            The registration file the entry's `module` names does not exist. When an
            unlisted package of a close slug sits beside where it should be (the
            table and its module misspell the slug the code is named after), the
            message names that package and the hint the entry it should be: one
            problem, not also an `orphan-task-class`.
            """,
            example="""
            `module = "bench.vuln_remediation.registration"` without
            `bench/vuln_remediation/registration.py`.
            """,
            output="""
bench.toml:7:10: error[module-missing]: module 'bench.vuln_remediation.registration' of 'vuln-remediation': bench/vuln_remediation/registration.py does not exist
  hint: create the registration file, or fix the entry's module
            """,
            fix="""
            create the file (`codegenie-bench new` scaffolds one), or correct
            `module`.
            """,
        ),
        CodeDoc(
            codes.MODULE_CONVENTION,
            meaning="""
            The entry's package is not the slug with hyphens turned into underscores.
            """,
            example="""
            ```toml
            [task-classes.vuln-remediation]
            module = "bench.vulns.registration"
            root = "bench"
            ```
            """,
            output="""
bench.toml:7:10: warning[module-convention]: module 'bench.vulns.registration' of 'vuln-remediation' is not the slug's own ('bench.vuln_remediation.registration')
  hint: rename the package directory and the module to the slug's form
            """,
            fix="""
            rename the package directory to `vuln_remediation/` and the module to
            `bench.vuln_remediation.registration`.
            """,
        ),
        CodeDoc(
            codes.DUPLICATE_MODULE,
            meaning="""
            Two slugs name the same module; only the first is imported.
            """,
            example="""
            `[task-classes.b]` with `module = "bench.a.registration"`, the module of
            `a`.
            """,
            output="""
bench.toml:11:10: error[duplicate-module]: task-classes.b.module: module 'bench.a.registration' is already the module of 'a'; each task class needs its own module
  hint: give each task class its own package and registration module
            """,
            fix="""
            give each task class its own package and registration module.
            """,
        ),
        CodeDoc(
            codes.ENVIRONMENT_INVALID,
            meaning="""
            An entry's `environment`, the requirements file its task class's own
            environment is built from (`codegenie-bench env build`), cannot be used.
            At the entry's `environment` value: the file does not exist, is not a
            regular file (a directory, a FIFO: never opened), resolves (symbolic
            links followed) outside the manifest's directory, is over 1 MiB or cannot
            be read. At the requirements file's own line, one diagnostic per problem:
            bytes that are not UTF-8, a line that is no requirement, an option other
            than the index and binary options (`--index-url`, `--find-links`,
            `--only-binary`, …), a bare path or URL, and `-r`, `-c` and `-e`: an
            included file would change the environment without changing the file
            that identifies it.
            """,
            example="""
            ```toml
            [task-classes.np-task]
            module = "bench.np_task.registration"
            root = "bench"
            environment = "envs/np-task.txt"
            ```

            where `envs/np-task.txt` holds `-r base.txt` on its line 2.
            """,
            output="""
envs/np-task.txt:2:1: error[environment-invalid]: requirements of 'np-task': -r is not allowed: includes another file: list its requirements here (this file's bytes are the environment's identity)
  hint: fix the requirements file at this position, or the entry's environment
            """,
            fix="""
            as the message says: create the file, or list every requirement in it,
            one a line, in pip's format; or correct the entry's `environment`.
            """,
        ),
        CodeDoc(
            codes.PYTHON_UNAVAILABLE,
            meaning="""
            An entry's `python` names a version this machine has no interpreter for.
            `check` looks where interpreters live (`pythonX.Y` on `PATH`, pyenv's and
            uv's installations, `/usr/local/bin`, `/usr/bin`) and starts each
            candidate once to learn its version; it downloads nothing. `"3.12"` is
            any 3.12, `"3.12.1"` exactly that one.
            """,
            example="""
            `python = "3.99"`.
            """,
            output="""
bench.toml:7:10: error[python-unavailable]: 'np-task' asks for Python 3.99, and this machine has no such interpreter
  hint: install Python 3.99 (`uv python install 3.99`, or the system's package), or change the entry's python
            """,
            fix="""
            install that Python (`uv python install 3.12`, or the system's
            package), or change the entry's `python` to a version the machine has;
            without `python`, the task class uses the harness's own.
            """,
        ),
        CodeDoc(
            codes.ENVIRONMENT_BUILD_FAILED,
            meaning="""
            `check --rubrics` builds the environment an entry declares before its
            rubrics run, and uv could not: it could not create the environment
            (`venv`), install the requirements (`install`: a pin no index or wheel
            directory has, a package that does not build), or the environments
            directory may not be used (`store`). That task class's rubrics do not
            run; the other task classes are checked as usual. The diagnostic is at
            the entry's `environment` value (its `python` value when only `python`
            is declared); `-v` shows what uv said.
            """,
            example="""
            `envs/np-task.txt` pins `numpy==0.0.1`, which no index has.
            """,
            output="""
bench.toml:7:15: error[environment-build-failed]: the environment of 'np-task' cannot be built (install failed): cause: Because there is no version of numpy==0.0.1 and you require numpy==0.0.1, we can conclude that your requirements are unsatisfiable.
  hint: read uv's output (-v shows it); fix the requirements file, or build offline from a wheel directory (`UV_FIND_LINKS=DIR UV_NO_INDEX=1 codegenie-bench env build np-task`)
            """,
            fix="""
            read uv's output; fix the requirements file, or give uv a wheel
            directory (`UV_FIND_LINKS=DIR UV_NO_INDEX=1 codegenie-bench env build
            SLUG`); `codegenie-bench env build SLUG` tries that one alone.
            """,
        ),
        CodeDoc(
            codes.ORPHAN_TASK_CLASS,
            meaning="""
            A `registration.py` under a declared root that no entry lists: a task
            class the harness can never load. Hidden directories, `__pycache__` and
            the `cases/` directory of a task class package are not searched: a case's
            `input/` or `expected/` may hold a `registration.py` as data for the
            solver.
            """,
            example="""
            `bench/secret_rotation/registration.py` exists, `bench.toml` has no
            `[task-classes.secret-rotation]`.
            """,
            output="""
bench/secret_rotation/registration.py:1:1: error[orphan-task-class]: bench/secret_rotation/registration.py (bench.secret_rotation.registration) is under a declared root, but no entry of bench.toml lists it
  hint: add [task-classes.secret-rotation] with module = "bench.secret_rotation.registration" to bench.toml, or delete the directory
            """,
            fix="""
            add the entry (or use `codegenie-bench new`, which writes both), or
            delete the directory.
            """,
        ),
        CodeDoc(
            codes.IMPORT_FAILED,
            meaning="""
            Importing the registration raised — any exception, a missing dependency,
            `sys.exit()` (a `sys.exit(0)` never turns the check green) — or another
            file answered for the module (`… found bench.py instead of
            bench/x/registration.py`). Located at the deepest frame of the failure
            that lies under the bench root: the line of a helper module that raised,
            not the line of `registration.py` that imported it; at the slug's table
            when no frame lies under the root. `-v` prints the registration's
            traceback, without the loader's frames. Also reported, at the slug's
            table, when what came on the check's private result channel is not the
            answer of the slug's process, stopped where the probe answers — the
            registration wrote there, or wrote an answer and then exited before the
            probe's code ran: such an answer cannot be trusted, and it is that
            slug's problem, never another's.
            """,
            example="""
            `bench/vuln_remediation/helpers.py` line 3 is `raise
            RuntimeError("boom")`, and the registration imports it.
            """,
            output="""
bench/vuln_remediation/helpers.py:3:1: error[import-failed]: importing bench.vuln_remediation.registration for 'vuln-remediation' raised RuntimeError: boom
  hint: fix the error; -v shows the registration's traceback
            """,
            fix="""
            fix the error; `codegenie-bench show SLUG` reports it the same way,
            in-process.
            """,
        ),
        CodeDoc(
            codes.IMPORT_CRASHED,
            meaning="""
            The process importing the registration died: `os._exit()`, a signal (a
            segfaulting extension, an out-of-memory kill), or a registration that
            killed the check's worker. Reported as soon as the process is gone, even
            when something it started keeps its pipes open. The other slugs are still
            checked.
            """,
            example="""
            the registration calls `os._exit(7)`.
            """,
            output="""
bench.toml:12:1: error[import-crashed]: the interpreter died while importing bench.exits_hard.registration for 'exits-hard' (exited with status 7)
  hint: remove the os._exit or the crashing extension call from the import path
            """,
            fix="""
            remove whatever kills the interpreter from the import path.
            """,
        ),
        CodeDoc(
            codes.IMPORT_TIMEOUT,
            meaning="""
            The import did not finish within `--timeout` seconds (per slug, default
            60; `--timeout inf` for no limit). The slug's process is killed with its
            process group and whatever it started.
            """,
            example="""
            the registration runs `while True: pass` at import time.
            """,
            output="""
bench.toml:16:1: error[import-timeout]: importing bench.loops.registration for 'loops' did not finish (no answer within 60 s)
  hint: move slow or blocking work out of module import, into the task class's methods
            """,
            fix="""
            move slow or blocking work out of module import into the task class's
            methods.
            """,
        ),
        CodeDoc(
            codes.IMPORT_LEFT_RUNNING,
            meaning="""
            When the import returned, it had left threads or child processes running:
            a `threading.Thread` started at module level, a `subprocess.Popen` never
            waited for, an `os.fork()` whose child carried on. They are killed with
            the slug's process, but in the harness they would outlive the load.
            """,
            example="""
            the registration starts `threading.Thread(target=poll, name="poller")`.
            """,
            output="""
bench.toml:9:1: warning[import-left-running]: importing bench.poller.registration for 'poller' left 1 thread (poller) running
  hint: start threads and processes in the task class's methods, not at import
            """,
            fix="""
            start threads and processes in the task class's methods, not at import.
            """,
        ),
        CodeDoc(
            codes.SOURCE_UNPARSABLE,
            meaning="""
            The registration's source cannot be parsed at all — an expression nested
            too deeply for the parser, a NUL byte — so it is neither read for the
            other checks nor imported. (A plain syntax error is `import-failed`, at
            its line.)
            """,
            example="""
            a generated `registration.py` holding a 200,000-term expression.
            """,
            output="""
bench/generated/registration.py:1:1: error[source-unparsable]: 'generated' registration bench/generated/registration.py cannot be parsed: it is nested too deeply for the parser
  hint: simplify the source: split the expression, generate data at run time
            """,
            fix="""
            split the expression; generate large data at run time or read it from a
            file.
            """,
        ),
        CodeDoc(
            codes.NOT_REGISTERED,
            meaning="""
            The registration imported but did not register its slug: the class is not
            decorated, or is decorated with another slug. When the one slug it
            registers is close to the table's and declared nowhere else, the table is
            what is misspelt, not the code: the message says so and names the slug
            the code registers (one problem, not also an `extra-registration` and a
            `module-convention`).
            """,
            example="""
            `[task-classes.dockerfile-pinn]` names `bench.dockerfile_pin.registration`,
            which registers `dockerfile-pin`.
            """,
            output="""
bench.toml:6:1: error[not-registered]: bench.dockerfile_pin.registration registers 'dockerfile-pin', but bench.toml declares it as 'dockerfile-pinn': the table [task-classes.dockerfile-pinn] probably misspells the slug
  hint: rename [task-classes.dockerfile-pinn] to [task-classes.dockerfile-pin] in bench.toml
            """,
            fix="""
            rename the table to the slug the code registers; or, when the table's
            slug is the one you want, decorate the task class with
            `@register_task_class("<slug>")` under that slug.
            """,
        ),
        CodeDoc(
            codes.EXTRA_REGISTRATION,
            meaning="""
            The registration registered something other than its own slug (a second
            task class, or another slug's registration that it imports).
            """,
            example="""
            the module also has `@register_task_class("sneaky")` at line 8.
            """,
            output="""
bench/two_slugs/registration.py:8:1: error[extra-registration]: importing bench.two_slugs.registration for 'two-slugs' also registered 'sneaky'
  hint: register exactly one task class per registration module, under its own slug
            """,
            fix="""
            one task class per registration module, registered under its own slug.
            """,
        ),
        CodeDoc(
            codes.RUBRIC_IMPORTED,
            meaning="""
            The registration imports, reads or runs a rubric. A rubric is a
            standalone script that grades a candidate: the harness only ever runs it
            in a subprocess of its own, on copies, with a time limit, and never
            imports it into the process that loads task classes, where grading code
            would run at registration time with nothing to contain it. Found by
            reading the source (at the import line, without running it) and, for
            every other route — `importlib.import_module`,
            `importlib.util.spec_from_file_location`, `runpy.run_path`,
            `exec(open(".../rubric.py").read())` — by the interpreter's audit hooks
            (`open`, `compile`, `exec`) while the registration is imported.
            """,
            example="""
            `from bench.uses_rubric import rubric` at line 2.
            """,
            output="""
bench/uses_rubric/registration.py:2:1: error[rubric-imported]: 'uses-rubric' registration imports rubric module 'bench.uses_rubric.rubric'
  hint: remove the import: a rubric runs only as a script, in a subprocess (`codegenie-bench explain rubric-imported`)
            """,
            fix="""
            remove the import; what the registration needs from the rubric belongs in
            a module of its own that both may import. The harness runs `rubric.py` as
            a script: `python rubric.py CASE_DIR CANDIDATE_DIR`.
            """,
        ),
        CodeDoc(
            codes.RUBRIC_MISSING,
            meaning="""
            The task class's rubric file — `rubric.py` beside `registration.py`, or
            what the decorator's `rubric=` names — does not exist: nothing can grade
            its cases. Located at the `@register_task_class` line.
            """,
            example="""
            `bench/vuln_remediation/rubric.py` was deleted.
            """,
            output="""
bench/vuln_remediation/registration.py:10:1: error[rubric-missing]: the rubric of 'vuln-remediation', bench/vuln_remediation/rubric.py, does not exist
  hint: create rubric.py beside registration.py, or fix the decorator's rubric=
            """,
            fix="""
            restore or write `rubric.py` (`codegenie-bench explain rubric-error` has
            the protocol it follows; `codegenie-bench new` scaffolds one that runs),
            or point `rubric=` at the file.
            """,
        ),
        CodeDoc(
            codes.CASES_MISSING,
            meaning="""
            The task class has no cases: its `cases/` directory is missing or empty.
            """,
            example="""
            `bench/vuln_remediation/cases/` was deleted.
            """,
            output="""
bench/vuln_remediation/registration.py:10:1: warning[cases-missing]: 'vuln-remediation' has no cases: nothing can be graded
  hint: add cases/<case-id>/ with case.toml, input/ and expected/
            """,
            fix="""
            add `cases/<case-id>/` with `case.toml`, `input/` (what the solver starts
            from) and `expected/` (a known-good solution).
            """,
        ),
        CodeDoc(
            codes.CASE_LAYOUT,
            meaning="""
            A case directory lacks `case.toml`, `input/` or `expected/`, its name is
            not a valid case id (lowercase ASCII letters, digits, `-`, `_` and `.`,
            starting with a letter or digit, at most 100 characters), or `cases/`
            holds something that is not a case directory (names starting with `.`
            are ignored).
            """,
            example="""
            `bench/vuln_remediation/cases/Requests-CVE/` (uppercase letters).
            """,
            output="""
bench/vuln_remediation/cases/Requests-CVE: error[case-layout]: case 'Requests-CVE' of 'vuln-remediation': invalid case id 'Requests-CVE': …
  hint: give every case directory a valid id and its case.toml, input/ and expected/
            """,
            fix="""
            rename the directory, or add the missing file or directory.
            """,
        ),
        CodeDoc(
            codes.CASE_INVALID,
            meaning="""
            A `case.toml` cannot be read as TOML, or breaks the common keys or the
            task class's `case_model`. The common keys, all optional:
            `description` (a string), `tags` (an array of strings), `timeout`
            (seconds one rubric run may take, a number above 0, default 60), the
            run's limits `memory`, `processes`, `file-size`, `cpu-time`, `disk` and
            `disk-files`, and `id` (if written, the directory's name). Every other key belongs to the task
            class's `case_model`. Every problem of every case is reported, at its
            line and column (a wrong value at the value, an unknown key at the key),
            up to 1,000 per task class; then one more `case-invalid`, at the task
            class's registration, counts the rest. Case files are validated in the
            same isolated process that imports the registration, since the case
            model comes from it.
            """,
            example="""
            `fixed-version = 2.31` (a float) where the case model wants a string.
            """,
            output="""
bench/vuln_remediation/cases/requests-cve-2023-32681/case.toml:3:17: error[case-invalid]: case 'requests-cve-2023-32681' of 'vuln-remediation': fixed-version: expected a string, got a float
  hint: fix the key at this position; `codegenie-bench explain case-invalid` lists the common keys
            """,
            fix="""
            correct the key or value at that position.
            """,
        ),
        CodeDoc(
            codes.GOLDEN_FAILS,
            meaning="""
            The case's known-good solution (`expected/`) fails its rubric: every
            score measured on this case is wrong. The rubric runs on a copy, so the
            bench is not changed.
            """,
            example="""
            `expected/requirements.txt` pins a release that is still vulnerable.
            """,
            output="""
bench/vuln_remediation/cases/requests-cve-2023-32681/case.toml:1:1: error[golden-fails]: the known-good solution (expected/) of case 'requests-cve-2023-32681' of 'vuln-remediation' fails: requests==2.30.0 is still vulnerable (fixed in 2.31.0)
  hint: fix expected/ or the rubric: a gold solution must pass
            """,
            fix="""
            correct `expected/`, or the rubric.
            """,
        ),
        CodeDoc(
            codes.INPUT_PASSES,
            meaning="""
            The case's unsolved input (`input/`) already passes its rubric: the case
            is solved by doing nothing, and every score measured on it is inflated.
            """,
            example="""
            `input/requirements.txt` already pins the fixed release.
            """,
            output="""
bench/vuln_remediation/cases/requests-cve-2023-32681/case.toml:1:1: error[input-passes]: the unsolved input (input/) of case 'requests-cve-2023-32681' of 'vuln-remediation' already passes: requests==2.31.0
  hint: make the rubric reject the input, or the case is solved by doing nothing
            """,
            fix="""
            make `input/` the unsolved starting point, or make the rubric reject it.
            """,
        ),
        CodeDoc(
            codes.RUBRIC_ERROR,
            meaning="""
            The rubric broke its protocol on a case. The protocol: the harness runs
            `python rubric.py CASE_DIR CANDIDATE_DIR` on copies of the case and the
            candidate, in an empty temporary working directory, with stdin at end of
            file; the rubric prints one JSON object on stdout, `{"passed": true,
            "score": 1.0, "reason": "…"}` (`passed` a boolean, required; `score` a
            number from 0 to 1 and `reason` a string, optional), and exits 0 when it
            passed, 1 when it failed; diagnostics go to stderr. Anything else is a
            rubric error: another exit status (2 included), death by a signal,
            nothing or more than one JSON value on stdout, more than 1 MiB of it, a
            `passed` that is not a boolean, a `score` outside 0 to 1, an exit status
            that contradicts `passed`. A rubric error is never a pass.
            """,
            example="""
            the rubric raises `KeyError` on a key the case lacks.
            """,
            output="""
bench/vuln_remediation/cases/requests-cve-2023-32681/case.toml:1:1: error[rubric-error]: the rubric broke its protocol on expected/ of case 'requests-cve-2023-32681' of 'vuln-remediation': exited with status 2 …
  hint: make the rubric print one verdict object and exit 0 (passed) or 1 (failed); `codegenie-bench explain rubric-error` has the protocol
            """,
            fix="""
            make the rubric print one verdict object and exit 0 (passed) or 1
            (failed) on every candidate.
            """,
        ),
        CodeDoc(
            codes.RUBRIC_TIMEOUT,
            meaning="""
            The rubric did not decide within the case's `timeout` (seconds, default
            60); everything it started was killed. It is reported at the `timeout`
            key of `case.toml`, or at the case directory when the case takes the
            default.
            """,
            example="""
            the rubric waits for input that never comes.
            """,
            output="""
bench/slow_one/cases/example/case.toml:1:1: error[rubric-timeout]: the rubric did not decide on expected/ of case 'example' of 'slow-one' within 60 s
  hint: make the rubric faster, or raise the case's timeout in case.toml
            """,
            fix="""
            make the rubric faster, or raise `timeout` in the case's `case.toml`.
            """,
        ),
        CodeDoc(
            codes.CASE_FLAKY,
            meaning="""
            The case's rubric gave different verdicts on the same input. With
            `--repeat N` each side runs N times: every run of `expected/` must pass
            and every run of `input/` must fail. The message gives the counts of
            each side and the reason of each run that disagreed. A flaky case is
            never served from the store of results: the next check runs it again.
            """,
            example="""
            a rubric that depends on the time, a random seed, the network or the
            order of a directory listing.
            """,
            output="""
bench/clock/cases/example/case.toml:1:1: error[case-flaky]: case 'example' of 'clock' gives different verdicts on the same input: expected/ passed 3 of 5 runs; input/ failed 5 of 5 runs; expected/ run 2: failed (late); expected/ run 4: failed (late)
  hint: make the rubric and the case deterministic (seeds, time, network, ordering), then check again with --repeat
            """,
            fix="""
            make the rubric and the case deterministic (fixed seeds, no clock, no
            network, sorted listings), then run `check --rubrics --repeat 5` again.
            """,
        ),
        CodeDoc(
            codes.TIMEOUT_TIGHT,
            meaning="""
            The slowest run of the case's known-good solution (`expected/`) took
            more than half of the case's `timeout`: a slower machine, or a loaded CI
            runner, will time it out. A limit should be at least twice what the
            reference solution needs. The JSON output (`rubrics.cases[].wall_s`)
            gives the minimum, median and maximum over the runs, to set the limit
            from data. An error under `--strict`.
            """,
            example="""
            `timeout = 2` and `expected/` takes 1.2 s.
            """,
            output="""
bench/slow_one/cases/example/case.toml:2:1: warning[timeout-tight]: the known-good solution of case 'example' of 'slow-one' took 1.20 s, more than half of its timeout of 2 s
  hint: raise the case's timeout to at least twice what expected/ needs
            """,
            fix="""
            raise `timeout` in `case.toml` to at least twice what `expected/` needs,
            or make the rubric faster.
            """,
        ),
        CodeDoc(
            codes.UNUSED_IGNORE,
            meaning="""
            A task-class entry of `bench.toml` accepts a code (`accept = [...]`)
            that `check` no longer reports for that task class: the problem the
            entry accepted is gone, and the stale acceptance would hide it if it
            came back. Codes only `--rubrics` reports are judged only under
            `--rubrics`, and an entry with an error of its own is not judged (its
            check stopped short). An error under `--strict`.
            """,
            example="""
            `accept = ["cases-missing"]` in `[task-classes.vuln-remediation]`, and
            the task class now has a case.
            """,
            output="""
bench.toml:7:10: warning[unused-ignore]: 'vuln-remediation' accepts 'cases-missing', which no longer occurs for it
  hint: remove the code from the entry's accept: the problem it accepted is gone
            """,
            fix="""
            remove the code from the entry's `accept` (and `accept` itself when it
            is empty).
            """,
        ),
        CodeDoc(
            codes.MEMORY_TIGHT,
            meaning="""
            The largest run of the case's known-good solution used more than half
            of the case's `memory` limit (MiB). `rubrics.cases[].peak_memory_mib` in
            the JSON output gives the spread. An error under `--strict`.
            """,
            example="""
            `memory = 256` and `expected/` peaks at 180 MiB.
            """,
            output="""
bench/big/cases/example/case.toml:4:1: warning[memory-tight]: the known-good solution of case 'example' of 'big' used 180 MiB, more than half of its memory limit of 256 MiB
  hint: raise the case's memory to at least twice what expected/ needs
            """,
            fix="""
            raise `memory` in `case.toml` to at least twice what `expected/` needs.
            """,
        ),
        CodeDoc(
            codes.RUBRIC_EXPLOITABLE,
            meaning="""
            The rubric graded `passed` a candidate that solves nothing: one of the
            exploits of the cheat run that `check --rubrics` makes on every rubric.
            `codegenie-bench exploits` lists the catalogue: an empty tree; an object
            that equals everything in place of every function of `expected/`; a
            module that prints a passing verdict (on `sys.stdout`, `sys.__stdout__`,
            file descriptor 1, `/dev/stdout`, `/proc/self/fd/1`) and exits; modules
            that end the process at import, or replace `print`, `json.dumps`,
            `sys.exit`, `unittest`'s assertions or `AssertionError`, or register a
            forged verdict with `atexit`; a search for the case's reference; test
            files deleted, emptied or skipped, a `conftest.py`, `sitecustomize.py` or
            `.pth` that passes everything; a candidate that sleeps or allocates
            without bound. Each is generated from the case's own `expected/` and
            `input/`, so that it has the shape the rubric expects, and runs like any
            candidate (sandbox, executor, `--repeat`, the store of results). A
            score measured with such a rubric can be bought without solving the
            task. The message names the exploit, what it does and what the rubric
            said; `rubrics.cases[]` of the JSON output has every exploit's verdict
            per case (`"side": "exploit"`).

            An exploit whose success depends on each case's tests (the universal
            value) runs on every case; the others attack how the rubric runs
            candidate code and reads its verdict, the same for every case, and are
            spread over a task class's cases so that each runs at least once (the
            resource exploits on one case). A task class adds its own as candidate
            trees in `cases/<id>/exploits/<name>/`, reported as `exploits/<name>`.
            """,
            example="""
            a rubric that executes the candidate's `solution.py` and the case's tests
            in its own process and prints the verdict.
            """,
            output="""
bench/humaneval/rubric.py: error[rubric-exploitable]: the rubric graded the exploit 'universal-value' passed on case 'humaneval-0' of 'humaneval': it defines every function, class and method of the reference's Python files with the same names and parameters, each returning an object that equals, contains and orders before and after everything and returns itself from arithmetic, calls, indexing and attribute access (the rubric said: 'passed')
  hint: compare results with exact types (type(a) is type(b) and a == b); `codegenie-bench explain rubric-exploitable` says how to harden a rubric
            """,
            fix="""
            harden the rubric: run candidate code in a child process whose stdout is
            its own, and read the outcome over a channel only the rubric holds (a
            pipe, with a secret); keep the rubric undumpable; compare results with
            exact types (`type(a) is type(b) and a == b`, plain data only); never
            hand candidate code the case directory; run the tests from the case,
            never from the candidate tree, with `python -I -S`; treat a timeout or a
            limit as a failure. The module `codegenie_rubric`, which the sandbox
            puts on every rubric's path whatever its interpreter, does each in one
            call. To phase a new exploit in, ignore it for a while
            (`--ignore-exploits NAME`, or `ignore-exploits` in
            `[tool.codegenie-bench]`; both show in `--show-settings` and the
            report), or accept the code for one task class in its manifest entry.
            """,
        ),
        CodeDoc(
            codes.ANSWER_KEY_READABLE,
            meaning="""
            The task class declares `reads_expected=True` (its rubric compares a
            candidate with the case's reference, so its runs' `CASE_DIR` holds
            `expected/`), and the cheat run's answer-key exploit passed: candidate
            code found the reference through the rubric and copied or ran it.
            Without `reads_expected`, no run's `CASE_DIR` holds `expected/` (the
            sandbox hides the bench's `cases/` too), and such a pass is
            `rubric-exploitable` instead.
            """,
            example="""
            a rubric that declares `reads_expected=True`, compares the candidate's
            output with `CASE_DIR/expected/output.txt`, and runs the candidate's
            program with `CASE_DIR` as its working directory.
            """,
            output="""
bench/report/rubric.py: warning[answer-key-readable]: the rubric declares that it reads the reference (reads_expected), and candidate code read it too: the exploit 'answer-key-search' (looks for a directory named expected holding a file of its own name (from sys.argv, the working directory and their parents, /proc/self/cwd, environment variables, and a bounded walk of readable directories) and executes what it finds as its own module) passed on case 'example' of 'report'
  hint: read what the rubric needs of CASE_DIR/expected, then delete that copy before any candidate code runs; or grade without the reference
            """,
            fix="""
            read what the rubric needs of `CASE_DIR/expected/` into memory, then
            delete that directory (the run's copy; the bench's is untouched) before
            any candidate code starts: the run's copies of the case and the candidate
            lie side by side in one run directory, so a child process given only the
            candidate's path can still walk up to the case. Or grade without the
            reference (tests in the case, beside `case.toml`) and drop
            `reads_expected`.
            """,
        ),
    )
}
