"""Resolve a task-class slug to its registered ``TaskClass``, manifest first.

``bench/`` is a PEP 420 namespace package: the loader puts the parent of the
bench root first on ``sys.path`` and imports the module that ``bench.toml``
names for the slug (``bench.vuln_remediation.registration``), whose
``@register_task_class`` decorator registers the task class as a side effect.
Everything that can be decided from the request and the manifest (slug rules,
unknown slugs with suggestions, root conflicts) is decided before ``sys.path``
is touched or anything is imported. The loader never imports a task class's
rubric (ADR-0001).
"""

from __future__ import annotations

import os
import sys
import types
from dataclasses import dataclass
from os import PathLike
from pathlib import Path, PurePath
from typing import Final, NoReturn, final

from codegenie.eval import registry as _registry_module
from codegenie.eval._imports import (
    ImportScope,
    failure_line,
    import_fresh,
    is_prefix_of,
    same_file,
    shadow_file,
)
from codegenie.eval._logging import LazyLogger
from codegenie.eval._paths import find_manifest_path
from codegenie.eval.cases import Case, read_cases
from codegenie.eval.errors import (
    BenchCaseLoadError,
    BenchManifestInvalid,
    BenchManifestNotFound,
    BenchRootNotFound,
    InvalidTaskClassName,
    TaskClassModuleMismatch,
    TaskClassNotFound,
    TaskClassRegistrationFailed,
    TaskClassRootConflict,
)
from codegenie.eval.manifest import BenchManifest, load_manifest_cached
from codegenie.eval.models import TaskClass
from codegenie.eval.naming import check_slug
from codegenie.eval.registry import RegistrationSession, TaskClassRegistry, registering_into

__all__ = ("load_task_class", "load_cases")  # noqa: RUF022 - the order design section 6 pins

_log = LazyLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Loaded:
    """A successful load: valid while ``module`` is still what sys.modules holds."""

    root: str
    module_name: str
    module: types.ModuleType
    task_class: TaskClass


# Slug → its successful load in this process. An entry whose module has left
# sys.modules (removed by a test, or by hand) no longer counts.
_loaded: Final[dict[str, _Loaded]] = {}


def load_task_class(
    name: str,
    bench_root: Path | str | PathLike[str] = Path("bench"),
    *,
    registry: TaskClassRegistry | None = None,
    manifest: BenchManifest | None = None,
) -> TaskClass:
    """Return the task class registered as ``name``, importing its registration once.

    Steps, each finished before any side effect of the next:

    1. ``name`` must be a ``str`` (else ``TypeError``) that obeys the slug rules
       (else ``InvalidTaskClassName``). Nothing is touched yet.
    2. ``bench_root`` is resolved (symlinks, relative paths); it must be a
       directory (else ``BenchRootNotFound``).
    3. The manifest is ``manifest``, or the nearest ``bench.toml`` in the
       parent of the root or above (``BenchManifestNotFound``,
       ``BenchManifestInvalid``); it is re-read only when the file changes.
    4. The manifest must declare ``name`` (else ``TaskClassNotFound`` with
       ``suggestions``), with this root (else ``TaskClassRootConflict``), and
       no earlier load in this process may have used another root (else
       ``TaskClassRootConflict``).
    5. A slug already loaded from this root returns the same object, without
       running the module again (and is added to ``registry`` if missing).
    6. The registration file must exist (else ``BenchCaseLoadError``); the
       parent of the root is put first on ``sys.path`` (once) and the module is
       imported. If its body raises, ``TaskClassRegistrationFailed`` is raised
       from the cause; ``KeyboardInterrupt`` passes through unchanged.
    7. The imported module must be the expected file (else
       ``TaskClassModuleMismatch``: another ``bench`` package answered).
    8. The import must have registered ``name`` (else ``TaskClassNotFound``
       listing what it did register).

    A repeat of a request that succeeded (same name, same ``bench_root`` value
    and, for a relative one, the same working directory, same ``manifest=``)
    returns the same object from memory while its module is still imported,
    without looking at the filesystem again.

    Registrations without an explicit ``registry=`` go to ``registry`` (default
    ``default_registry``). A failed load leaves no trace: what it registered,
    the modules it added to ``sys.modules`` and its ``sys.path`` change are
    undone, so fixing the file and calling again in the same process works.

    Concurrency: caller-serialized. Calls in one process must not overlap (the
    import system and ``sys.path`` are process-wide); ``Runner.plan`` resolves
    its slugs one after another for that reason. The loader takes no lock.
    """
    target = registry if registry is not None else _registry_module.default_registry
    # A repeat of an earlier successful request returns before touching the
    # filesystem (see _Repeat); anything else takes the eight steps.
    key = _request_key(name, bench_root)
    repeat = _repeats.get(key) if key is not None else None
    if repeat is not None and _still_valid(repeat, target, manifest):
        _log.debug(
            "loader.task_class_cache_hit",
            name=name,
            bench_root=repeat.root,
            module=repeat.module_name,
        )
        return repeat.task_class

    # 1. The request itself.
    try:
        check_slug(name)
    except InvalidTaskClassName as exc:
        _log.error("loader.invalid_task_class_name", name=name, reason=exc.reason)
        raise

    # 2. The bench root. Paths stay strings on this path: it runs once per
    # slug, and pathlib objects cost more than the checks themselves.
    root = os.path.realpath(os.fspath(bench_root))
    if not os.path.isdir(root):
        _log.error("loader.bench_root_not_found", name=name, bench_root=root)
        raise BenchRootNotFound(Path(root))

    # 3. The manifest.
    given_manifest = manifest
    if manifest is None:
        manifest = _nearest_manifest(name, root)

    # 4. The request against the manifest and this process's earlier loads.
    try:
        entry = manifest.entry(name)
    except TaskClassNotFound as exc:
        _log.error(
            "loader.task_class_not_in_manifest",
            name=name,
            manifest=str(manifest.path),
            suggestions=list(exc.suggestions),
        )
        raise
    declared_root = os.path.join(os.path.dirname(str(manifest.path)), entry.root)
    # ``root`` has no symbolic link left in it, so an equal string needs no resolving.
    if declared_root != root and os.path.realpath(declared_root) != root:
        declared = Path(os.path.realpath(declared_root))
        _log.error(
            "loader.task_class_root_conflict",
            name=name,
            first_root=str(declared),
            second_root=root,
        )
        raise TaskClassRootConflict(name, declared, Path(root), declared_in=manifest.path)
    module_name = entry.module
    earlier = _earlier_load(name, module_name)
    if earlier is not None and earlier.root != root:
        _log.error(
            "loader.task_class_root_conflict",
            name=name,
            first_root=earlier.root,
            second_root=root,
        )
        raise TaskClassRootConflict(name, Path(earlier.root), Path(root))

    # 5. Already loaded from this root.
    if earlier is not None:
        target.register(earlier.task_class)
        _remember(key, earlier, given_manifest)
        _log.debug("loader.task_class_cache_hit", name=name, bench_root=root, module=module_name)
        return earlier.task_class

    # 6. Import the registration.
    expected_file = os.path.join(root, *entry.package_parts, "registration.py")
    if not os.path.isfile(expected_file):
        _log.error(
            "loader.registration_file_missing",
            name=name,
            bench_root=root,
            module=module_name,
            file=expected_file,
        )
        raise BenchCaseLoadError(
            Path(os.path.dirname(expected_file)), "registration.py", "file not found"
        )
    record = _ImportAttempt(name, module_name, root, expected_file).run(target)
    _remember(key, record, given_manifest)
    _log.info("loader.task_class_loaded", name=name, bench_root=root, module=module_name)
    return record.task_class


def _nearest_manifest(name: str, root: str) -> BenchManifest:
    """Step 3: the nearest bench.toml in the root's parent or above, re-read when it changes."""
    try:
        first_place, found = find_manifest_path(os.path.dirname(root))
        if found is None:
            raise BenchManifestNotFound(Path(first_place))
        return load_manifest_cached(found)
    except (BenchManifestNotFound, BenchManifestInvalid) as exc:
        _log.error("loader.manifest_unusable", name=name, error=exc.code, path=str(exc.path))
        raise


def _earlier_load(name: str, module_name: str) -> _Loaded | None:
    record = _loaded.get(name)
    if record is None:
        return None
    if record.module_name != module_name or sys.modules.get(module_name) is not record.module:
        del _loaded[name]
        return None
    return record


# -- repeats -----------------------------------------------------------------
#
# A request (name, bench_root as given, and the working directory when that is
# relative) that succeeded before is answered from memory, in about a
# microsecond, as long as the module it imported is still the one in
# sys.modules, the caller's registry holds the same task class, and the same
# ``manifest=`` argument is passed. It does not look at the filesystem again:
# a manifest edited or a symbolic link moved after the first load does not
# change what an already-loaded task class resolves to in this process.


@dataclass(frozen=True, slots=True)
class _Repeat:
    record: _Loaded
    manifest: BenchManifest | None

    @property
    def root(self) -> str:
        return self.record.root

    @property
    def module_name(self) -> str:
        return self.record.module_name

    @property
    def task_class(self) -> TaskClass:
        return self.record.task_class


_repeats: Final[dict[tuple[object, ...], _Repeat]] = {}


def _request_key(name: object, bench_root: object) -> tuple[object, ...] | None:
    if type(name) is not str or not isinstance(bench_root, str | PurePath):
        return None
    if os.path.isabs(bench_root):
        return (name, os.fspath(bench_root))
    return (name, os.fspath(bench_root), os.getcwd())


def _still_valid(repeat: _Repeat, target: TaskClassRegistry, manifest: object) -> bool:
    record = repeat.record
    return (
        repeat.manifest is manifest
        and sys.modules.get(record.module_name) is record.module
        and target.holds(record.task_class)
    )


def _remember(
    key: tuple[object, ...] | None, record: _Loaded, manifest: BenchManifest | None
) -> None:
    if key is not None:
        _repeats[key] = _Repeat(record, manifest)


@final
class _ImportAttempt:
    """Steps 6 to 8 for one slug: import, verify, and undo everything on failure.

    Undoing covers what the import registered, the ``sys.modules`` entries it
    added and the ``sys.path`` change (see ``ImportScope``).
    """

    def __init__(self, name: str, module_name: str, root: str, expected_file: str) -> None:
        self.name = name
        self.module_name = module_name
        self.root = root
        self.expected_file = expected_file
        self._scope = ImportScope(root)

    def run(self, target: TaskClassRegistry) -> _Loaded:
        """Import the registration into ``target``; return the record of the load."""
        self._scope.open(os.path.dirname(self.root))
        with registering_into(target) as session:
            try:
                module = import_fresh(self.module_name)
            except ModuleNotFoundError as exc:
                if not is_prefix_of(exc.name, self.module_name):
                    self._failed(exc, session)
                # The file exists, yet the import system did not find it:
                # another package of the root's name answered instead.
                shadow = shadow_file(self.module_name)
                self._undo(session)
                self._mismatch(shadow)
            except BaseException as exc:  # classified in _failed
                self._failed(exc, session)

        # 7. The module that answered must be the manifest's file.
        if not same_file(module, self.expected_file):
            self._undo(session)
            file = getattr(module, "__file__", None)
            self._mismatch(Path(file) if file else None)

        # 8. It must have registered the slug.
        task_class = next((tc for _, tc in session.added if tc.name == self.name), None)
        if task_class is None:
            task_class = _registered_earlier(self.name, self.module_name, target)
        if task_class is None:
            registered = tuple(sorted(session.names()))
            self._undo(session)
            _log.error(
                "loader.task_class_not_registered_after_import",
                name=self.name,
                module=self.module_name,
                registered=list(registered),
            )
            raise TaskClassNotFound(
                self.name, looked_up_in=self.module_name, available_names=registered
            )
        self._scope.keep()
        target.register(task_class)
        record = _Loaded(self.root, self.module_name, module, task_class)
        _loaded[self.name] = record
        return record

    def _undo(self, session: RegistrationSession) -> None:
        session.rollback()
        self._scope.undo()

    def _mismatch(self, actual: Path | None) -> NoReturn:
        _log.error(
            "loader.module_mismatch",
            name=self.name,
            module=self.module_name,
            expected_file=self.expected_file,
            actual_file=str(actual),
        )
        raise TaskClassModuleMismatch(self.name, self.module_name, Path(self.expected_file), actual)

    def _failed(self, exc: BaseException, session: RegistrationSession) -> NoReturn:
        self._undo(session)
        if not isinstance(exc, Exception | SystemExit):
            raise exc  # KeyboardInterrupt and friends: undone, then passed on unchanged
        message = str(exc)
        if isinstance(exc, SystemExit):
            message = f"the registration called sys.exit({exc.code!r})"
        _log.error(
            "loader.registration_import_failed",
            name=self.name,
            bench_root=self.root,
            module=self.module_name,
            cause_type=type(exc).__name__,
            cause_message=message[:200],
        )
        raise TaskClassRegistrationFailed(
            self.name,
            type(exc).__name__,
            message,
            source=Path(self.expected_file),
            line=failure_line(exc, Path(self.expected_file)),
        ) from exc


def _registered_earlier(name: str, module_name: str, target: TaskClassRegistry) -> TaskClass | None:
    """Find the task class of a module that was imported before this load."""
    for registry in (target, _registry_module.default_registry):
        if name in registry:
            task_class = registry.get(name)
            if task_class.module == module_name:
                return task_class
    return None


def load_cases(
    name: str,
    bench_root: Path | str | PathLike[str] = Path("bench"),
    *,
    registry: TaskClassRegistry | None = None,
    manifest: BenchManifest | None = None,
) -> tuple[Case, ...]:
    """Return every case of the task class ``name``, sorted by id (design section 11).

    Resolves the task class exactly as :func:`load_task_class` does (same
    arguments, same errors), then reads its ``cases`` directory with
    :func:`codegenie.eval.cases.read_cases`: each ``case.toml`` validated by
    the common keys and the task class's ``case_model``. Raises
    ``BenchCasesInvalid`` listing every problem of every case, with file,
    line and column. A task class without a ``cases`` directory has no cases.
    Never imports or runs the rubric. Caller-serialized, like
    :func:`load_task_class`.
    """
    return read_cases(load_task_class(name, bench_root, registry=registry, manifest=manifest))
