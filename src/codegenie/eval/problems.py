"""One problem, one description, whichever command finds it.

A missing registration file, a root that does not exist, a registration that
raises: ``check`` finds each of these for every slug at once, ``show`` and
``plan`` for the slugs they resolve, and all of them must say it the same
way — the same code (the vocabulary of :mod:`codegenie.eval.codes`), the
same file, line and column, the same message and hint. This module is the
one place each problem is worded and located:

- one function per problem of the vocabulary returns its :class:`Diagnostic`
  given where it is; ``check`` calls them directly;
- :func:`error_diagnostics` turns an error raised by the library (the
  loader, ``Runner.plan``, ``new``) into those same diagnostics, for the
  commands that meet problems one error at a time;
- :func:`manifest_diagnostics` words every problem of an invalid manifest,
  with the hints that need the file system (a root that names no directory
  says so, and suggests the directory that is there).

Locations follow one rule: a problem with an entry as a whole points at the
entry's table header (``[task-classes.<slug>]``), a problem with one of its
keys at that key, a failure inside a registration at the deepest frame under
the bench root. Paths are shown relative to the working directory when they
lie under it, absolute otherwise (:func:`display_path`), in every command.

Nothing here prints: it returns diagnostics for the command line to render.
"""

from __future__ import annotations

import os
import re
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from codegenie.eval import codes
from codegenie.eval._paths import fs_path
from codegenie.eval.codes import CODES, Code, diagnostic
from codegenie.eval.diagnostics import Diagnostic
from codegenie.eval.errors import (
    BenchCaseLoadError,
    BenchCasesInvalid,
    BenchManifestInvalid,
    BenchManifestNotFound,
    BenchRootNotFound,
    BenchRootOutsideManifest,
    CaseNotFound,
    CompareRefused,
    EvalError,
    InvalidTaskClassName,
    ManifestProblem,
    ReportsInvalid,
    RunPlanError,
    SamplesInvalid,
    ScaffoldArgumentInvalid,
    ScaffoldConflict,
    SettingsInvalid,
    TaskClassModuleMismatch,
    TaskClassNotFound,
    TaskClassRegistrationFailed,
    TaskClassRootConflict,
)
from codegenie.eval.naming import closest, normalize_slug, slug_problem, slug_to_identifier

if TYPE_CHECKING:
    from codegenie.eval._manifest.model import BenchManifest
    from codegenie.eval._toml.positions import TomlPositions

__all__ = (
    "Location",
    "case_problem",
    "display_path",
    "error_diagnostics",
    "import_failed",
    "manifest_diagnostics",
    "manifest_problem",
    "misplaced_package",
    "misspelt_slug",
    "module_convention",
    "module_mismatch",
    "module_missing",
    "not_registered",
    "root_hint",
    "root_missing",
    "root_outside",
    "suggest_slug",
    "with_shown_paths",
)

#: Where a problem is: the file as shown, its line and column (``None`` when unknown).
Location = tuple[str | None, int | None, int | None]

#: The code of each kind of manifest problem (``ManifestProblem.kind``); any other: a schema's.
_MANIFEST_CODES: Final[Mapping[str, Code]] = {
    "syntax": codes.MANIFEST_SYNTAX,
    "schema": codes.MANIFEST_SCHEMA,
    "duplicate-module": codes.DUPLICATE_MODULE,
}


def display_path(path: str | os.PathLike[str]) -> str:
    """Return ``path`` relative to the working directory when it lies inside it, else absolute.

    As ruff and mypy show paths. A path outside the working directory (or
    when the working directory is gone) is shown absolute, never with ``..``.
    """
    absolute = os.path.abspath(path)
    try:
        cwd = os.getcwd()
    except OSError:
        return absolute
    if absolute == cwd:
        return "."
    prefix = os.path.join(cwd, "")
    return absolute[len(prefix) :] if absolute.startswith(prefix) else absolute


def with_shown_paths(text: str, paths: Iterable[str | os.PathLike[str]]) -> str:
    """Return ``text`` with each absolute path of ``paths`` in it as :func:`display_path` shows it.

    For a message built by the library, which names files by their absolute
    paths (JSON output keeps those), when it is printed as text. A path is
    replaced only where it stands whole: not where it is the start of a
    longer name (``/r/bench`` in ``/r/bench2``).
    """
    for path in sorted({os.fspath(p) for p in paths}, key=len, reverse=True):
        if not os.path.isabs(path) or path not in text:
            continue
        shown = display_path(path)
        if shown != path:
            pattern = re.escape(path) + r"(?![\w-]|\.[\w-])"
            text = re.sub(pattern, shown.replace("\\", "\\\\"), text)
    return text


# -- each problem, worded once ----------------------------------------------------


def root_missing(
    slug: str | None, root: str, directory: Path, at: Location, *, hint: str | None = None
) -> Diagnostic:
    """``root-missing``: the entry's root is not a directory (at its ``root`` key)."""
    owner = f" of {slug!r}" if slug else ""
    message = f"root {root!r}{owner} is not a directory ({display_path(directory)})"
    return diagnostic(codes.ROOT_MISSING, message, *at, slug=slug, hint=hint)


def root_outside(
    slug: str, root: str, resolved: Path, manifest_dir: Path, at: Location
) -> Diagnostic:
    """``root-outside``: the root resolves outside the manifest's directory (at ``root``)."""
    message = (
        f"root {root!r} of {slug!r} resolves to {resolved}, "
        f"outside the manifest's directory {manifest_dir}"
    )
    return diagnostic(codes.ROOT_OUTSIDE, message, *at, slug=slug)


def misplaced_package(
    slug: str, package_parts: Sequence[str], root_dir: Path, declared: Container[str]
) -> Path | None:
    """Return the unlisted package directory the entry ``slug`` probably meant, or ``None``.

    For an entry whose registration file does not exist: one directory
    ``<root>/<package>/`` beside where it should be, holding a
    ``registration.py``, whose slug (``package`` with hyphens) is close to
    ``slug`` and declared nowhere (``declared``). ``[task-classes.dockerfile-pinn]``
    with ``module = "bench.dockerfile_pinn.registration"`` beside an unlisted
    ``bench/dockerfile_pin/``: the table is the typo, not the code.
    """
    try:
        with os.scandir(root_dir) as entries:
            names = sorted(e.name for e in entries if e.is_dir() and not e.name.startswith("."))
    except OSError:
        return None
    guesses = {
        name.replace("_", "-"): name
        for name in names
        if (name,) != tuple(package_parts)
        and slug_problem(name.replace("_", "-")) is None
        and name.replace("_", "-") not in declared
        and (root_dir / name / "registration.py").is_file()
    }
    near = [guess for guess in closest(slug, guesses, limit=2) if guess != slug]
    return root_dir / guesses[near[0]] if len(near) == 1 else None


def module_missing(
    slug: str, module: str, registration: Path, at: Location, *, meant: Path | None = None
) -> Diagnostic:
    """``module-missing``: the registration file of the entry's module does not exist.

    ``meant`` is what :func:`misplaced_package` found: then the entry, not
    the tree, is what is wrong, and the diagnostic says so (one problem, where
    the unlisted package would also be an ``orphan-task-class``).
    """
    message = f"module {module!r} of {slug!r}: {display_path(registration)} does not exist"
    if meant is None:
        return diagnostic(codes.MODULE_MISSING, message, *at, slug=slug)
    guess = meant.name.replace("_", "-")
    meant_module = ".".join((module.split(".", 1)[0], meant.name, "registration"))
    manifest = at[0] or "the manifest"
    message += (
        f"; {display_path(meant / 'registration.py')}, which no entry lists, is probably "
        f"this task class: the table [task-classes.{slug}] probably misspells {guess!r}"
    )
    hint = (
        f"rename [task-classes.{slug}] to [task-classes.{guess}] and set "
        f'module = "{meant_module}" in {manifest}'
    )
    return diagnostic(codes.MODULE_MISSING, message, *at, slug=slug, hint=hint)


def module_convention(slug: str, module: str, expected: str, at: Location) -> Diagnostic:
    """``module-convention``: the entry's package is not the slug's identifier."""
    message = f"module {module!r} of {slug!r} is not the slug's own ({expected!r})"
    return diagnostic(codes.MODULE_CONVENTION, message, *at, slug=slug)


def import_failed(
    slug: str,
    module: str,
    cause_type: str,
    cause_message: str,
    at: Location,
    *,
    traceback: str | None = None,
) -> Diagnostic:
    """``import-failed``: the registration raised (at its deepest frame under the root)."""
    detail = f"{cause_type}: {cause_message}" if cause_message else cause_type
    message = f"importing {module} for {slug!r} raised {detail}"
    return _with_traceback(diagnostic(codes.IMPORT_FAILED, message, *at, slug=slug), traceback)


def module_mismatch(
    slug: str, module: str, expected: Path, actual: Path | None, at: Location
) -> Diagnostic:
    """``import-failed``: another file than the manifest's answered for the module."""
    found = display_path(actual) if actual is not None else "a module with no file"
    message = f"importing {module} for {slug!r} found {found} instead of {display_path(expected)}"
    hint = (
        "another package named like the bench root shadows it (a bench.py beside the root, "
        "an installed bench package): rename or uninstall it"
    )
    return diagnostic(codes.IMPORT_FAILED, message, *at, slug=slug, hint=hint)


def misspelt_slug(
    slug: str, module: str, registered: Sequence[str], declared: Container[str]
) -> str | None:
    """Return the slug the table ``[task-classes.<slug>]`` probably meant, or ``None``.

    ``module`` (the entry's) imported but registered ``registered``, not
    ``slug``. When exactly one of those names is declared nowhere in the
    manifest (``declared``) and is close to ``slug`` or is the slug whose
    package ``module`` is, the code is right and the table's name is the typo:
    ``[task-classes.dockerfile-pinn]`` for a module that registers
    ``dockerfile-pin``.
    """
    package = module.split(".")[1:-1]
    candidates = [
        name
        for name in dict.fromkeys(registered)
        if name != slug and name not in declared and slug_problem(name) is None
    ]
    meant = [
        name
        for name in candidates
        if package == [slug_to_identifier(name)] or closest(slug, [name], limit=1)
    ]
    return meant[0] if len(meant) == 1 else None


def not_registered(
    slug: str,
    module: str,
    registered: Sequence[str],
    at: Location,
    *,
    meant: str | None = None,
) -> Diagnostic:
    """``not-registered``: the import succeeded but did not register the slug.

    ``meant`` is what :func:`misspelt_slug` found: then the manifest, not the
    code, is what is wrong, and the diagnostic says so (one problem, where
    the code's ``extra-registration`` and the package's ``module-convention``
    would follow from the same typo).
    """
    if meant is not None:
        manifest = at[0] or "the manifest"
        message = (
            f"{module} registers {meant!r}, but {manifest} declares it as {slug!r}: "
            f"the table [task-classes.{slug}] probably misspells the slug"
        )
        hint = f"rename [task-classes.{slug}] to [task-classes.{meant}] in {manifest}"
        return diagnostic(codes.NOT_REGISTERED, message, *at, slug=slug, hint=hint)
    others = ", ".join(repr(name) for name in registered) or "nothing"
    message = f"importing {module} did not register {slug!r} (it registered {others})"
    hint = f"decorate the task class with @register_task_class({slug!r})"
    return diagnostic(codes.NOT_REGISTERED, message, *at, slug=slug, hint=hint)


def case_problem(
    slug: str,
    *,
    code: Code,
    file: str | os.PathLike[str],
    line: int | None,
    column: int | None,
    key: str,
    message: str,
    case: str | None,
) -> Diagnostic:
    """``case-layout`` or ``case-invalid``: one problem of a task class's cases, at its place."""
    owner = f"case {case!r} of {slug!r}" if case else f"{slug!r} cases"
    keyed = f"{key}: " if key else ""
    return diagnostic(
        code,
        f"{owner}: {keyed}{message}",
        display_path(file),
        line,
        column if line is not None else None,
        slug=slug,
    )


def _with_traceback(found: Diagnostic, traceback: str | None) -> Diagnostic:
    """Return ``found`` carrying ``traceback``, its file names shown as every path is."""
    if traceback is None:
        return found

    def shown(match: re.Match[str]) -> str:
        return match[1] + display_path(match[2]) + match[3]

    return replace(found, traceback=_TRACEBACK_FILE.sub(shown, traceback))


# The file of a frame in a formatted traceback: ``  File "/abs/path.py", line 3, in f``.
_TRACEBACK_FILE: Final = re.compile(r'^( *File ")(/[^"\n]*)(", line \d+)', re.MULTILINE)


# -- hints that look at the tree ----------------------------------------------------


def root_hint(manifest_dir: Path, root: str, package_parts: Sequence[str] = ()) -> str | None:
    """Suggest the directory a root that does not exist probably meant, or ``None``.

    Looks at the directories beside where the root should be (relative to
    ``manifest_dir``): one that holds the entry's package (``package_parts``)
    is the best guess, else the closest name. ``root = "bnch"`` beside a
    ``bench/`` suggests ``bench``.
    """
    parent, _, name = fs_path(root).rpartition("/")
    base = manifest_dir / parent if parent else manifest_dir
    try:
        with os.scandir(base) as entries:
            names = sorted(
                entry.name
                for entry in entries
                if entry.is_dir() and not entry.name.startswith(".") and entry.name != "__pycache__"
            )
    except OSError:
        return None
    holding = [
        candidate
        for candidate in names
        if package_parts and base.joinpath(candidate, *package_parts, "registration.py").is_file()
    ]
    near = closest(name, names, limit=1)
    # A directory that holds this entry's registration wins, close in name or not.
    best = next(iter(sorted(holding, key=lambda c: c not in near)), None) or next(iter(near), None)
    if best is None:
        return None
    suggestion = f"{parent}/{best}" if parent else best
    hint = f'did you mean root = "{suggestion}"?'
    if best in holding:
        where = base.joinpath(best, *package_parts, "registration.py")
        hint += f" ({display_path(where)} is there)"
    return hint


# -- an invalid manifest ------------------------------------------------------------


def manifest_problem(problem: ManifestProblem, shown: str) -> Diagnostic:
    """Return the diagnostic of one problem of an invalid manifest shown as ``shown``."""
    message = f"{problem.key}: {problem.message}" if problem.key else problem.message
    code = _MANIFEST_CODES.get(problem.kind, codes.MANIFEST_SCHEMA)
    return diagnostic(code, message, shown, problem.line, problem.column, slug=problem.slug)


def manifest_diagnostics(
    error: BenchManifestInvalid,
    *,
    raw: Mapping[str, Any] | None = None,
    positions: TomlPositions | None = None,
    tree: bool = True,
) -> list[Diagnostic]:
    """Return one diagnostic per problem of ``error``, a root that is not there said as such.

    An entry whose ``module`` is not under its ``root`` breaks the schema;
    when that root does not even exist, the problem is the root:
    ``root-missing`` at its ``root`` key, with the directory that is there as
    the suggestion, instead of ``manifest-schema`` at ``module``. ``raw`` (the
    parsed TOML) and ``positions`` are read from ``error.path`` when not given.
    ``tree=False`` describes the manifest alone, never looking at a
    directory (``list`` reads nothing else): every problem as the schema words it.
    """
    shown = display_path(error.path)
    found = []
    for problem in error.problems:
        refined = None
        if tree and problem.kind == "schema" and problem.slug is not None:
            if raw is None:
                raw, positions = _reread(error.path)
            refined = _missing_root(problem, raw, positions, error.path, shown)
        found.append(refined or manifest_problem(problem, shown))
    return found


def _reread(path: Path) -> tuple[Mapping[str, Any], TomlPositions | None]:
    from codegenie.eval._manifest.read import read_manifest_bytes  # noqa: PLC0415 - only when a failure is described
    from codegenie.eval._toml.positions import TomlPositions  # noqa: PLC0415 - only when a failure is described
    from codegenie.eval._toml.read import TomlUnreadable, parse_toml  # noqa: PLC0415 - only when a failure is described

    try:
        text, raw = parse_toml(read_manifest_bytes(path))
        return raw, TomlPositions(text)
    except (EvalError, TomlUnreadable):  # changed meanwhile: no refinement
        return {}, None


def _missing_root(
    problem: ManifestProblem,
    raw: Mapping[str, Any],
    positions: TomlPositions | None,
    manifest: Path,
    shown: str,
) -> Diagnostic | None:
    """Return the ``root-missing`` that a module-not-under-root problem really is, or ``None``."""
    table = raw.get("task-classes")
    entry = table.get(problem.slug) if isinstance(table, Mapping) else None
    if not isinstance(entry, Mapping) or not problem.key.endswith(".module"):
        return None
    module, root = entry.get("module"), entry.get("root")
    if not isinstance(module, str) or not isinstance(root, str) or "." not in module:
        return None
    first, _, rest = module.partition(".")
    if first == root.rpartition("/")[2] or slug_problem(problem.slug or "") is not None:
        return None
    directory = manifest.parent / root
    if directory.is_dir():
        return None
    key = ("task-classes", problem.slug or "", "root")
    line, column = positions.find_value(key) if positions is not None else (problem.line, 1)
    parts = tuple(rest.split(".")[:-1])
    hint = root_hint(manifest.parent, root, parts)
    return root_missing(problem.slug, root, directory, (shown, line, column), hint=hint)


# -- errors raised one at a time (show, plan, new) --------------------------------------


def error_diagnostics(
    error: EvalError,
    manifest: BenchManifest | None = None,
    slug: str | None = None,
    *,
    tree: bool = True,
) -> list[Diagnostic]:
    """Return the diagnostics that describe ``error``, as ``check`` would word them.

    ``manifest`` is the manifest the command used (``None`` when it has none),
    ``slug`` the task class the error concerns when the error does not say.
    A registration that raised is located at the deepest frame of its
    failure under the bench root, and carries its traceback (the loader's
    frames left out) for ``-v``. ``tree=False``: an invalid manifest is
    described from the manifest alone (:func:`manifest_diagnostics`).
    """
    if isinstance(error, BenchManifestInvalid):
        return manifest_diagnostics(error, tree=tree)
    if isinstance(error, SettingsInvalid):
        shown = display_path(error.path)
        return [
            Diagnostic(
                error.code,
                "error",
                f"{problem.key}: {problem.message}" if problem.key else problem.message,
                shown,
                problem.line,
                problem.column,
                None,
                error.hint,
            )
            for problem in error.problems
        ]
    if isinstance(error, SamplesInvalid):  # one diagnostic per problem, at its file and line
        return [
            Diagnostic(
                error.code,
                "error",
                problem.message,
                display_path(problem.file),
                problem.line,
                None,
                slug,
                error.hint,
            )
            for problem in error.problems
        ]
    if isinstance(error, RunPlanError):
        return [
            found
            for failed, failure in error.errors.items()
            for found in error_diagnostics(failure, manifest, failed)
        ]
    if isinstance(error, BenchCasesInvalid):
        return [
            case_problem(
                error.task_class,
                code=CODES[problem.code],
                file=problem.file,
                line=problem.line,
                column=problem.column,
                key=problem.key,
                message=problem.message,
                case=problem.case,
            )
            for problem in error.problems
        ]
    if isinstance(error, ReportsInvalid | CompareRefused):  # each sentence names its files
        return [
            Diagnostic(error.code, "error", problem, None, None, None, None, error.hint)
            for problem in error.problems
        ]
    slug = getattr(error, "name", None) or slug
    return [_one(error, _Place(manifest, slug))]


class _Place:
    """Where things are for one slug of one manifest (when there is a manifest)."""

    def __init__(self, manifest: BenchManifest | None, slug: str | None) -> None:
        self.manifest = manifest
        self.slug = slug

    @property
    def declared(self) -> bool:
        return self.manifest is not None and self.slug is not None and self.slug in self.manifest

    def at(self, *key: str) -> Location:
        """Return where the slug's entry (its ``key``) is, else where the task classes are."""
        if self.manifest is None:
            return (None, None, None)
        path: tuple[str, ...] = ("task-classes",)
        if self.declared:
            path += (self.slug or "", *key)
        line, column = self.manifest.position(*path)
        return (display_path(self.manifest.path), line, column)

    def value_at(self, key: str) -> Location:
        """Return where the value of the slug's ``key`` starts: a problem with that value."""
        if self.manifest is None or not self.declared:
            return self.at(key)
        line, column = self.manifest.value_position("task-classes", self.slug or "", key)
        return (display_path(self.manifest.path), line, column)


def _one(error: EvalError, place: _Place) -> Diagnostic:
    manifest, slug = place.manifest, place.slug
    # entry() and `in`, not task_classes: a manifest from the cache answers them from
    # one block, where task_classes builds every entry (0.6 s at 100,000 slugs).
    entry = None
    if manifest is not None and slug is not None and slug in manifest:
        entry = manifest.entry(slug)
    if entry is not None and manifest is not None and slug is not None:
        if isinstance(error, BenchRootNotFound):
            hint = root_hint(manifest.directory, entry.root, entry.package_parts)
            directory = manifest.root_dir(slug)
            return root_missing(slug, entry.root, directory, place.value_at("root"), hint=hint)
        if isinstance(error, BenchRootOutsideManifest):
            return root_outside(
                slug, entry.root, error.bench_root, error.manifest_dir, place.value_at("root")
            )
        if isinstance(error, BenchCaseLoadError) and error.field == "registration.py":
            root_dir = manifest.root_dir(slug)
            package = misplaced_package(slug, entry.package_parts, root_dir, manifest)
            return module_missing(
                slug,
                entry.module,
                error.case_dir / error.field,
                place.value_at("module"),
                meant=package,
            )
        if isinstance(error, TaskClassRegistrationFailed):
            return _registration_failed(error, manifest, slug, entry.module, place)
        if isinstance(error, TaskClassModuleMismatch):
            return module_mismatch(
                slug, error.module, error.expected_file, error.actual_file, place.at()
            )
        if isinstance(error, TaskClassNotFound) and error.looked_up_in == entry.module:
            meant = misspelt_slug(slug, entry.module, error.available_names, manifest)
            return not_registered(
                slug, entry.module, error.available_names, place.at(), meant=meant
            )
        if isinstance(error, TaskClassRootConflict):
            return _as_is(error, place.value_at("root"), slug)
    if isinstance(error, TaskClassNotFound):
        return _not_declared(error, place)
    if isinstance(error, InvalidTaskClassName):
        return _invalid_name(error, manifest)
    if isinstance(error, ScaffoldConflict):
        return _scaffold_conflict(error, manifest)
    if isinstance(error, BenchManifestNotFound):
        return _as_is(error, (None, None, None), None)
    if isinstance(error, CaseNotFound):  # a mistake of the command line, not of a file
        return _as_is(error, (None, None, None), error.task_class)
    if isinstance(error, ScaffoldArgumentInvalid):
        return _invalid_argument(error)
    path = getattr(error, "path", None)
    if isinstance(path, Path):
        return _as_is(error, (display_path(path), None, None), slug)
    return _as_is(error, place.at() if place.declared else (None, None, None), slug)


def _as_is(error: EvalError, at: Location, slug: str | None) -> Diagnostic:
    """Return the diagnostic of an error outside check's vocabulary: its own words.

    The paths among its attributes are shown in its message and hint as
    every path of a diagnostic is (relative to the working directory when
    they lie under it).
    """
    file, line, column = at
    paths = [value for value in error.attributes().values() if isinstance(value, Path)]
    message = with_shown_paths(str(error), paths)
    hint = with_shown_paths(error.hint, paths)
    return Diagnostic(error.code, "error", message, file, line, column, slug, hint)


def _registration_failed(
    error: TaskClassRegistrationFailed,
    manifest: BenchManifest,
    slug: str,
    module: str,
    place: _Place,
) -> Diagnostic:
    from codegenie.eval._tracebacks import describe_failure  # noqa: PLC0415 - only when a failure is described

    at = place.at()
    traceback = None
    cause = error.__cause__
    if cause is not None:
        failure = describe_failure(cause, manifest.root_dir(slug))
        traceback = failure.traceback
        if failure.file is not None:
            at = (display_path(failure.file), failure.line, 1 if failure.line else None)
    elif error.source is not None and error.line is not None:  # e.g. unpickled: no cause
        at = (display_path(error.source), error.line, 1)
    return import_failed(
        slug, module, error.cause_type, error.cause_message, at, traceback=traceback
    )


def _not_declared(error: TaskClassNotFound, place: _Place) -> Diagnostic:
    where = place.manifest.path if place.manifest is not None else Path(error.looked_up_in)
    shown = display_path(where)
    misspelt = _table_of_package(error, place.manifest)
    if misspelt is not None:
        # The slug the code registers is right; the table that names its package is the typo.
        module = place.manifest.entry(misspelt).module if place.manifest is not None else ""
        message = (
            f"task class {error.name!r} is not declared in {shown}, but [task-classes.{misspelt}] "
            f"names its package ({module}): the table probably misspells the slug"
        )
        hint = f"rename [task-classes.{misspelt}] to [task-classes.{error.name}] in {shown}"
        file, line, column = _Place(place.manifest, misspelt).at()
        return Diagnostic(error.code, "error", message, file, line, column, error.name, hint)
    message = f"task class {error.name!r} is not declared in {shown}"
    message += _suggesting(error.suggestions, error.available_names)
    file, line, column = place.at()
    return Diagnostic(error.code, "error", message, file, line, column, error.name, error.hint)


def _table_of_package(error: TaskClassNotFound, manifest: BenchManifest | None) -> str | None:
    """Return the close declared slug whose module is the package of the slug asked for, if any.

    ``show dockerfile-pin`` when ``[task-classes.dockerfile-pinn]`` names
    ``bench.dockerfile_pin.registration``: the table, not the request, is the typo.
    """
    if manifest is None or slug_problem(error.name) is not None:
        return None
    package = (slug_to_identifier(error.name),)
    found = [
        slug
        for slug in error.suggestions
        if slug in manifest and manifest.entry(slug).package_parts == package
    ]
    return found[0] if len(found) == 1 else None


def _suggesting(suggestions: Iterable[str], available: Sequence[str] = ()) -> str:
    shown = ", ".join(repr(name) for name in list(suggestions)[:5])
    if shown:
        return f"; did you mean {shown}?"
    if available:
        more = f", … ({len(available) - 5} more)" if len(available) > 5 else ""
        return f"; it has {', '.join(repr(n) for n in available[:5])}{more}"
    return "; it has no task classes"


def _invalid_name(error: InvalidTaskClassName, manifest: BenchManifest | None) -> Diagnostic:
    """Describe a slug that breaks the rules: the declared slugs close to it, else its slug form."""
    message = str(error)
    suggestions = closest(error.name, manifest.slugs()) if manifest is not None else []
    if suggestions:
        message += _suggesting(suggestions)
    elif (meant := suggest_slug(error.name)) is not None:
        message += f"; did you mean {meant!r}?"
    return Diagnostic(error.code, "error", message, None, None, None, None, error.hint)


def _invalid_argument(error: ScaffoldArgumentInvalid) -> Diagnostic:
    """``new``'s refused ``--root`` (with what was probably meant) or ``--description``."""
    from codegenie.eval._manifest.model import suggest_root  # noqa: PLC0415 - only when a failure is described

    found = _as_is(error, (None, None, None), None)
    meant = suggest_root(error.value) if error.argument == "--root" else None
    shown = f"--root {meant}" if meant else None
    return replace(found, message=f"{found.message}; did you mean {shown}?") if shown else found


def suggest_slug(name: str) -> str | None:
    """Return the slug a person most likely meant by ``name``, when it differs and is valid."""
    normal = normalize_slug(name)
    return normal if normal != name and slug_problem(normal) is None else None


def _scaffold_conflict(error: ScaffoldConflict, manifest: BenchManifest | None) -> Diagnostic:
    at: Location = (display_path(error.path), None, None)
    if manifest is not None and error.entry is not None and error.entry in manifest:
        place = _Place(manifest, error.entry)
        at = place.value_at("module") if error.what == "module" else place.at()
    return _as_is(error, at, error.name)
