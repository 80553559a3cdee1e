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

import sys
import types
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Final, NoReturn, final

import structlog

from codegenie.eval import registry as _registry_module
from codegenie.eval._imports import (
    ImportScope,
    failure_line,
    import_fresh,
    is_prefix_of,
    same_file,
    shadow_file,
)
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
from codegenie.eval.manifest import BenchManifest, find_manifest, load_manifest_cached
from codegenie.eval.models import TaskClass
from codegenie.eval.naming import check_slug
from codegenie.eval.registry import RegistrationSession, TaskClassRegistry, registering_into

__all__ = ("load_task_class",)

_log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class _Loaded:
    """A successful load: valid while ``module`` is still what sys.modules holds."""

    root: Path
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

    Registrations without an explicit ``registry=`` go to ``registry`` (default
    ``default_registry``). A failed load leaves no trace: what it registered,
    the modules it added to ``sys.modules`` and its ``sys.path`` change are
    undone, so fixing the file and calling again in the same process works.

    Concurrency: caller-serialized. Calls in one process must not overlap (the
    import system and ``sys.path`` are process-wide); ``Runner.plan`` resolves
    its slugs one after another for that reason. The loader takes no lock.
    """
    # 1. The request itself.
    try:
        check_slug(name)
    except InvalidTaskClassName as exc:
        _log.error("loader.invalid_task_class_name", name=name, reason=exc.reason)
        raise
    target = registry if registry is not None else _registry_module.default_registry

    # 2. The bench root.
    root = Path(bench_root).resolve()
    if not root.is_dir():
        _log.error("loader.bench_root_not_found", name=name, bench_root=str(root))
        raise BenchRootNotFound(root)

    # 3. The manifest.
    if manifest is None:
        try:
            manifest = load_manifest_cached(find_manifest(root.parent))
        except (BenchManifestNotFound, BenchManifestInvalid) as exc:
            _log.error("loader.manifest_unusable", name=name, error=exc.code, path=str(exc.path))
            raise

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
    declared_root = (manifest.directory / entry.root).resolve()
    if declared_root != root:
        _log.error(
            "loader.task_class_root_conflict",
            name=name,
            first_root=str(declared_root),
            second_root=str(root),
        )
        raise TaskClassRootConflict(name, declared_root, root, declared_in=manifest.path)
    module_name = entry.module
    earlier = _earlier_load(name, module_name)
    if earlier is not None and earlier.root != root:
        _log.error(
            "loader.task_class_root_conflict",
            name=name,
            first_root=str(earlier.root),
            second_root=str(root),
        )
        raise TaskClassRootConflict(name, earlier.root, root)

    # 5. Already loaded from this root.
    if earlier is not None:
        target.register(earlier.task_class)
        _log.debug(
            "loader.task_class_cache_hit", name=name, bench_root=str(root), module=module_name
        )
        return earlier.task_class

    # 6. Import the registration.
    expected_file = entry.registration_file(root)
    if not expected_file.is_file():
        case_dir = entry.case_dir(root)
        _log.error(
            "loader.registration_file_missing",
            name=name,
            bench_root=str(root),
            module=module_name,
            file=str(expected_file),
        )
        raise BenchCaseLoadError(case_dir, "registration.py", "file not found")
    task_class = _ImportAttempt(name, module_name, root, expected_file).run(target)
    _log.info("loader.task_class_loaded", name=name, bench_root=str(root), module=module_name)
    return task_class


def _earlier_load(name: str, module_name: str) -> _Loaded | None:
    record = _loaded.get(name)
    if record is None:
        return None
    if record.module_name != module_name or sys.modules.get(module_name) is not record.module:
        del _loaded[name]
        return None
    return record


@final
class _ImportAttempt:
    """Steps 6 to 8 for one slug: import, verify, and undo everything on failure.

    Undoing covers what the import registered, the ``sys.modules`` entries it
    added and the ``sys.path`` change (see ``ImportScope``).
    """

    def __init__(self, name: str, module_name: str, root: Path, expected_file: Path) -> None:
        self.name = name
        self.module_name = module_name
        self.root = root
        self.expected_file = expected_file
        self._scope = ImportScope()

    def run(self, target: TaskClassRegistry) -> TaskClass:
        """Import the registration into ``target`` and return its task class."""
        self._scope.open(self.root.parent)
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
        _loaded[self.name] = _Loaded(self.root, self.module_name, module, task_class)
        return task_class

    def _undo(self, session: RegistrationSession) -> None:
        session.rollback()
        self._scope.undo()

    def _mismatch(self, actual: Path | None) -> NoReturn:
        _log.error(
            "loader.module_mismatch",
            name=self.name,
            module=self.module_name,
            expected_file=str(self.expected_file),
            actual_file=str(actual),
        )
        raise TaskClassModuleMismatch(self.name, self.module_name, self.expected_file, actual)

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
            bench_root=str(self.root),
            module=self.module_name,
            cause_type=type(exc).__name__,
            cause_message=message[:200],
        )
        raise TaskClassRegistrationFailed(
            self.name,
            type(exc).__name__,
            message,
            source=self.expected_file,
            line=failure_line(exc, self.expected_file),
        ) from exc


def _registered_earlier(name: str, module_name: str, target: TaskClassRegistry) -> TaskClass | None:
    """Find the task class of a module that was imported before this load."""
    for registry in (target, _registry_module.default_registry):
        if name in registry:
            task_class = registry.get(name)
            if task_class.module == module_name:
                return task_class
    return None
