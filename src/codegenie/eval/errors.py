"""Every error the bench loader raises, with the data a caller needs to act on it.

This module imports nothing from the rest of the package, so any module can
import it without an import cycle.

Each class carries:

- ``code``: a stable kebab-case identifier (``task-class-not-found``), used in
  diagnostics and JSON output;
- ``exit_code``: the command-line exit status for this failure (the CLI maps
  exceptions to exit codes through this attribute, never through message text);
- its diagnostic fields as named attributes (``exc.name``, ``exc.suggestions``);
- ``hint``: one sentence telling a curator what to do next (every error has one;
  it never names a file the installed package does not ship).

All errors survive pickling, so they can cross process boundaries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, final

__all__ = (
    "BenchCaseLoadError",
    "BenchCasesInvalid",
    "BenchManifestInvalid",
    "BenchManifestNotFound",
    "BenchRootNotFound",
    "BenchRootOutsideManifest",
    "CandidatesDirInvalid",
    "CaseNotFound",
    "CaseProblem",
    "CheckUnavailable",
    "CompareRefused",
    "EnvironmentBuildFailed",
    "EnvironmentNotBuilt",
    "EvalError",
    "ExecutorUnavailable",
    "InitConflict",
    "InvalidTaskClassName",
    "ManifestProblem",
    "PythonUnavailable",
    "ReportProblem",
    "ReportsInvalid",
    "RubricMissing",
    "RunPlanError",
    "SampleProblem",
    "SamplesInvalid",
    "SandboxUnavailable",
    "ScaffoldArgumentInvalid",
    "ScaffoldConflict",
    "ScaffoldFailed",
    "SettingsInvalid",
    "TaskClassAlreadyRegistered",
    "TaskClassModuleMismatch",
    "TaskClassNotFound",
    "TaskClassRegistrationFailed",
    "TaskClassRootConflict",
)

#: How much of an exception's message a ``TaskClassRegistrationFailed`` keeps.
CAUSE_MESSAGE_LIMIT = 200


class EvalError(Exception):
    """Base class of every error raised by ``codegenie.eval``.

    Subclasses list their diagnostic attributes in ``fields`` (in constructor
    order); ``attributes()`` returns them as a dict, and pickling rebuilds the
    error from them.
    """

    code: ClassVar[str] = "eval-error"
    exit_code: ClassVar[int] = 1
    fields: ClassVar[tuple[str, ...]] = ()

    def __init__(self, message: str) -> None:
        super().__init__(message)

    @property
    def message(self) -> str:
        """The human-readable message (the same text as ``str(error)``)."""
        return str(self)

    @property
    def hint(self) -> str:
        """What a curator should do next: one sentence, for every error."""
        return "the message says what is wrong; fix it and run the command again"

    def attributes(self) -> dict[str, object]:
        """Return the error's diagnostic fields by name, in declaration order."""
        return {name: getattr(self, name) for name in self.fields}

    def __reduce__(self) -> tuple[object, ...]:
        # Rebuild from the named fields, not from ``args`` (which holds only the
        # rendered message), so that a pickled error keeps its data.
        return (_rebuild, (type(self), self.attributes()))


def _rebuild(cls: type[EvalError], attributes: dict[str, object]) -> EvalError:
    factory: Callable[..., EvalError] = cls
    return factory(**attributes)


def _listed(where: str, problems: list[str], shown: int = 50) -> str:
    """Return ``N problems in WHERE``, the first ``shown`` of them a line each, and a count."""
    count = len(problems)
    lines = [
        f"{count} problem{'s' if count != 1 else ''} in {where}",
        *(f"  {problem}" for problem in problems[:shown]),
    ]
    if count > shown:
        lines.append(f"  … and {count - shown} more")
    return "\n".join(lines)


def _quote_list(names: tuple[str, ...], limit: int = 5) -> str:
    shown = ", ".join(repr(n) for n in names[:limit])
    if len(names) > limit:
        shown += f", … ({len(names) - limit} more)"
    return shown


@final
class InvalidTaskClassName(EvalError):
    """A slug breaks the slug rules; nothing was touched.

    Exit 1, a validation error, as the story pins it: the same for a slug
    typed on the command line (``show``, ``plan``, ``grade``, ``check SLUG``,
    ``new``) and one a registration passes to ``register_task_class``. Other
    command-line mistakes exit 2; a manifest's own bad slug is a schema
    problem of the manifest (``BenchManifestInvalid``) instead.
    """

    code = "invalid-task-class-name"
    exit_code = 1
    fields = ("name", "reason")

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(f"invalid task-class name {name!r}: {reason}")

    @property
    def hint(self) -> str:
        return (
            "a slug is 2 to 64 characters of lowercase ASCII letters, digits and "
            "hyphens, starts with a letter and does not end with a hyphen "
            "(e.g. 'vuln-remediation')"
        )


@final
class TaskClassRegistrationFailed(EvalError):
    """Importing a task class's ``registration.py`` raised.

    Whatever it raised — any ``BaseException`` but ``KeyboardInterrupt``,
    ``SystemExit`` and ``GeneratorExit`` included — is chained as
    ``__cause__``; ``cause_type`` and ``cause_message`` (at most 200
    characters; ``<unprintable X object>`` when the exception cannot be turned
    into text) survive pickling. ``source`` and ``line`` point at the
    registration file and the line that raised, when known.
    """

    code = "registration-failed"
    exit_code = 1
    fields = ("name", "cause_type", "cause_message", "source", "line")

    def __init__(
        self,
        name: str,
        cause_type: str,
        cause_message: str,
        source: Path | None = None,
        line: int | None = None,
    ) -> None:
        self.name = name
        self.cause_type = cause_type
        self.cause_message = cause_message[:CAUSE_MESSAGE_LIMIT]
        self.source = source
        self.line = line
        where = ""
        if source is not None:
            where = f" ({source}:{line})" if line is not None else f" ({source})"
        detail = f"{cause_type}: {self.cause_message}" if self.cause_message else cause_type
        super().__init__(f"registration of task class {name!r} failed{where}: {detail}")

    @property
    def hint(self) -> str:
        return "fix the error in the registration module, then load the task class again"


@final
class TaskClassRootConflict(EvalError):
    """One slug was asked for from two different bench roots.

    ``first_root`` is the root the manifest declares (when ``declared_in`` names
    the manifest) or the root an earlier load in this process used;
    ``second_root`` is the root of the request that was refused.
    """

    code = "task-class-root-conflict"
    exit_code = 1
    fields = ("name", "first_root", "second_root", "declared_in")

    def __init__(
        self,
        name: str,
        first_root: Path,
        second_root: Path,
        declared_in: Path | None = None,
    ) -> None:
        self.name = name
        self.first_root = first_root
        self.second_root = second_root
        self.declared_in = declared_in
        if declared_in is not None:
            text = (
                f"task class {name!r} is declared in {declared_in} with root "
                f"{first_root}, but was requested from {second_root}"
            )
        else:
            text = (
                f"task class {name!r} was already loaded from {first_root} in this "
                f"process; it cannot also be loaded from {second_root}"
            )
        super().__init__(text)

    @property
    def hint(self) -> str:
        if self.declared_in is not None:
            return f"load it from {self.first_root}, or change its root in {self.declared_in}"
        return "use one bench root per process, or start a new process for the other root"


@final
class TaskClassAlreadyRegistered(EvalError):
    """A second registration of a name that a registry already holds."""

    code = "task-class-already-registered"
    exit_code = 1
    fields = ("name", "first_module", "second_module")

    def __init__(self, name: str, first_module: str, second_module: str) -> None:
        self.name = name
        self.first_module = first_module
        self.second_module = second_module
        super().__init__(
            f"task class {name!r} is already registered by {first_module}; "
            f"{second_module} tried to register it again"
        )

    @property
    def hint(self) -> str:
        return "give each task class its own slug, registered by exactly one module"


@final
class TaskClassModuleMismatch(EvalError):
    """The import system answered with a file other than the manifest's.

    Typically another ``bench`` package (installed, or from an earlier root)
    shadows the bench root. ``actual_file`` is the file of the module that
    answered, or of the shadowing package when nothing answered.
    """

    code = "task-class-module-mismatch"
    exit_code = 1
    fields = ("name", "module", "expected_file", "actual_file")

    def __init__(
        self, name: str, module: str, expected_file: Path, actual_file: Path | None
    ) -> None:
        self.name = name
        self.module = module
        self.expected_file = expected_file
        self.actual_file = actual_file
        found = actual_file if actual_file is not None else "a module with no file"
        super().__init__(
            f"importing {module} for task class {name!r} found {found} instead of {expected_file}"
        )

    @property
    def hint(self) -> str:
        return (
            "another package named like the bench root shadows it; uninstall or "
            "rename it, or load this bench in a fresh process"
        )


@final
class TaskClassNotFound(EvalError):
    """No task class of that name: not in the manifest, or not registered.

    ``looked_up_in`` is the manifest path (slug not declared) or the module that
    was imported (module did not register the slug). ``available_names`` lists
    what was there instead; ``suggestions`` the closest of those names.
    """

    code = "task-class-not-found"
    exit_code = 3
    fields = ("name", "looked_up_in", "available_names", "suggestions")

    def __init__(
        self,
        name: str,
        looked_up_in: str,
        available_names: tuple[str, ...] = (),
        suggestions: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.looked_up_in = looked_up_in
        self.available_names = tuple(available_names)
        self.suggestions = tuple(suggestions)
        text = f"task class {name!r} not found in {looked_up_in}"
        if self.suggestions:
            text += f"; did you mean {_quote_list(self.suggestions)}?"
        elif self.available_names:
            text += f"; it has {_quote_list(self.available_names)}"
        else:
            text += "; it has no task classes"
        super().__init__(text)

    @property
    def hint(self) -> str:
        if self.looked_up_in.endswith(".toml"):
            if self.suggestions:
                return "`codegenie-bench list` shows every declared task class"
            return (
                "add the task class with `codegenie-bench new SLUG`, "
                "or list the declared ones with `codegenie-bench list`"
            )
        return (
            f"decorate the task class in {self.looked_up_in} "
            f"with @register_task_class({self.name!r})"
        )


@final
class BenchRootNotFound(EvalError):
    """The bench root is not an existing directory."""

    code = "bench-root-not-found"
    exit_code = 4
    fields = ("bench_root",)

    def __init__(self, bench_root: Path) -> None:
        self.bench_root = bench_root
        super().__init__(f"bench root {bench_root} is not a directory")

    @property
    def hint(self) -> str:
        return "pass the directory that holds the task-class packages (e.g. 'bench')"


@final
class BenchRootOutsideManifest(EvalError):
    """A bench root that resolves (symbolic links followed) outside the manifest's directory.

    Raised before anything is imported: the manifest governs the tree below its
    own directory, and code outside that tree is never run on its authority.
    ``bench_root`` is the resolved root, ``manifest_dir`` the resolved
    directory of the manifest.
    """

    code = "root-outside"
    exit_code = 4
    fields = ("bench_root", "manifest_dir")

    def __init__(self, bench_root: Path, manifest_dir: Path) -> None:
        self.bench_root = bench_root
        self.manifest_dir = manifest_dir
        super().__init__(
            f"bench root {bench_root} lies outside the manifest's directory {manifest_dir}"
        )

    @property
    def hint(self) -> str:
        return (
            f"keep the bench root inside {self.manifest_dir}: replace the symbolic link "
            "with the directory itself, or move bench.toml to a directory that contains both"
        )


@final
class BenchCaseLoadError(EvalError):
    """A file a task class needs is missing or unreadable.

    ``case_dir`` is the task-class directory, ``field`` the file (or item) that
    failed, ``reason`` why (``"file not found"``).
    """

    code = "bench-case-load-error"
    exit_code = 4
    fields = ("case_dir", "field", "reason")

    def __init__(self, case_dir: Path, field: str, reason: str) -> None:
        self.case_dir = case_dir
        self.field = field
        self.reason = reason
        super().__init__(f"{case_dir / field}: {reason}")

    @property
    def hint(self) -> str:
        return f"create {self.case_dir / self.field}, or fix the entry's module in the manifest"


@final
class BenchManifestNotFound(EvalError):
    """No manifest file; ``path`` is the first place looked.

    ``searched_parents`` says whether the search went on through the parent
    directories of ``path`` (discovery) or looked at ``path`` alone (a path
    the caller named, such as ``--manifest``).
    """

    code = "manifest-not-found"
    exit_code = 4
    fields = ("path", "searched_parents")

    def __init__(self, path: Path, searched_parents: bool = True) -> None:
        self.path = path
        self.searched_parents = searched_parents
        if searched_parents:
            text = f"no bench manifest found (looked for {path} and in its parents)"
        else:
            text = f"no bench manifest at {path}: there is no such file"
        super().__init__(text)

    @property
    def hint(self) -> str:
        if self.searched_parents:
            return (
                "create one here with `codegenie-bench init`, run from inside the bench's "
                "repository, or pass --manifest PATH"
            )
        return f"check the path: {self.path} does not exist"


@dataclass(frozen=True, slots=True)
class ManifestProblem:
    """One problem found in a manifest: where it is, and what is wrong.

    ``kind`` is ``"syntax"`` (the bytes or the TOML cannot be read),
    ``"schema"`` (valid TOML that breaks the schema) or ``"duplicate-module"``;
    ``slug`` is the task class the problem belongs to, when it belongs to one.
    """

    line: int
    column: int
    key: str
    message: str
    kind: str = "schema"
    slug: str | None = None

    def render(self, path: Path | str) -> str:
        """Return ``FILE:LINE:COL: KEY: MESSAGE``, the compiler convention."""
        key = f"{self.key}: " if self.key else ""
        return f"{path}:{self.line}:{self.column}: {key}{self.message}"


@final
class BenchManifestInvalid(EvalError):
    """A manifest that cannot be read or does not satisfy the schema.

    ``problems`` holds every problem found in the file, sorted by position, not
    just the first one.
    """

    code = "manifest-invalid"
    exit_code = 4
    fields = ("path", "problems")

    def __init__(self, path: Path, problems: tuple[ManifestProblem, ...]) -> None:
        self.path = path
        self.problems = tuple(problems)
        count = len(self.problems)
        header = f"{path}: {count} problem{'s' if count != 1 else ''} in the bench manifest"
        lines = [header, *(f"  {p.render(path)}" for p in self.problems)]
        super().__init__("\n".join(lines))

    @property
    def hint(self) -> str:
        return "fix the listed lines; `codegenie-bench schema` prints the expected format"


@final
class SettingsInvalid(EvalError):
    """The ``[tool.codegenie-bench]`` table of a ``pyproject.toml`` cannot be used (exit 2).

    The table holds the command line's defaults written down, so a bad value
    in it is the same mistake as a bad option: a usage error, exit 2, and
    never 4 (which says that the bench itself cannot be read). ``problems``
    holds every problem of the table, each with its line and column.
    """

    code = "settings-invalid"
    exit_code = 2
    fields = ("path", "problems")

    def __init__(self, path: Path, problems: tuple[ManifestProblem, ...]) -> None:
        self.path = path
        self.problems = tuple(problems)
        count = len(self.problems)
        header = f"{path}: {count} problem{'s' if count != 1 else ''} in [tool.codegenie-bench]"
        lines = [header, *(f"  {p.render(path)}" for p in self.problems)]
        super().__init__("\n".join(lines))

    @property
    def hint(self) -> str:
        return "fix the listed lines; `codegenie-bench check --help` lists the settings' options"


@final
class ScaffoldConflict(EvalError):
    """``codegenie-bench new`` refused: the slug, module or directory already exists.

    ``what`` is ``"slug"``, ``"module"``, ``"directory"`` or ``"manifest"``
    (the manifest cannot take the new entry); ``path`` is the file or
    directory concerned; ``entry`` is the slug of the manifest entry that
    already holds the slug or the module, when one does. Nothing was written.
    """

    code = "scaffold-conflict"
    exit_code = 1
    fields = ("name", "what", "path", "detail", "entry")

    def __init__(
        self, name: str, what: str, path: Path, detail: str, entry: str | None = None
    ) -> None:
        self.name = name
        self.what = what
        self.path = path
        self.detail = detail
        self.entry = entry
        super().__init__(f"cannot create task class {name!r}: {detail}")

    @property
    def hint(self) -> str:
        if self.what == "slug":
            return f"pick another slug, or edit the existing [task-classes.{self.name}]"
        if self.what == "module" and self.entry is not None:
            return (
                f"pick another slug, or rename the package of [task-classes.{self.entry}] "
                "and its module"
            )
        if self.what == "manifest":
            return f"write the entry into {self.path} by hand"
        return f"pick another slug, or remove {self.path} if it is left over"


@final
class RunPlanError(EvalError):
    """Some slugs of a run plan failed to resolve.

    ``errors`` maps each failing slug to its own typed error; ``resolved`` holds
    the task classes that did resolve. ``exit_code`` is the failures' common
    exit code, else 1.
    """

    code = "run-plan-error"
    fields = ("errors", "resolved")

    def __init__(self, errors: dict[str, EvalError], resolved: tuple[Any, ...] = ()) -> None:
        self.errors = dict(errors)
        self.resolved = tuple(resolved)
        codes = {e.exit_code for e in self.errors.values()}
        # Shadow the class default on the instance: the plan fails the way its
        # failures fail when they agree.
        self.exit_code = codes.pop() if len(codes) == 1 else 1  # type: ignore[misc]
        lines = [f"{len(self.errors)} of the requested task classes failed to resolve"]
        lines += [f"  {slug}: {err}" for slug, err in self.errors.items()]
        super().__init__("\n".join(lines))

    @property
    def hint(self) -> str:
        """The failures' own hint when they share one, else where every problem is listed."""
        hints = {error.hint for error in self.errors.values()}
        if len(hints) == 1:
            return hints.pop()
        return (
            "each failing task class's own error says what to fix; "
            "`codegenie-bench check` reports every problem of the bench at once"
        )


@final
class ScaffoldArgumentInvalid(EvalError):
    """``new`` refused an argument: ``--root`` breaks the manifest's rules, or it is not text.

    ``argument`` is ``"--root"`` or ``"--description"``, ``value`` what was
    given and ``reason`` the rule it breaks (a description, like a root, must
    be text that UTF-8 can write: no lone surrogates). A command-line usage
    error (exit 2); nothing was written. An invalid slug is
    ``InvalidTaskClassName`` (exit 1), in ``new`` as in every command.
    """

    code = "invalid-argument"
    exit_code = 2
    fields = ("argument", "value", "reason")

    def __init__(self, argument: str, value: str, reason: str) -> None:
        self.argument = argument
        self.value = value
        self.reason = reason
        super().__init__(f"invalid {argument} {value!r}: {reason}")

    @property
    def hint(self) -> str:
        """The rules of the argument that was refused."""
        if self.argument == "--root":
            return (
                "--root is a relative POSIX path inside the manifest's directory, "
                "without '..' or '.', whose last component is a Python identifier "
                "(e.g. 'bench' or 'suites/bench')"
            )
        return "pass the description as text: bench files are written in UTF-8"


@final
class ScaffoldFailed(EvalError):
    """``new`` or ``init`` could not write (a read-only tree, a full disk, …).

    ``path`` is the file or directory being written and ``reason`` what the
    operating system said. Every file and directory the run had created is
    removed again, and a manifest that was there is unchanged.
    """

    code = "scaffold-failed"
    exit_code = 4
    fields = ("path", "reason")

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"cannot write {path}: {reason}; nothing was changed")

    @property
    def hint(self) -> str:
        """What to fix before trying again."""
        return "make the bench tree writable (or free some space), then run the command again"


@final
class InitConflict(EvalError):
    """``codegenie-bench init`` refused: a manifest is already there, or its root is a file.

    ``path`` is what is in the way and ``reason`` what it is. Nothing was written.
    """

    code = "init-conflict"
    exit_code = 1
    fields = ("path", "reason")

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"cannot start a bench at {path}: {reason}")

    @property
    def hint(self) -> str:
        """What to do instead."""
        return (
            "this bench exists already: add a task class with `codegenie-bench new SLUG`, "
            "or run init in another directory"
        )


@final
class SandboxUnavailable(EvalError):
    """Rubrics were to run in a sandbox, and no sandbox can start here.

    Raised before any rubric runs. ``mode`` is the sandbox that was asked for
    (``"auto"`` or ``"bwrap"``); ``cause`` says in one sentence why none can
    start (with what bubblewrap said, when it said something); ``fixes`` lists
    what the user can do, most specific first, the last being to run without
    a sandbox knowingly (``--sandbox none``). Exit 4, like every environment
    that cannot do what was asked.
    """

    code = "sandbox-unavailable"
    exit_code = 4
    fields = ("mode", "cause", "fixes")

    def __init__(self, mode: str, cause: str, fixes: tuple[str, ...] = ()) -> None:
        self.mode = mode
        self.cause = cause
        self.fixes = tuple(fixes)
        super().__init__(f"cannot start the rubric sandbox (--sandbox {mode}): {cause}")

    @property
    def hint(self) -> str:
        """The fixes, most specific first; the last is to grade without a sandbox."""
        if not self.fixes:
            return "run with --sandbox none to grade without a sandbox, knowingly"
        return "; or ".join(self.fixes)


@final
class CheckUnavailable(EvalError):
    """``check`` cannot run its imports here: the system refuses it processes or descriptors.

    ``cause`` says what was refused, in words (``Too many open files``,
    ``Resource temporarily unavailable``). Raised instead of a verdict: no
    slug is blamed for what the machine cannot do. ``check`` already runs no
    more workers than the open-file limit leaves room for, so this means
    even one cannot run. Exit 4, like every environment that cannot do what
    was asked.
    """

    code = "check-unavailable"
    exit_code = 4
    fields = ("cause",)

    def __init__(self, cause: str) -> None:
        self.cause = cause
        super().__init__(f"cannot run the check's import processes: {cause}")

    @property
    def hint(self) -> str:
        """What to raise, or lower."""
        return "raise the open-file limit (ulimit -n) or the process limit (ulimit -u)"


@final
class PythonUnavailable(EvalError):
    """A task class asks for a Python (``python = "3.12"``) that this machine does not have.

    ``task_class`` is the slug, ``version`` what its manifest entry asks
    for, ``manifest`` the manifest that asks it. Raised before anything
    runs or is built. Exit 4, like every environment that cannot do what
    was asked.
    """

    code = "python-unavailable"
    exit_code = 4
    fields = ("task_class", "version", "manifest")

    def __init__(self, task_class: str, version: str, manifest: Path | str | None = None) -> None:
        self.task_class = task_class
        self.version = version
        self.manifest = None if manifest is None else Path(manifest)
        where = f" ({self.manifest})" if self.manifest is not None else ""
        super().__init__(
            f"task class {task_class!r} asks for Python {version}{where}, "
            "and this machine has no such interpreter"
        )

    @property
    def hint(self) -> str:
        """How to get one."""
        return (
            f"install Python {self.version} (`uv python install {self.version}`, or the "
            "system's package), or change the task class's `python` in the manifest"
        )


@final
class EnvironmentBuildFailed(EvalError):
    """Building a task class's environment failed: uv could not create or install it.

    ``task_class`` is the slug (the first, when several share the
    environment), ``requirements`` the requirements file, ``digest`` the
    environment's digest, ``step`` what failed (``"venv"``, ``"install"``,
    ``"python"``, ``"store"``) and ``output`` what uv (or the system) said,
    its last 8 KiB. Nothing half-built is left where it could be used.
    Exit 4, like every environment that cannot do what was asked.
    """

    code = "environment-build-failed"
    exit_code = 4
    fields = ("task_class", "requirements", "digest", "step", "output")

    def __init__(
        self,
        task_class: str,
        requirements: Path | str | None,
        digest: str,
        step: str,
        output: str,
    ) -> None:
        self.task_class = task_class
        self.requirements = None if requirements is None else Path(requirements)
        self.digest = digest
        self.step = step
        self.output = output[-8192:]
        what = f" from {self.requirements}" if self.requirements is not None else ""
        last = self.output.strip().splitlines()[-1:] or ["(uv said nothing)"]
        super().__init__(
            f"cannot build the environment of task class {task_class!r}{what} "
            f"({step} failed): {last[0]}"
        )

    @property
    def hint(self) -> str:
        """What to look at."""
        if self.step == "store":
            return (
                "keep environments in a directory of yours that only you can write "
                "(set CODEGENIE_ENV_DIR to one, or unset it for the user cache)"
            )
        return (
            "read uv's output above; fix the requirements file, or build offline from "
            f"a wheel directory (`UV_FIND_LINKS=DIR UV_NO_INDEX=1 codegenie-bench env build "
            f"{self.task_class}`)"
        )


@final
class EnvironmentNotBuilt(EvalError):
    """``--no-build`` was given and a task class's environment is not built (or is damaged).

    ``task_class`` is the slug, ``digest`` the environment it needs,
    ``damage`` why the directory kept under that digest is not used (a file
    of it changed since it was built, …), ``None`` when there is none.
    Raised before any rubric runs. Exit 4.
    """

    code = "environment-not-built"
    exit_code = 4
    fields = ("task_class", "digest", "damage")

    def __init__(self, task_class: str, digest: str, damage: str | None = None) -> None:
        self.task_class = task_class
        self.digest = digest
        self.damage = damage
        state = "is not built" if damage is None else f"is damaged: {damage}"
        super().__init__(
            f"the environment of task class {task_class!r} "
            f"({digest.removeprefix('blake2b-256:')[:12]}) {state}"
        )

    @property
    def hint(self) -> str:
        """The command that builds it."""
        again = "" if self.damage is None else " (it removes the damaged one and builds it again)"
        return f"run `codegenie-bench env build {self.task_class}`{again}, or drop --no-build"


@final
class ExecutorUnavailable(EvalError):
    """The executor asked for cannot make runs: ``--executor ray`` and no cluster to join.

    ``executor`` is its name (``"ray"``), ``address`` the cluster's
    (``None``: a local instance was to be started), ``cause`` what Ray
    said, in one line. Raised before any run is submitted. Exit 4, like
    every environment that cannot do what was asked.
    """

    code = "executor-unavailable"
    exit_code = 4
    fields = ("executor", "address", "cause")

    def __init__(self, executor: str, address: str | None, cause: str) -> None:
        self.executor = executor
        self.address = address
        self.cause = cause
        where = "a local Ray instance" if address is None else f"the Ray cluster at {address}"
        super().__init__(f"the {executor} executor cannot use {where}: {cause}")

    @property
    def hint(self) -> str:
        """How to give it a cluster, or do without one."""
        if self.address is None:
            return (
                "start a cluster with `ray start --head` and pass its --ray-address, "
                "or use --executor local"
            )
        return (
            "check --ray-address (or RAY_ADDRESS) and that the cluster is up (`ray status`), "
            "or use --executor local"
        )


@dataclass(frozen=True, slots=True)
class CaseProblem:
    """One problem found in a task class's cases: where it is, and what is wrong.

    ``file`` is the ``case.toml`` the problem is in, or the directory (a case
    directory, or ``cases/`` itself) for a problem of the layout. ``line`` and
    ``column`` are 1-based, ``None`` when the problem has no place in a file
    (a missing ``input/``). ``key`` is the TOML key concerned, rendered as TOML
    writes it (``tags[1]``), or ``""``. ``kind`` is ``"layout"`` (a case
    directory without ``case.toml``, ``input/`` or ``expected/``, an entry
    that is not a case directory, or an invalid case id), ``"syntax"`` (the
    file cannot be read as TOML: bytes, size, syntax, bounds) or
    ``"schema"`` (valid TOML that the case schema refuses); :attr:`code` maps
    it to ``check``'s code. ``case`` is the case id (the directory name), or
    ``None`` for a problem of ``cases/`` itself.
    """

    file: Path
    line: int | None
    column: int | None
    key: str
    message: str
    kind: str = "schema"
    case: str | None = None

    @property
    def code(self) -> str:
        """``check``'s code for this problem: ``case-layout`` or ``case-invalid``."""
        return "case-layout" if self.kind == "layout" else "case-invalid"

    def render(self) -> str:
        """Return ``FILE:LINE:COL: KEY: MESSAGE`` (as much of the place as is known)."""
        where = str(self.file)
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        key = f"{self.key}: " if self.key else ""
        return f"{where}: {key}{self.message}"


@final
class BenchCasesInvalid(EvalError):
    """Some cases of a task class are malformed; nothing was returned.

    ``task_class`` is the slug; ``problems`` holds every problem of every case
    (layout, TOML syntax, schema), sorted by file and position, not just the
    first one. The message lists the first 50 of them.
    """

    code = "case-invalid"
    exit_code = 4
    fields = ("task_class", "problems")

    def __init__(self, task_class: str, problems: tuple[CaseProblem, ...]) -> None:
        self.task_class = task_class
        self.problems = tuple(problems)
        super().__init__(
            _listed(f"the cases of task class {task_class!r}", [p.render() for p in self.problems])
        )

    @property
    def hint(self) -> str:
        return (
            "fix the listed case files and directories; `codegenie-bench explain case-layout` "
            "and `codegenie-bench explain case-invalid` describe a case and its case.toml"
        )


@final
class CaseNotFound(EvalError):
    """A case id named on the command line (``grade --case``) that the task class does not have.

    ``task_class`` is the slug, ``case`` the id asked for, ``available_ids``
    the ids of the task class's cases, ``suggestions`` the closest of them.
    Exit 3, like an unknown task class: the name is well formed, there is
    just nothing by that name.
    """

    code = "case-not-found"
    exit_code = 3
    fields = ("task_class", "case", "available_ids", "suggestions")

    def __init__(
        self,
        task_class: str,
        case: str,
        available_ids: tuple[str, ...] = (),
        suggestions: tuple[str, ...] = (),
    ) -> None:
        self.task_class = task_class
        self.case = case
        self.available_ids = tuple(available_ids)
        self.suggestions = tuple(suggestions)
        text = f"task class {task_class!r} has no case {case!r}"
        if self.suggestions:
            text += f"; did you mean {_quote_list(self.suggestions)}?"
        elif self.available_ids:
            text += f"; it has {_quote_list(self.available_ids)}"
        else:
            text += "; it has no cases"
        super().__init__(text)

    @property
    def hint(self) -> str:
        return f"`codegenie-bench show {self.task_class}` lists its case ids"


@final
class CandidatesDirInvalid(EvalError):
    """``grade``'s ``CANDIDATES_DIR`` is not an existing directory: a command-line mistake.

    ``path`` is the path as given, ``reason`` what is wrong with it
    (``"does not exist"``, ``"is not a directory"``). Exit 2, a usage error:
    nothing was graded.
    """

    code = "candidates-invalid"
    exit_code = 2
    fields = ("path", "reason")

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"candidates directory {path} {reason}")

    @property
    def hint(self) -> str:
        return "pass the directory that holds one directory per case: CANDIDATES_DIR/<case-id>/"


@final
@dataclass(frozen=True)
class SampleProblem:
    """One problem found in ``grade``'s candidates: where it is, and what is wrong.

    ``file`` is the JSON Lines file or the entry of the candidates directory
    concerned; ``line`` the 1-based line of a JSON Lines file, ``None`` for a
    directory; ``case`` the case id, when known.
    """

    file: Path
    line: int | None
    message: str
    case: str | None = None

    def render(self) -> str:
        """Return ``FILE:LINE: MESSAGE`` (``FILE: MESSAGE`` without a line)."""
        where = f"{self.file}:{self.line}" if self.line is not None else str(self.file)
        return f"{where}: {self.message}"


@final
class SamplesInvalid(EvalError):
    """``grade``'s candidates cannot be read as samples; nothing was graded.

    ``path`` is the candidates directory or JSON Lines file as given;
    ``problems`` holds every problem found (a line that is not a sample, a
    case the task class does not have, a path leaving its sample, a sample
    given twice, an entry of a case's directory that is not a sample), in
    file and line order, not just the first one. The message lists the first
    50. Exit 2, like every mistake in what the command was given: no rubric ran.
    """

    code = "samples-invalid"
    exit_code = 2
    fields = ("path", "problems")

    def __init__(self, path: Path, problems: tuple[SampleProblem, ...]) -> None:
        self.path = path
        self.problems = tuple(problems)
        super().__init__(_listed(f"the samples of {path}", [p.render() for p in self.problems]))

    @property
    def hint(self) -> str:
        return (
            "fix the listed lines or directories: a sample is CANDIDATES/<case-id>/<sample-id>/, "
            'or a JSON line {"case": ID, "files": {PATH: TEXT}} with an optional "sample"'
        )


@final
class RubricMissing(EvalError):
    """``grade`` found no rubric to run: the task class's rubric file does not exist.

    ``task_class`` is the slug, ``path`` where the rubric was expected
    (``None`` when the task class names none). Found before any case runs:
    exit 4, like every bench that cannot do what was asked; nothing was graded.
    """

    code = "rubric-missing"
    exit_code = 4
    fields = ("task_class", "path")

    def __init__(self, task_class: str, path: Path | None) -> None:
        self.task_class = task_class
        self.path = path
        where = f" at {path}" if path is not None else ""
        super().__init__(f"task class {task_class!r} has no rubric{where}")

    @property
    def hint(self) -> str:
        """Where the rubric belongs."""
        return "create rubric.py beside registration.py, or fix the decorator's rubric="


@final
@dataclass(frozen=True, slots=True)
class ReportProblem:
    """One problem of a report file: the file, where in its JSON (``None``: all of it), what.

    ``path`` is a JSON path (``results[3].samples[0].score``; ``$`` the
    top-level value).
    """

    file: str
    path: str | None
    message: str

    def render(self) -> str:
        """Return ``FILE: PATH: MESSAGE`` (``FILE: MESSAGE`` for the file as a whole)."""
        return (
            f"{self.file}: {self.message}"
            if self.path is None
            else (f"{self.file}: {self.path}: {self.message}")
        )


@final
class ReportsInvalid(EvalError):
    """A report given on the command line cannot be read as what the command takes (exit 2).

    ``problems`` holds one sentence per problem, each naming its file: it does
    not exist, is not a regular file, is not UTF-8 or not JSON (a truncated
    file), holds a number that is not finite or nests too deeply, is JSON
    but not a ``--format json`` report of ``grade`` (a ``check`` report, an
    array, a result without a case id), or contradicts itself (a count or a
    pass@k that its results do not give). ``located`` holds the same
    problems as data, where the reader found them
    (:class:`ReportProblem`: file, JSON path, message). A mistake in what
    was typed, as a ``CANDIDATES_DIR`` that is not a directory is: exit 2,
    nothing was compared.
    """

    code = "report-invalid"
    exit_code = 2
    fields = ("problems", "located")

    def __init__(self, problems: tuple[str, ...], located: tuple[ReportProblem, ...] = ()) -> None:
        self.problems = tuple(problems)
        self.located = tuple(located)
        super().__init__("; ".join(self.problems))

    @classmethod
    def of(cls, located: tuple[ReportProblem, ...]) -> ReportsInvalid:
        """Return the error of ``located`` problems, each rendered as one of ``problems``."""
        return cls(tuple(problem.render() for problem in located), located)

    @property
    def hint(self) -> str:
        return (
            "pass the files `codegenie-bench grade SLUG CANDIDATES_DIR --format json "
            "--output-file FILE` writes (or `merge` makes of its shards)"
        )


@final
class CompareRefused(EvalError):
    """``compare`` refused two grade reports that do not grade the same thing (exit 1).

    ``base`` and ``new`` name the reports as given; ``problems`` holds every
    reason, each naming both values: the reports grade different task
    classes, or saw different benches (their ``bench_digest`` differs).
    """

    code = "compare-refused"
    exit_code = 1
    fields = ("base", "new", "problems")

    def __init__(self, base: str, new: str, problems: tuple[str, ...]) -> None:
        self.base = base
        self.new = new
        self.problems = tuple(problems)
        super().__init__(f"cannot compare {base} with {new}: {'; '.join(self.problems)}")

    @property
    def hint(self) -> str:
        return (
            "compare two grade runs of one task class on one bench: grade both with the "
            "same bench.toml and cases"
        )
