"""Importing a registration so that it can be undone: shared by the loader and check's workers.

Four things live here, each used by both the in-process loader and the check
worker, so that the two describe one problem the same way:

- :func:`describe_exception` turns whatever a registration raised into text,
  even when the exception's ``__str__`` or ``__repr__`` raises;
- :func:`find_shadow` finds, without executing anything, what the import
  system would load for a registration module instead of the expected file
  (a ``bench.py`` beside ``bench/``, a regular ``bench`` package elsewhere on
  ``sys.path``), so that code the manifest did not name never runs;
- :class:`ImportScope` records the state of ``sys.modules`` and ``sys.path``
  before an import and can put it back;
- small helpers: :func:`put_first_on_sys_path`, :func:`same_file`,
  :func:`shadow_file`, :func:`failure_line`, :func:`import_fresh`.

``ImportScope``: ``sys.modules`` keeps insertion order, so a fresh marker
module placed at its end separates what an import adds from what was there
before, without copying a mapping that can hold tens of thousands of entries.
Undoing removes the modules that came from the bench root or took its
package's name (the task-class packages, the root's namespace package, a
shadowing ``bench`` package, rubrics, helpers), and the modules that were
imported through a ``sys.path`` entry the undo removes (a ``benchhelpers.py``
beside ``bench/``: left behind, a fixed copy would never be imported again in
the process). It leaves modules from elsewhere — the standard library,
installed packages — that the import loaded along the way: they were imported
whole, they hold no registration of the bench, and a C extension removed from
``sys.modules`` often cannot be imported a second time in the same process.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import sys
import traceback
import types
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from typing import Final, TypeVar, final

__all__ = (
    "ImportScope",
    "Shadow",
    "describe_exception",
    "failure_line",
    "find_shadow",
    "forget_path_entry",
    "import_fresh",
    "is_not_found",
    "is_prefix_of",
    "module_file",
    "put_first_on_sys_path",
    "same_file",
    "shadow_file",
)

_T = TypeVar("_T")
_marks: Final = count()
# type's own descriptor: a metaclass cannot override what it returns.
_TYPE_NAME: Final = type.__dict__["__name__"]


# -- describing what a registration raised ------------------------------------


def describe_exception(exc: BaseException) -> tuple[str, str]:
    """Return ``(type name, message)`` for ``exc``; never raises because of ``exc``.

    Contract, relied on by the loader and the check worker:

    - the type name is the class's own ``__name__`` (read through ``type``, so
      a metaclass cannot make it fail or lie);
    - the message is ``str(exc)``; for ``SystemExit`` it is
      ``"the registration called sys.exit(<repr of the code>)"``;
    - when ``str(exc)`` (or the exit code's ``repr``) raises, returns something
      that is not a string, or the exception's attributes raise, the text
      falls back to ``<unprintable X object>`` (``X`` the type name of what
      could not be printed), as the traceback module does;
    - the message is not truncated (callers cut it to their own limit) and is
      always an exact ``str``, never a subclass with surprising methods;
    - only ``KeyboardInterrupt`` raised while formatting propagates: the user
      pressed Ctrl-C, which no description should swallow.
    """
    name = _type_name(type(exc))
    if issubclass(type(exc), SystemExit):
        try:
            code = exc.code  # type: ignore[attr-defined]
        except KeyboardInterrupt:
            raise
        except BaseException:  # a property in a subclass; anything it raises
            return name, f"the registration called sys.exit(<unprintable {name} object>)"
        return name, f"the registration called sys.exit({_printable(repr, code)})"
    return name, _printable(str, exc)


def _type_name(cls: type) -> str:
    name: str = _TYPE_NAME.__get__(cls, type)
    return name


def _printable(render: Callable[[object], object], value: object) -> str:
    try:
        text = render(value)
    except KeyboardInterrupt:
        raise
    except BaseException:  # __str__/__repr__ may raise anything, SystemExit included
        return f"<unprintable {_type_name(type(value))} object>"
    if not issubclass(type(text), str):
        return f"<unprintable {_type_name(type(value))} object>"
    exact: str = str.__getitem__(text, slice(None))  # type: ignore[index]
    return exact


def _quietly(default: _T, action: Callable[..., _T], *args: object) -> _T:
    """Return ``action(*args)``, or ``default`` when it raises anything but ``KeyboardInterrupt``.

    For code that touches objects a registration controls (its exceptions, its
    modules' attributes, import hooks): whatever they raise must not escape as
    the loader's own failure.
    """
    try:
        return action(*args)
    except KeyboardInterrupt:
        raise
    except BaseException:
        return default


def _str_attr(thing: object, attribute: str) -> str | None:
    value = _quietly(None, getattr, thing, attribute, None)
    return value if type(value) is str else None


# -- finding what would answer, without running it ----------------------------


@final
@dataclass(frozen=True, slots=True)
class Shadow:
    """What the import system would load instead of a registration's expected file.

    ``module`` is the first name along the dotted path (the root package, a
    package under it, or the module itself) that would not come from the
    expected place. ``file`` is what would answer: the file the whole module
    name would be loaded from, or — when the shadowing package has no such
    module — the file of the deepest shadowing package (its ``__init__``, the
    module file such as ``bench.py``, or a namespace portion's directory);
    ``None`` when it has no location at all.
    """

    module: str
    file: str | None


@dataclass(frozen=True, slots=True)
class _Place:
    """Where the import system finds one module: its file and, for a package, its search path."""

    file: str | None
    locations: list[str] | None


_UNSURE: Final = object()


def find_shadow(module_name: str, path_entry: str, expected_file: str) -> Shadow | None:
    """Return what would be imported for ``module_name`` instead of ``expected_file``, or ``None``.

    Nothing is executed: for each package along ``module_name`` (``bench``,
    ``bench.foo``, then ``bench.foo.registration``), the module already in
    ``sys.modules`` is used as the import system would use it, and a module
    not imported yet is looked up as the import system would look it up — the
    ``sys.meta_path`` finders that come before the path finder, then the path
    entry finders of each directory (``sys.path`` with ``path_entry`` first
    for the root package, the parent package's search path below it). A
    ``bench.py`` beside ``bench/`` therefore shadows the root (a module file
    wins over a namespace portion), and so does a regular ``bench`` package
    anywhere on ``sys.path`` (a regular package wins over namespace portions
    wherever they are).

    Returns ``None`` when every step leads to the expected place: the root
    package is ``path_entry/<first part>`` (a namespace portion of it or a
    regular package there), each package below it is the directory of the
    same name, and the module is ``expected_file``. Below the root package,
    a module not imported yet whose parent's search path lies entirely inside
    the root is not looked up: anything that can answer there is the bench's
    own tree, and the caller compares the imported file afterwards. Also
    ``None`` when the module cannot be found at all (after clearing the
    finders' caches once): then the import itself fails and says so.

    Call it with ``sys.path`` as the import will see it (``path_entry`` put
    first, as :meth:`ImportScope.open` leaves it): an imported namespace
    package recomputes its search path from ``sys.path``, and that is what
    is inspected.
    """
    found = _resolve(module_name, path_entry, expected_file)
    if found is _UNSURE:
        # The expected module was not found: a finder's directory cache may
        # predate the file. Look once more with fresh caches, as the import would.
        importlib.invalidate_caches()
        found = _resolve(module_name, path_entry, expected_file)
    return found if isinstance(found, Shadow) else None


def _resolve(module_name: str, path_entry: str, expected_file: str) -> Shadow | object | None:
    parts = module_name.split(".")
    root = os.path.join(path_entry, parts[0])
    search: list[str] = []  # where the next part is looked for; sys.path for the root package
    diverged: Shadow | None = None  # the first module off the expected path, and its place
    deepest: str | None = None  # the place of the deepest package found off that path
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        final_part = depth == len(parts)
        if (
            depth > 1
            and diverged is None
            and name not in sys.modules
            and all(_under(location, root) for location in search)
        ):
            # Not imported yet, and searched for only inside the root: whatever
            # answers is the bench's own tree (and step 7 checks the file).
            # Skipping the lookup keeps a first load near the bare import's cost.
            return None
        if depth == 1 and name not in sys.modules:
            search = [path_entry, *(entry for entry in sys.path if entry != path_entry)]
        place = _locate(name, search, top_level=depth == 1)
        if place is None:
            return _UNSURE if diverged is None else Shadow(diverged.module, deepest)
        where = place.file or (place.locations[0] if place.locations else None)
        if final_part:
            if diverged is None:
                return None if _same_path(place.file, expected_file) else Shadow(name, where)
            # The whole name resolves, through a package that is not the bench's:
            # name what would answer (or the shadowing package when that is ours).
            answer = diverged.file if _same_path(place.file, expected_file) else where
            return Shadow(diverged.module, answer)
        if place.locations is None:  # a module, not a package: nothing below it imports
            return Shadow(diverged.module if diverged else name, where)
        expected_dir = os.path.join(path_entry, *parts[:depth])
        if diverged is None and not _is_package_at(place, expected_dir):
            diverged = Shadow(name, where)
        if diverged is not None:
            deepest = where
        search = place.locations
    return None  # not reached: the last part returns


def _is_package_at(place: _Place, directory: str) -> bool:
    """Whether ``place`` is a package in ``directory``: regular there, or with a portion there."""
    if place.file is not None:
        return _same_path(os.path.dirname(place.file), directory)
    locations = place.locations or []
    return directory in locations or any(_same_path(loc, directory) for loc in locations)


def _same_path(found: str | None, expected: str) -> bool:
    if found is None:
        return False
    return found == expected or _quietly(False, _same_real_path, found, expected)


def _same_real_path(first: str, second: str) -> bool:
    return os.path.realpath(first) == os.path.realpath(second)


def _locate(name: str, search: list[str], *, top_level: bool) -> _Place | None:
    """Where the import system finds ``name`` now: the imported module, else its spec."""
    module = sys.modules.get(name, _UNSURE)
    if module is _UNSURE:
        return _find_spec(name, search, top_level=top_level)
    if module is None:  # an import blocked on purpose: it fails, nothing runs
        return None
    locations = _quietly(None, getattr, module, "__path__", None)
    return _Place(
        _str_attr(module, "__file__"),
        None if locations is None else _strings(locations),
    )


def _strings(values: object) -> list[str]:
    """Return the strings of an iterable path (``__path__``, ``submodule_search_locations``)."""

    def collect() -> list[str]:
        return [value for value in values if type(value) is str]  # type: ignore[attr-defined]

    return _quietly([], collect)


def _find_spec(name: str, search: list[str], *, top_level: bool) -> _Place | None:
    path_finder = importlib.machinery.PathFinder
    for finder in list(sys.meta_path):
        if finder is path_finder:
            break
        # A finder ahead of the path finder (an import hook) answers first.
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        spec = _quietly(None, find, name, None if top_level else search)
        if spec is not None:
            return _place_of(spec)
    return _path_spec(name, search)


def _place_of(spec: importlib.machinery.ModuleSpec) -> _Place:
    locations = spec.submodule_search_locations
    file = spec.origin if spec.has_location and isinstance(spec.origin, str) else None
    return _Place(file, None if locations is None else _strings(locations))


def _path_spec(name: str, search: Iterable[str]) -> _Place | None:
    """Return what ``PathFinder`` would find for ``name`` in ``search``, as plain data.

    The same walk as the path finder's (PEP 302, PEP 420): the first entry
    whose finder returns a loader wins; namespace portions are collected from
    every entry and form a namespace package only when nothing wins.
    ``PathFinder.find_spec`` itself cannot be used below the top level: for a
    namespace result it consults the parent package in ``sys.modules``, which
    is not imported yet.
    """
    portions: list[str] = []
    for entry in search:
        finder = _entry_finder(entry)
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        spec = _quietly(None, find, name)
        if spec is None:
            continue
        if spec.loader is not None:
            return _place_of(spec)
        portions.extend(_strings(spec.submodule_search_locations or ()))
    return _Place(None, portions) if portions else None


def _entry_finder(entry: str) -> object:
    """Return the path entry finder of ``entry``, made and cached as the path finder does."""
    if type(entry) is not str:
        return None
    if entry == "":
        try:
            entry = os.getcwd()
        except OSError:
            return None
    cache: dict[str, object] = sys.path_importer_cache  # type: ignore[assignment]
    try:
        return cache[entry]
    except KeyError:
        pass
    finder: object = None
    for hook in list(sys.path_hooks):
        try:
            finder = hook(entry)
        except ImportError:
            continue
        break
    cache[entry] = finder
    return finder


# -- undoing an import --------------------------------------------------------


@final
class ImportScope:
    """What one import adds to ``sys.modules`` and changes in ``sys.path``.

    Call :meth:`open` before importing, then :meth:`keep` to accept the result
    or :meth:`undo` to remove every module the import added (and its attribute
    on a parent package that stays) and restore ``sys.path``. :meth:`undo`
    may also follow :meth:`keep` (it then takes back what was kept), and it is
    idempotent: when an interrupt stops it half-way, running it again finishes
    the job, so callers can retry it from an outer handler.
    """

    def __init__(self, root: str) -> None:
        self._root = root
        self._saved_path: list[str] | None = None
        self._mark = f"codegenie.eval._import_mark_{next(_marks)}"
        self._kept: list[str] | None = None
        self._doomed: dict[str, object] | None = None

    def open(self, path_entry: str) -> None:
        """Record the current state, then put ``path_entry`` first on ``sys.path``."""
        self._saved_path = list(sys.path)
        sys.modules[self._mark] = types.ModuleType(self._mark)
        put_first_on_sys_path(path_entry)

    def added(self) -> list[str]:
        """Return the names of the modules added since :meth:`open`, newest first."""
        if self._mark not in sys.modules:
            return list(self._kept or ())
        try:
            return self._since_mark(reversed(sys.modules))
        except RuntimeError:  # another thread imported meanwhile: scan a copy
            return self._since_mark(reversed(list(sys.modules)))

    def _since_mark(self, newest_first: Iterable[str]) -> list[str]:
        names = []
        for key in newest_first:
            if key == self._mark:
                break
            names.append(key)
        return names

    def keep(self) -> None:
        """Accept what the import did (it stays undoable by :meth:`undo`)."""
        self._kept = self.added()
        sys.modules.pop(self._mark, None)

    def undo(self) -> None:
        """Remove the modules the import added from the root, and restore ``sys.path``."""
        saved = self._saved_path
        if saved is None:
            return
        if self._doomed is None:
            # Decide once, before removing anything: a namespace package's
            # path consults its parent and sys.path.
            self._doomed = self._decide(saved)
        for key, module in self._doomed.items():
            if sys.modules.get(key) is module:
                sys.modules.pop(key, None)
            _detach(key, module)
        sys.path[:] = saved
        sys.modules.pop(self._mark, None)

    def _decide(self, saved: list[str]) -> dict[str, object]:
        package = os.path.basename(self._root)
        kept_entries = set(saved)
        removed = [e for e in sys.path if type(e) is str and e and e not in kept_entries]
        doomed: dict[str, object] = {}
        for key in self.added():
            module = sys.modules.get(key)
            if (
                key == package
                or key.startswith(package + ".")
                or _inside(module, self._root)
                or any(_through(module, entry, saved) for entry in removed)
            ):
                doomed[key] = module
        return doomed


def _detach(key: str, module: object) -> None:
    """Remove ``module`` from its parent package's attributes, if it is still there."""
    parent_name, _, child = key.rpartition(".")
    parent = sys.modules.get(parent_name) if parent_name else None
    if parent is None:
        return

    def detach() -> None:
        if getattr(parent, child, None) is module:
            delattr(parent, child)

    _quietly(None, detach)


def _places(module: object) -> list[str]:
    places: list[str] = []
    file = _str_attr(module, "__file__")
    if file is not None:
        places.append(file)
    spec = _quietly(None, getattr, module, "__spec__", None)
    search = _quietly(None, getattr, spec, "submodule_search_locations", None)
    if search is not None:
        places.extend(_strings(search))
    return places


def _under(place: str, directory: str) -> bool:
    return place == directory or place.startswith(directory.rstrip(os.sep) + os.sep)


def _inside(module: object, root: str) -> bool:
    return any(_under(place, root) for place in _places(module))


def _through(module: object, entry: str, remaining: Sequence[str]) -> bool:
    """Whether ``module`` was imported through the path ``entry`` (which undo removes).

    Its files lie under ``entry`` and under no remaining ``sys.path`` entry
    that is more specific (a virtual environment inside the project), and
    none is part of the interpreter's own library or site-packages.
    """
    places = _places(module)
    if not places or not all(_under(place, entry) for place in places):
        return False
    deeper = [e for e in remaining if type(e) is str and e != entry and _under(e, entry)]
    protected = _library_dirs()
    return not any(_under(p, d) for p in places for d in (*deeper, *protected))


_library: list[str] = []


def _library_dirs() -> list[str]:
    """Return the standard library and site-packages directories, which undo never empties."""
    if not _library:
        import sysconfig  # noqa: PLC0415 - only when an undo needs it

        paths = sysconfig.get_paths()
        keys = ("stdlib", "platstdlib", "purelib", "platlib")
        _library.extend(sorted({paths[key] for key in keys if key in paths}))
    return _library


def put_first_on_sys_path(entry: str) -> None:
    """Make ``entry`` the first item of ``sys.path``, present exactly once."""
    if sys.path and sys.path[0] == entry:
        return
    while entry in sys.path:
        sys.path.remove(entry)
    sys.path.insert(0, entry)


def forget_path_entry(entry: str) -> None:
    """Remove ``entry`` from ``sys.path`` and drop the cached finders of it and below it.

    For a long-lived process that loads benches from many roots: the finders
    cache directory listings, and they would outlive the entry.
    """
    while entry in sys.path:
        sys.path.remove(entry)
    for key in [k for k in list(sys.path_importer_cache) if type(k) is str and _under(k, entry)]:
        sys.path_importer_cache.pop(key, None)


def is_prefix_of(prefix: object, module_name: str) -> bool:
    """Return whether ``prefix`` is ``module_name`` or one of its parent packages."""
    return type(prefix) is str and (prefix == module_name or module_name.startswith(prefix + "."))


def is_not_found(exc: BaseException, module_name: str) -> bool:
    """Return whether ``exc`` says that ``module_name`` itself (or a parent package) was not found.

    That is a ``ModuleNotFoundError`` naming the module or one of its packages;
    a missing module that the registration imports is not (its ``name`` is
    another module). Never raises because of ``exc``.
    """
    return issubclass(type(exc), ModuleNotFoundError) and is_prefix_of(
        _quietly(None, getattr, exc, "name", None), module_name
    )


def same_file(module: object, expected: str) -> bool:
    """Return whether ``module`` was loaded from ``expected`` (symlinks resolved)."""
    file = _str_attr(module, "__file__")
    if file is None:
        return False
    return _same_path(file, expected)


def module_file(module: object) -> str | None:
    """Return ``module.__file__`` when it is a string; never raises because of ``module``."""
    return _str_attr(module, "__file__")


def shadow_file(module_name: str) -> Path | None:
    """Return the file of the deepest package of ``module_name`` that did import."""
    parts = module_name.split(".")
    for end in range(len(parts), 0, -1):
        file = _str_attr(sys.modules.get(".".join(parts[:end])), "__file__")
        if file is not None:
            return Path(file)
    return None


def failure_line(exc: BaseException, source: Path) -> int | None:
    """Return the line of ``source`` where ``exc`` was raised, if it was raised there.

    Never raises because of ``exc`` (a hostile ``SyntaxError`` subclass, an
    odd traceback): ``None`` then.
    """
    return _quietly(None, _failure_line, exc, source)


def _failure_line(exc: BaseException, source: Path) -> int | None:
    wanted = source.resolve()
    if issubclass(type(exc), SyntaxError):
        filename = _str_attr(exc, "filename")
        lineno = _quietly(None, getattr, exc, "lineno", None)
        if filename is None or type(lineno) is not int:
            return None
        return lineno if Path(filename).resolve() == wanted else None
    line = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if Path(frame.f_code.co_filename).resolve() == wanted:
            line = lineno
    return line


def import_fresh(module_name: str) -> types.ModuleType:
    """Import ``module_name``, retrying once with fresh finder caches if it is not found.

    The caller has checked that the file exists, so a "not found" may come from
    directory caches that predate it (a package created after an earlier import).
    """
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if not is_not_found(exc, module_name):
            raise
    importlib.invalidate_caches()
    return importlib.import_module(module_name)
