"""Resolve a task-class slug to its registered ``TaskClass``, manifest first.

``bench/`` is a PEP 420 namespace package: the loader puts the parent of the
bench root first on ``sys.path`` and imports the module that ``bench.toml``
names for the slug (``bench.vuln_remediation.registration``), whose
``@register_task_class`` decorator registers the task class as a side effect.
Everything that can be decided from the request and the manifest (slug rules,
unknown slugs with suggestions, root conflicts, a root outside the manifest's
directory) is decided before ``sys.path`` is touched or anything is imported,
and what the import system would load is checked, without executing it,
before the import. The loader never imports a task class's rubric (ADR-0001).

Everything a load changes — the registration session, ``sys.path``,
``sys.modules``, the registries, the loader's own records — is written under
one undo, so a load either completes or leaves no trace, even when a
``KeyboardInterrupt`` arrives in the middle of it.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from os import PathLike
from pathlib import Path, PurePath
from typing import Any, Final, NoReturn, Protocol, final

from codegenie.eval import registry as _registry_module
from codegenie.eval._cache.memo import load_manifest_cached
from codegenie.eval._imports import (
    ImportScope,
    describe_exception,
    failure_line,
    find_shadow,
    forget_path_entry,
    import_fresh,
    is_not_found,
    module_file,
    same_file,
    shadow_file,
)
from codegenie.eval._logging import LazyLogger
from codegenie.eval._manifest.model import BenchManifest, ManifestEntry
from codegenie.eval._paths import absolute, find_manifest_path, fs_path
from codegenie.eval.cases import Case, read_cases
from codegenie.eval.errors import (
    BenchCaseLoadError,
    BenchManifestInvalid,
    BenchManifestNotFound,
    BenchRootNotFound,
    BenchRootOutsideManifest,
    InvalidTaskClassName,
    TaskClassModuleMismatch,
    TaskClassNotFound,
    TaskClassRegistrationFailed,
    TaskClassRootConflict,
)
from codegenie.eval.models import TaskClass
from codegenie.eval.naming import check_slug
from codegenie.eval.registry import RegistrationSession, TaskClassRegistry

__all__ = ("load_task_class", "load_cases")  # noqa: RUF022 - the documented order (docs/architecture.md)

_log = LazyLogger(__name__)


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
       For a root reached through a symbolic link with no manifest above its
       target, the nearest one above the link is used.
    4. The manifest must declare ``name`` (else ``TaskClassNotFound`` with
       ``suggestions``), with this root (else ``TaskClassRootConflict``); the
       root, symbolic links resolved, must lie inside the manifest's directory
       (else ``BenchRootOutsideManifest``); and no earlier load in this
       process may have used another root (else ``TaskClassRootConflict``).
    5. A slug already loaded from this root returns the same object, without
       running the module again (and is added to ``registry`` if missing).
    6. The registration file must exist (else ``BenchCaseLoadError``); the
       parent of the root is put first on ``sys.path`` (once). Before
       anything is imported, the import system is asked — without executing
       anything — what it would load for the module: when that is not the
       manifest's file under the root (a ``bench.py`` beside the root, a
       regular ``bench`` package elsewhere on ``sys.path`` or in
       site-packages, a module imported earlier from another root),
       ``TaskClassModuleMismatch`` is raised and that code never runs. Then
       the module is imported. If its body raises anything —
       any ``BaseException``, ``SystemExit`` and ``GeneratorExit`` included,
       even one that cannot be printed — ``TaskClassRegistrationFailed`` is
       raised from the cause; only ``KeyboardInterrupt`` passes through, unchanged.
    7. The imported module must be the expected file (else
       ``TaskClassModuleMismatch``).
    8. The import must have registered ``name`` (else ``TaskClassNotFound``
       listing what it did register).

    A repeat of a request that succeeded (same name, same ``bench_root`` value
    and, for a relative one, the same working directory, same ``manifest=``)
    returns the same object from memory while its module is still imported,
    without looking at the filesystem again.

    Registrations without an explicit ``registry=`` go to ``registry`` (default
    ``default_registry``). A call that raises leaves no trace: what it
    registered, the modules it added to ``sys.modules`` (those from the bench
    root, and those imported through the ``sys.path`` entry it added, such as a
    helper module beside the root), its ``sys.path`` change and its records in
    the loader are undone — also when the exception is a ``KeyboardInterrupt``
    arriving at any point — so fixing the file and calling again in the same
    process works.

    Long-lived processes: the loader remembers only loads whose module is still
    in ``sys.modules`` (and at most a few hundred repeat requests), and a
    ``sys.path`` entry it added is removed again, by a later load from another
    root, once no module loaded through it is left.

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
    given = os.fspath(bench_root)
    root = _bench_root(name, given)

    # 3. The manifest.
    given_manifest = manifest
    if manifest is None:
        manifest = _nearest_manifest(name, root, given)

    # 4. The request against the manifest and this process's earlier loads.
    entry = _declared_entry(name, root, manifest)
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
        return _undoable(_Adoption(earlier, target, key, given_manifest))

    # 6. Import the registration (steps 6 to 8 run in _ImportAttempt).
    expected_file = _registration_file(name, root, entry)
    return _undoable(
        _ImportAttempt(
            name, module_name, root, expected_file, target=target, key=key, manifest=given_manifest
        )
    )


def _bench_root(name: str, given: str) -> str:
    """Return ``given`` resolved; ``BenchRootNotFound`` unless it is a directory (step 2)."""
    try:
        root = os.path.realpath(given)
    except (OSError, ValueError):  # a vanished working directory, a NUL byte
        root = given
    if not os.path.isdir(root):
        _log.error("loader.bench_root_not_found", name=name, bench_root=root)
        raise BenchRootNotFound(Path(root))
    return root


def _declared_entry(name: str, root: str, manifest: BenchManifest) -> ManifestEntry:
    """Return ``name``'s entry once the manifest declares it with this ``root`` (step 4).

    Raises ``TaskClassNotFound`` (with suggestions), ``TaskClassRootConflict``
    or ``BenchRootOutsideManifest``.
    """
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
    manifest_dir = os.path.dirname(str(manifest.path))
    declared_root = os.path.join(manifest_dir, fs_path(entry.root))
    # ``root`` has no symbolic link left in it, so an equal string needs no
    # resolving, and lies inside ``manifest_dir`` (a manifest root has no "..").
    if declared_root != root:
        if os.path.realpath(declared_root) != root:
            declared = Path(os.path.realpath(declared_root))
            _log.error(
                "loader.task_class_root_conflict",
                name=name,
                first_root=str(declared),
                second_root=root,
            )
            raise TaskClassRootConflict(name, declared, Path(root), declared_in=manifest.path)
        _check_inside_manifest_dir(name, root, manifest_dir)
    return entry


def _registration_file(name: str, root: str, entry: ManifestEntry) -> str:
    """Return the registration file under ``root``; ``BenchCaseLoadError`` when it is missing."""
    expected_file = os.path.join(root, *entry.package_parts, "registration.py")
    if not os.path.isfile(expected_file):
        _log.error(
            "loader.registration_file_missing",
            name=name,
            bench_root=root,
            module=entry.module,
            file=expected_file,
        )
        raise BenchCaseLoadError(
            Path(os.path.dirname(expected_file)), "registration.py", "file not found"
        )
    return expected_file


def _nearest_manifest(name: str, root: str, given: str) -> BenchManifest:
    """Step 3: the nearest bench.toml in the root's parent or above, re-read when it changes."""
    try:
        first_place, found = find_manifest_path(os.path.dirname(root))
        if found is None:
            # A root reached through a symbolic link whose target has no
            # manifest above it: the manifest above the link governs it (and
            # step 4 refuses the root when it leads outside that manifest's tree).
            linked_parent = os.path.dirname(absolute(given))
            if linked_parent != os.path.dirname(root):
                found = find_manifest_path(linked_parent)[1]
        if found is None:
            raise BenchManifestNotFound(Path(first_place))
        return load_manifest_cached(found)
    except (BenchManifestNotFound, BenchManifestInvalid) as exc:
        _log.error("loader.manifest_unusable", name=name, error=exc.code, path=str(exc.path))
        raise


def _check_inside_manifest_dir(name: str, root: str, manifest_dir: str) -> None:
    """Step 4: refuse a root that resolves outside the manifest's directory."""
    real_dir = os.path.realpath(manifest_dir)
    if not root.startswith(real_dir.rstrip(os.sep) + os.sep):
        _log.error(
            "loader.bench_root_outside_manifest",
            name=name,
            bench_root=root,
            manifest_dir=real_dir,
        )
        raise BenchRootOutsideManifest(Path(root), Path(real_dir))


# -- what the loader remembers ----------------------------------------------------
#
# Three records, each bounded for long-lived processes that load from many
# roots and purge the modules afterwards:
#
# - ``_loaded``: slug → its successful load in this process, the memory behind
#   step 4's "earlier load from another root" and step 5. An entry whose
#   module has left sys.modules (removed by a test, by hand, or by a purge) no
#   longer counts, and such entries are swept out as the map grows: it holds
#   the slugs whose modules are still imported, plus a few dozen at most.
# - ``_repeats``: see below; swept the same way, and at most _REPEATS_LIMIT
#   entries (the oldest go first).
# - ``_path_entries``: the sys.path entries this loader added. When a load
#   adds a new entry, the entries of roots with no loaded module left are
#   taken off sys.path (with their cached finders).


@dataclass(frozen=True, slots=True)
class _Loaded:
    """A successful load: valid while ``module`` is still what sys.modules holds."""

    root: str
    module_name: str
    module: types.ModuleType
    task_class: TaskClass

    def alive(self) -> bool:
        """Return whether the module of this load is still the imported one."""
        return sys.modules.get(self.module_name) is self.module


_loaded: Final[dict[str, _Loaded]] = {}
_path_entries: Final[dict[str, None]] = {}


def _earlier_load(name: str, module_name: str) -> _Loaded | None:
    record = _loaded.get(name)
    if record is None:
        return None
    if record.module_name != module_name or not record.alive():
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

    def alive(self) -> bool:
        """Return whether the load this repeat answers with still counts."""
        return self.record.alive()


_repeats: Final[dict[tuple[object, ...], _Repeat]] = {}
_REPEATS_LIMIT: Final = 256


def _request_key(name: object, bench_root: object) -> tuple[object, ...] | None:
    if type(name) is not str or not isinstance(bench_root, str | PurePath):
        return None
    if os.path.isabs(bench_root):
        return (name, os.fspath(bench_root))
    try:
        return (name, os.fspath(bench_root), os.getcwd())
    except OSError:  # the working directory is gone: nothing to repeat against
        return None


def _still_valid(repeat: _Repeat, target: TaskClassRegistry, manifest: object) -> bool:
    record = repeat.record
    return (
        repeat.manifest is manifest
        and sys.modules.get(record.module_name) is record.module
        and target.holds(record.task_class)
    )


@final
class _Bound:
    """Keeps one of the loader's maps small: dead entries swept, the oldest dropped past a limit.

    A sweep walks the whole map, so it runs once per as many insertions as the
    map holds entries (at least ``_FLOOR``): constant time per insertion,
    amortised, and never more than that many dead entries kept alive.
    """

    _FLOOR: Final = 32

    def __init__(self, limit: int | None) -> None:
        self._limit = limit
        self._inserted = 0

    def make_room(self, memory: dict[Any, Any]) -> None:
        """Make room for one entry: sweep dead ones now and then; drop the oldest past the limit."""
        self._inserted += 1
        if self._inserted >= max(self._FLOOR, len(memory)):
            self._inserted = 0
            for key in [key for key, value in memory.items() if not value.alive()]:
                memory.pop(key, None)
        limit = self._limit
        while limit is not None and len(memory) >= limit:
            memory.pop(next(iter(memory)), None)


_LOADED_BOUND: Final = _Bound(limit=None)
_REPEATS_BOUND: Final = _Bound(limit=_REPEATS_LIMIT)


# -- one undo for a whole load ------------------------------------------------------


_MISSING: Final = object()


@final
class _Journal:
    """How to take back what a load wrote into registries and the loader's maps.

    Each write is recorded *before* it is made, and each undo step checks that
    its write is still in place, so undoing is idempotent: an undo that was
    interrupted can be run again from the start.
    """

    def __init__(self) -> None:
        self._steps: list[Callable[[], None]] = []

    def register(self, registry: TaskClassRegistry, task_class: TaskClass) -> None:
        """Register ``task_class`` in ``registry`` unless it is already there."""
        if registry.holds(task_class):
            return
        self._steps.append(partial(_unregister, registry, task_class))
        registry.register(task_class)

    def store(self, memory: dict[Any, Any], key: object, value: object) -> None:
        """Set ``memory[key] = value``."""
        self._steps.append(partial(_unstore, memory, key, value, memory.get(key, _MISSING)))
        memory[key] = value

    def discard(self, memory: dict[Any, Any], key: object) -> None:
        """Delete ``memory[key]``, if present."""
        value = memory.get(key, _MISSING)
        if value is _MISSING:
            return
        self._steps.append(partial(_restore, memory, key, value))
        memory.pop(key, None)

    def undo(self) -> None:
        """Take back every recorded write, newest first."""
        for step in reversed(self._steps):
            step()


def _unregister(registry: TaskClassRegistry, task_class: TaskClass) -> None:
    if registry.holds(task_class):
        registry.unregister(task_class.name)


def _unstore(memory: dict[Any, Any], key: object, value: object, previous: object) -> None:
    if memory.get(key, _MISSING) is value:
        if previous is _MISSING:
            memory.pop(key, None)
        else:
            memory[key] = previous


def _restore(memory: dict[Any, Any], key: object, value: object) -> None:
    memory.setdefault(key, value)


class _Undoable(Protocol):
    def run(self) -> TaskClass: ...

    def rollback(self) -> None: ...

    def classify(self, exc: BaseException) -> None: ...


def _undoable(attempt: _Undoable) -> TaskClass:
    """Run ``attempt``; if anything at all is raised before it returns, undo it all.

    The inner handler undoes, then turns a failure of the registration's import
    into its typed error (``classify``); anything else — the loader's own typed
    errors, ``KeyboardInterrupt`` — is re-raised unchanged. The outer handler
    undoes again: an interrupt that lands in the inner handler itself (before
    or during its undo) still leaves nothing behind, and on every other path
    the second undo finds nothing left to do.
    """
    try:
        try:
            return attempt.run()
        except BaseException as exc:
            attempt.rollback()
            attempt.classify(exc)
            raise
    except BaseException:
        attempt.rollback()
        raise


@final
class _Adoption:
    """Step 5: a slug loaded earlier from this root, handed to the caller's registry."""

    def __init__(
        self,
        record: _Loaded,
        target: TaskClassRegistry,
        key: tuple[object, ...] | None,
        manifest: BenchManifest | None,
    ) -> None:
        self._record = record
        self._target = target
        self._key = key
        self._manifest = manifest
        self._journal = _Journal()

    def run(self) -> TaskClass:
        """Register the earlier task class in the target and remember the request."""
        record = self._record
        self._journal.register(self._target, record.task_class)
        if self._key is not None:
            _REPEATS_BOUND.make_room(_repeats)
            self._journal.store(_repeats, self._key, _Repeat(record, self._manifest))
        _log.debug(
            "loader.task_class_cache_hit",
            name=record.task_class.name,
            bench_root=record.root,
            module=record.module_name,
        )
        return record.task_class

    def rollback(self) -> None:
        """Take back the registration and the remembered request."""
        self._journal.undo()

    def classify(self, exc: BaseException) -> None:
        """Nothing to classify: no registration code runs here."""


@final
class _ImportAttempt:
    """Steps 6 to 8 for one slug, and the recording of the result, under one undo.

    :meth:`run` opens the registration session, puts the root's parent first on
    ``sys.path``, checks what would be imported, imports, verifies, registers
    the task class into the target registry and records the load in the
    loader's maps. :meth:`rollback` takes all of it back — the session, the
    registrations, the records, the ``sys.modules`` entries the import added
    and the ``sys.path`` change (see ``ImportScope``) — at any point, also
    after a complete run, and may be repeated.
    """

    def __init__(
        self,
        name: str,
        module_name: str,
        root: str,
        expected_file: str,
        *,
        target: TaskClassRegistry,
        key: tuple[object, ...] | None,
        manifest: BenchManifest | None,
    ) -> None:
        self.name = name
        self.module_name = module_name
        self.root = root
        self.expected_file = expected_file
        self._target = target
        self._key = key
        self._manifest = manifest
        self._path_entry = os.path.dirname(root)
        self._scope = ImportScope(root)
        self._session = RegistrationSession(target)
        self._journal = _Journal()
        self._raised: BaseException | None = None
        self._not_found = False
        self._shadow: Path | None = None

    def run(self) -> TaskClass:
        """Import the registration into the target registry; return its task class."""
        self._session.open()
        new_entry = self._path_entry not in sys.path
        self._scope.open(self._path_entry)
        if new_entry:
            self._forget_unused_path_entries()

        # Code the manifest did not name never runs: ask first what would answer.
        shadow = find_shadow(self.module_name, self._path_entry, self.expected_file)
        if shadow is not None:
            self._mismatch(shadow.file)
        module = self._import()

        # 7. The module that answered must be the manifest's file.
        if not same_file(module, self.expected_file):
            self._mismatch(module_file(module))

        # 8. It must have registered the slug.
        task_class = self._session.find(self.name) or _registered_earlier(
            self.name, self.module_name, self._target
        )
        if task_class is None:
            registered = sorted(self._session.names())
            _log.error(
                "loader.task_class_not_registered_after_import",
                name=self.name,
                module=self.module_name,
                registered=registered,
            )
            raise TaskClassNotFound(
                self.name, looked_up_in=self.module_name, available_names=tuple(registered)
            )

        # Record the load. Each write is journaled, so an interrupt anywhere up
        # to the return below still undoes the whole load.
        self._journal.register(self._target, task_class)
        record = _Loaded(self.root, self.module_name, module, task_class)
        _LOADED_BOUND.make_room(_loaded)
        self._journal.store(_loaded, self.name, record)
        if self._key is not None:
            _REPEATS_BOUND.make_room(_repeats)
            self._journal.store(_repeats, self._key, _Repeat(record, self._manifest))
        if new_entry:
            self._journal.store(_path_entries, self._path_entry, None)
        self._scope.keep()
        self._session.close()
        _log.info(
            "loader.task_class_loaded",
            name=self.name,
            bench_root=self.root,
            module=self.module_name,
        )
        return task_class

    def _forget_unused_path_entries(self) -> None:
        """Take off sys.path the entries this loader added whose loads are all gone."""
        if not _path_entries:
            return
        in_use = {os.path.dirname(record.root) for record in _loaded.values() if record.alive()}
        for entry in list(_path_entries):
            if entry != self._path_entry and entry not in in_use:
                self._journal.discard(_path_entries, entry)
                forget_path_entry(entry)  # sys.path itself comes back with the scope's undo

    def _import(self) -> types.ModuleType:
        try:
            return import_fresh(self.module_name)
        except BaseException as exc:
            self._raised = exc
            if is_not_found(exc, self.module_name):
                # The file exists, yet the import system did not find it:
                # another package of the root's name answered instead. Noted
                # now, before the undo removes what answered.
                self._not_found = True
                self._shadow = shadow_file(self.module_name)
            raise

    def rollback(self) -> None:
        """Undo everything :meth:`run` did so far; idempotent."""
        self._session.close()
        self._journal.undo()
        self._session.rollback()
        self._scope.undo()

    def classify(self, exc: BaseException) -> None:
        """Raise the typed error for a failed import of the registration; return otherwise.

        Only what the import itself raised is classified; ``KeyboardInterrupt``
        and the loader's own errors are left to propagate unchanged.
        """
        if exc is not self._raised or issubclass(type(exc), KeyboardInterrupt):
            return
        if self._not_found:
            self._mismatch(self._shadow)
        cause_type, message = describe_exception(exc)
        _log.error(
            "loader.registration_import_failed",
            name=self.name,
            bench_root=self.root,
            module=self.module_name,
            cause_type=cause_type,
            cause_message=message[:200],
        )
        source = Path(self.expected_file)
        raise TaskClassRegistrationFailed(
            self.name, cause_type, message, source=source, line=failure_line(exc, source)
        ) from exc

    def _mismatch(self, actual: str | Path | None) -> NoReturn:
        _log.error(
            "loader.module_mismatch",
            name=self.name,
            module=self.module_name,
            expected_file=self.expected_file,
            actual_file=str(actual),
        )
        raise TaskClassModuleMismatch(
            self.name,
            self.module_name,
            Path(self.expected_file),
            Path(actual) if actual is not None else None,
        )


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
    """Return every case of the task class ``name``, sorted by id.

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
