"""Importing a registration so that it can be undone: shared by the loader and check's workers.

``ImportScope`` records the state of ``sys.modules`` and ``sys.path`` before an
import and can put it back. ``sys.modules`` keeps insertion order, so a fresh
marker module placed at its end separates what an import adds from what was
there before, without copying a mapping that can hold tens of thousands of
entries.

Undoing removes the modules that came from the bench root or took its
package's name (the task-class packages, the root's namespace package, a
shadowing ``bench`` package, rubrics, helpers) and leaves modules
from elsewhere — the standard library, installed packages — that the import
loaded along the way: they were imported whole, they hold no registration of
the bench, and a C extension removed from ``sys.modules`` often cannot be
imported a second time in the same process.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
import types
from itertools import count
from pathlib import Path
from typing import Final, final

__all__ = (
    "ImportScope",
    "failure_line",
    "import_fresh",
    "is_prefix_of",
    "put_first_on_sys_path",
    "same_file",
    "shadow_file",
)

_marks: Final = count()


@final
class ImportScope:
    """What one import adds to ``sys.modules`` and changes in ``sys.path``.

    Call :meth:`open` before importing, then :meth:`keep` to accept the result
    or :meth:`undo` to remove every module the import added (and its attribute
    on a parent package that stays) and restore ``sys.path``.
    """

    def __init__(self, root: str) -> None:
        self._root = root
        self._saved_path: list[str] = []
        self._mark = f"codegenie.eval._import_mark_{next(_marks)}"

    def open(self, path_entry: str) -> None:
        """Record the current state, then put ``path_entry`` first on ``sys.path``."""
        self._saved_path = list(sys.path)
        sys.modules[self._mark] = types.ModuleType(self._mark)
        put_first_on_sys_path(path_entry)

    def added(self) -> list[str]:
        """Return the names of the modules added since :meth:`open`, newest first."""
        names = []
        for key in reversed(sys.modules):
            if key == self._mark:
                break
            names.append(key)
        return names

    def keep(self) -> None:
        """Accept what the import did."""
        sys.modules.pop(self._mark, None)

    def undo(self) -> None:
        """Remove the modules the import added from the root, and restore ``sys.path``."""
        # Decide before removing: a namespace package's path consults its parent.
        package = os.path.basename(self._root)
        doomed = [
            key
            for key in self.added()
            if key == package
            or key.startswith(package + ".")
            or _inside(sys.modules.get(key), self._root)
        ]
        for key in doomed:
            removed = sys.modules.pop(key, None)
            parent_name, _, child = key.rpartition(".")
            parent = sys.modules.get(parent_name) if parent_name else None
            if parent is not None and getattr(parent, child, None) is removed:
                delattr(parent, child)
        sys.modules.pop(self._mark, None)
        sys.path[:] = self._saved_path


def _inside(module: types.ModuleType | None, root: str) -> bool:
    places: list[str] = []
    file = getattr(module, "__file__", None)
    if isinstance(file, str):
        places.append(file)
    spec = getattr(module, "__spec__", None)
    search = getattr(spec, "submodule_search_locations", None)
    if search is not None:
        places.extend(str(place) for place in search)
    prefix = root + os.sep
    return any(place == root or place.startswith(prefix) for place in places)


def put_first_on_sys_path(entry: str) -> None:
    """Make ``entry`` the first item of ``sys.path``, present exactly once."""
    if sys.path and sys.path[0] == entry:
        return
    while entry in sys.path:
        sys.path.remove(entry)
    sys.path.insert(0, entry)


def is_prefix_of(prefix: str | None, module_name: str) -> bool:
    """Return whether ``prefix`` is ``module_name`` or one of its parent packages."""
    return prefix is not None and (prefix == module_name or module_name.startswith(prefix + "."))


def same_file(module: types.ModuleType | None, expected: str) -> bool:
    """Return whether ``module`` was loaded from ``expected`` (symlinks resolved)."""
    file: object = getattr(module, "__file__", None)
    if not isinstance(file, str):
        return False
    return file == expected or os.path.realpath(file) == os.path.realpath(expected)


def shadow_file(module_name: str) -> Path | None:
    """Return the file of the deepest package of ``module_name`` that did import."""
    parts = module_name.split(".")
    for end in range(len(parts), 0, -1):
        found = sys.modules.get(".".join(parts[:end]))
        file = getattr(found, "__file__", None)
        if file is not None:
            return Path(file)
    return None


def failure_line(exc: BaseException, source: Path) -> int | None:
    """Return the line of ``source`` where ``exc`` was raised, if it was raised there."""
    wanted = source.resolve()
    if isinstance(exc, SyntaxError) and exc.filename is not None:
        return exc.lineno if Path(exc.filename).resolve() == wanted else None
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
        if not is_prefix_of(exc.name, module_name):
            raise
    importlib.invalidate_caches()
    return importlib.import_module(module_name)
