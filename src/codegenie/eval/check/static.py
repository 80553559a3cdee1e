"""The checks that need no import: the manifest, the tree, and the registrations' source.

Reading a manifest with problems does not stop here: every entry that is
valid on its own is still checked, so one run reports every inconsistency.
"""

from __future__ import annotations

import ast
import contextlib
import os
import stat
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from codegenie.eval import codes
from codegenie.eval._manifest.model import BenchManifest, ManifestEntry
from codegenie.eval._manifest.read import read_manifest_bytes
from codegenie.eval._paths import MANIFEST_SIZE_LIMIT, fs_path
from codegenie.eval._toml.positions import TomlPositions
from codegenie.eval._toml.read import parse_toml
from codegenie.eval._tree import DEPTH_LIMIT, Entry, TreeBeyondBounds, TreeBounds, Walk
from codegenie.eval.check.environment import EnvironmentChecks
from codegenie.eval.codes import diagnostic
from codegenie.eval.diagnostics import Diagnostic
from codegenie.eval.errors import BenchManifestInvalid, BenchManifestNotFound
from codegenie.eval.naming import slug_problem, slug_to_identifier
from codegenie.eval.problems import (
    display_path,
    manifest_diagnostics,
    misplaced_package,
    module_convention,
    module_missing,
    root_hint,
    root_missing,
    root_outside,
)

__all__ = ("ImportTarget", "StaticResult", "check_static", "display_path")

#: Registrations larger than this are not parsed (nor imported): source-unparsable.
MAX_SOURCE_BYTES = MANIFEST_SIZE_LIMIT


@dataclass(frozen=True, slots=True)
class ImportTarget:
    """One registration to import in a worker."""

    slug: str
    module: str
    root: str
    manifest: str
    expected_file: str
    display_file: str
    manifest_line: int
    manifest_column: int = 1
    register_lines: tuple[tuple[str, int], ...] = ()
    #: The rubric's command the entry declares (``None``: the rubric protocol's).
    command: tuple[str, ...] | None = None

    @property
    def root_dir(self) -> str:
        """The root directory, absolute, symbolic links resolved."""
        return os.path.realpath(os.path.join(os.path.dirname(self.manifest), fs_path(self.root)))


@dataclass
class StaticResult:
    """What the static checks found, and what remains to import."""

    manifest: Path
    slugs: list[str] = field(default_factory=list)
    #: Every slug the manifest declares (this shard's), valid or not: ``slugs`` are those checked.
    declared: list[str] = field(default_factory=list)
    #: Every slug the manifest declares, whatever the shard.
    every_slug: frozenset[str] = frozenset()
    #: Whether the manifest could be read as TOML at all (else ``manifest-syntax``, in shard 1).
    readable: bool = True
    diagnostics: list[Diagnostic] = field(default_factory=list)
    targets: list[ImportTarget] = field(default_factory=list)
    rubric_flagged: set[str] = field(default_factory=set)
    #: Per checked slug, the codes its entry accepts and where its ``accept`` value is.
    accepts: dict[str, tuple[tuple[str, ...], tuple[int, int]]] = field(default_factory=dict)


@dataclass
class _Read:
    entries: dict[str, ManifestEntry]
    positions: TomlPositions | None
    diagnostics: list[Diagnostic]
    # Slugs and module strings written in the file, valid or not: a package
    # that an invalid entry names is that entry's problem, not an orphan.
    mentioned: set[str] = field(default_factory=set)
    # Every slug the file declares, in its order, valid or not.
    declared: list[str] = field(default_factory=list)


def _read(path: Path) -> _Read:
    """Return the usable entries, their positions and the manifest's own diagnostics."""
    shown = display_path(path)
    try:
        data = read_manifest_bytes(path)
        manifest = BenchManifest.from_bytes(data, path)
    except BenchManifestNotFound:
        message = "the file disappeared while it was being checked"
        return _Read(
            {}, None, [diagnostic(codes.MANIFEST_SYNTAX, message, file=shown, line=1, column=1)]
        )
    except BenchManifestInvalid as exc:
        if any(p.kind == "syntax" for p in exc.problems):
            return _Read({}, None, manifest_diagnostics(exc, raw={}))
        # No syntax problem: the bounded reader reads it as validation did.
        text, raw = parse_toml(data)
        positions = TomlPositions(text)
        diagnostics = manifest_diagnostics(exc, raw=raw, positions=positions)
        table = raw.get("task-classes")
        declared = (
            [slug for slug in table if isinstance(slug, str)] if isinstance(table, dict) else []
        )
        return _Read(_salvage(raw), positions, diagnostics, _mentioned(raw), declared)
    entries = dict(manifest.task_classes)
    mentioned = set(entries) | {entry.module for entry in entries.values()}
    return _Read(entries, TomlPositions(data.decode("utf-8")), [], mentioned, list(entries))


def _mentioned(raw: dict[str, object]) -> set[str]:
    table = raw.get("task-classes")
    if not isinstance(table, dict):
        return set()
    names = set(table)
    for value in table.values():
        module = value.get("module") if isinstance(value, dict) else None
        if isinstance(module, str):
            names.add(module)
    return names


def _salvage(raw: dict[str, object]) -> dict[str, ManifestEntry]:
    """Return the entries of an invalid manifest that are valid on their own."""
    table = raw.get("task-classes")
    if not isinstance(table, dict):
        return {}
    entries: dict[str, ManifestEntry] = {}
    modules: set[str] = set()
    for slug, value in table.items():
        if slug_problem(slug) is not None:
            continue
        try:
            entry = ManifestEntry.model_validate(value)
        except ValidationError:
            continue
        if entry.module in modules:
            continue  # reported as duplicate-module; importing it twice proves nothing
        modules.add(entry.module)
        entries[slug] = entry
    return entries


def _walk_registrations(root: Path) -> list[Path]:
    """Return every ``registration.py`` under ``root``, in a stable order (a directory's first).

    Hidden directories, ``__pycache__`` and the ``cases/`` directory of a task
    class package (a directory holding a ``registration.py``) are not
    entered: cases are data — a case's ``input/`` may well hold a
    ``registration.py`` for the solver to work on — and a bench's cases are
    most of its directories. The tree is walked as every tree is
    (:class:`~codegenie.eval._tree.Walk`: links never followed, no recursion,
    a few descriptors); a directory that cannot be read is passed over, and
    one at the depth bound is not entered (no module that deep is imported
    by anyone). The entries are not bounded: a bench is no candidate, and one
    of 100,000 task classes holds several entries for each, while the search
    keeps nothing of an entry but a registration's path.
    """

    def skip(entry: Entry) -> bool:
        if entry.kind != "directory":
            return False
        name = entry.name
        return (
            name.startswith(".")
            or name == "__pycache__"
            or (name == "cases" and "registration.py" in entry.siblings)
            or entry.depth >= DEPTH_LIMIT
        )

    found: list[Path] = []
    every = TreeBounds(entries=sys.maxsize)
    with contextlib.suppress(OSError, TreeBeyondBounds):  # the top unreadable, say
        for entry in Walk(root, bounds=every, skip=skip, unreadable="skip"):
            if entry.name == "registration.py" and entry.kind != "directory":
                found.append(root / entry.relative)
    # A directory's own registration before those of its subdirectories, as os.walk gave them.
    return sorted(found, key=lambda path: path.parent.parts)


_IMPORTERS = frozenset({"import_module", "__import__", "run_path", "spec_from_file_location"})


def _names_and_registrations(
    tree: ast.AST,
) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """Return the names the source imports and its literal ``register_task_class`` calls.

    Both with their lines, each in ``ast.walk`` order; one walk of the tree
    (two cost ~14 % of the static pass).
    """
    imported: list[tuple[str, int]] = []
    registered: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            imported.append((base, node.lineno))
            imported += [(f"{base}.{alias.name}", node.lineno) for alias in node.names]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in _IMPORTERS:
                for arg in node.args[:1]:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        imported.append((arg.value, node.lineno))
            elif name == "register_task_class" and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    registered.append((first.value, node.lineno))
    return imported, registered


def _is_rubric(name: str) -> bool:
    last = name.replace("/", ".").rstrip(".").rsplit(".", 1)[-1]
    return last in {"rubric", "rubric.py"} or name.endswith("rubric.py")


def _source_checks(
    slug: str, registration: Path, result: StaticResult
) -> tuple[tuple[str, int], ...] | None:
    """Flag rubric imports in the source; return the literal registrations and their lines.

    Returns ``None`` (and reports ``source-unparsable``) for a source that no
    parser can take at all; a plain syntax error is left to the import, which
    reports it with its line.
    """
    shown = display_path(registration)
    try:
        if registration.stat().st_size > MAX_SOURCE_BYTES:
            raise MemoryError
        tree = ast.parse(registration.read_bytes(), filename=str(registration))
    except SyntaxError:
        return ()
    except (RecursionError, MemoryError, ValueError, OSError) as exc:
        reason = {
            RecursionError: "it is nested too deeply for the parser",
            MemoryError: f"it is larger than {MAX_SOURCE_BYTES >> 20} MiB",
            ValueError: "it contains a NUL byte",
        }.get(type(exc), f"it cannot be read ({exc})")
        result.diagnostics.append(
            diagnostic(
                codes.SOURCE_UNPARSABLE,
                f"{slug!r} registration {shown} cannot be parsed: {reason}",
                file=shown,
                line=1,
                column=1,
                slug=slug,
            )
        )
        return None
    imported, registered = _names_and_registrations(tree)
    for name, line in imported:
        if _is_rubric(name):
            result.rubric_flagged.add(slug)
            result.diagnostics.append(
                diagnostic(
                    codes.RUBRIC_IMPORTED,
                    f"{slug!r} registration imports rubric module {name!r}",
                    file=shown,
                    line=line,
                    column=1,
                    slug=slug,
                )
            )
    return tuple(registered)


@dataclass(frozen=True, slots=True)
class _Root:
    """A declared root, looked at once however many entries declare it."""

    path: Path  # as declared, under the manifest's directory
    resolved: Path | None  # symbolic links resolved; None unless it is a directory
    inside: bool  # a directory inside the manifest's (resolved) directory

    @classmethod
    def locate(cls, path: Path, manifest_dir: Path) -> _Root:
        if not path.is_dir():
            return cls(path, None, inside=False)
        resolved = path.resolve()
        return cls(path, resolved, inside=resolved.is_relative_to(manifest_dir))


def _resolved_under(directory: Path, parts: Sequence[str], path: Path) -> str:
    """Return ``str(path.resolve())`` for ``path``, ``directory`` joined with ``parts``.

    ``directory`` is resolved already, so unless one of ``parts`` is a
    symbolic link (or cannot be looked at) the answer is ``directory`` joined
    with them: an ``lstat`` per part instead of one per component of the
    whole path (``realpath``, ~20 µs a slug).
    """
    joined = str(directory)
    for part in parts:
        joined = os.path.join(joined, part)
        try:
            if stat.S_ISLNK(os.lstat(joined).st_mode):
                return str(path.resolve())
        except OSError:
            return str(path.resolve())
    return joined


def _check_entry(
    slug: str,
    entry: ManifestEntry,
    root: _Root,
    *,
    where: Callable[..., tuple[int, int]],
    where_value: Callable[..., tuple[int, int]],
    shown: str,
    manifest: Path,
    manifest_dir: Path,
    environments: EnvironmentChecks,
    result: StaticResult,
) -> None:
    """Check one entry against the tree; queue its import when it can be imported.

    Its environment is checked whatever its root: the registration is
    imported in the harness's own environment, and never depends on it.
    """

    def at(key: str) -> tuple[str, int, int]:
        """Where the value of the entry's ``key`` is: its problems are problems of that value."""
        return (shown, *where_value("task-classes", slug, key))

    if entry.environment is not None or entry.python is not None:
        result.diagnostics += environments.check(
            slug, entry, environment_at=at("environment"), python_at=at("python")
        )

    if root.resolved is None:
        hint = root_hint(manifest.parent, entry.root, entry.package_parts)
        result.diagnostics.append(root_missing(slug, entry.root, root.path, at("root"), hint=hint))
        return
    if not root.inside:
        result.diagnostics.append(
            root_outside(slug, entry.root, root.resolved, manifest_dir, at("root"))
        )
        return
    ident = slug_to_identifier(slug)
    if entry.package_parts != (ident,):
        expected = f"{entry.module.split('.', 1)[0]}.{ident}.registration"
        result.diagnostics.append(module_convention(slug, entry.module, expected, at("module")))
    registration = entry.registration_file(root.path)
    if not registration.is_file():
        meant = misplaced_package(slug, entry.package_parts, root.path, result.every_slug)
        result.diagnostics.append(
            module_missing(slug, entry.module, registration, at("module"), meant=meant)
        )
        return
    register_lines = _source_checks(slug, registration, result)
    if register_lines is None:
        return
    result.targets.append(
        ImportTarget(
            slug=slug,
            module=entry.module,
            root=entry.root,
            manifest=str(manifest),
            expected_file=_resolved_under(
                root.resolved, (*entry.package_parts, "registration.py"), registration
            ),
            display_file=display_path(registration),
            manifest_line=where("task-classes", slug)[0],
            manifest_column=where("task-classes", slug)[1],
            register_lines=register_lines,
            command=entry.command,
        )
    )


def _misplaced(
    walked: dict[Path, list[Path]],
    expected: dict[str, tuple[Path, ManifestEntry, Path]],
    every_slug: frozenset[str],
) -> set[Path]:
    """Return the unlisted registrations that an entry missing its own probably meant.

    ``expected`` maps each slug to its root (resolved), entry and
    registration file. Such a registration is that entry's ``module-missing``
    (which names it), not also an orphan. Decided over every entry, whatever
    the shard, so the shards' union is the full run; only an entry whose
    file the walk did not find costs a look at the disk.
    """
    present = {registration for found in walked.values() for registration in found}
    meant: set[Path] = set()
    for slug, (root, entry, registration) in expected.items():
        if registration in present or registration.is_file():
            continue
        package = misplaced_package(slug, entry.package_parts, root, every_slug)
        if package is not None:
            meant.add(package / "registration.py")
    return meant


def _orphans(
    walked: dict[Path, list[Path]],
    declared: set[Path],
    mentioned: set[str],
    in_shard: Callable[[str | None], bool],
) -> list[Diagnostic]:
    """Report each registration.py under a declared root that no entry lists."""
    found = []
    for root, registrations in walked.items():
        for registration in registrations:
            if registration in declared:
                continue
            guess = registration.parent.name.replace("_", "-")
            orphan = guess if slug_problem(guess) is None else None
            relative = registration.parent.relative_to(root.parent)
            module = ".".join((*relative.parts, "registration"))
            if guess in mentioned or module in mentioned or not in_shard(orphan):
                continue
            found.append(
                diagnostic(
                    codes.ORPHAN_TASK_CLASS,
                    f"{display_path(registration)} ({module}) is under a declared root, "
                    "but no entry of bench.toml lists it",
                    file=display_path(registration),
                    line=1,
                    column=1,
                    slug=orphan,
                    hint=(
                        f"add [task-classes.{orphan or '<slug>'}] with "
                        f'module = "{module}" to bench.toml, or delete the directory'
                    ),
                )
            )
    return found


def check_static(
    path: Path,
    in_shard: Callable[[str | None], bool],
    *,
    orphans_in: Callable[[str | None], bool] | None = None,
) -> StaticResult:
    """Run every check that needs no import on the manifest at ``path``.

    ``in_shard(slug)`` says whether a slug (``None`` for diagnostics that
    belong to no slug) is this run's to report; ``orphans_in`` (default:
    ``in_shard``) says it of an orphan registration's slug, which no entry
    declares: a check restricted to some slugs still reports every orphan.
    """
    result = StaticResult(manifest=path)
    read = _read(path)
    result.diagnostics += [d for d in read.diagnostics if in_shard(d.slug)]
    result.declared = [slug for slug in read.declared if in_shard(slug)]
    result.every_slug = frozenset(read.declared)
    result.readable = not any(d.code == codes.MANIFEST_SYNTAX.name for d in read.diagnostics)
    positions = read.positions

    def where(*key: str | int) -> tuple[int, int]:
        return positions.find(key) if positions is not None else (1, 1)

    def where_value(*key: str | int) -> tuple[int, int]:
        return positions.find_value(key) if positions is not None else (1, 1)

    declared: set[Path] = set()
    expected: dict[str, tuple[Path, ManifestEntry, Path]] = {}
    roots: set[Path] = set()
    manifest_dir = path.parent.resolve()
    shown = display_path(path)
    located: dict[str, _Root] = {}  # roots repeat: each is stat'ed and resolved once
    environments = EnvironmentChecks(manifest_dir)
    for slug, entry in read.entries.items():
        root = located.get(entry.root)
        if root is None:
            root = located[entry.root] = _Root.locate(
                path.parent / fs_path(entry.root), manifest_dir
            )
        if root.inside and root.resolved is not None:
            roots.add(root.resolved)
            registration = entry.registration_file(root.resolved)
            declared.add(registration)
            expected[slug] = (root.resolved, entry, registration)
        if in_shard(slug):
            result.slugs.append(slug)
            if entry.accept:
                result.accepts[slug] = (entry.accept, where_value("task-classes", slug, "accept"))
            _check_entry(
                slug,
                entry,
                root,
                where=where,
                where_value=where_value,
                shown=shown,
                manifest=path,
                manifest_dir=manifest_dir,
                environments=environments,
                result=result,
            )
    walked = {root: _walk_registrations(root) for root in sorted(roots)}
    declared |= _misplaced(walked, expected, result.every_slug)
    result.diagnostics += _orphans(walked, declared, read.mentioned, orphans_in or in_shard)
    return result
