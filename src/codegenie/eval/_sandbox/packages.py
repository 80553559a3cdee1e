"""What an interpreter's site-packages hold: the part of a run's key that names its packages.

A rubric imports from the interpreter that runs it, so a stored verdict is
only the verdict of a new run while that interpreter's packages are the
same. :func:`installed` describes them, once per command, as a document
(:class:`Installed`): for each site-packages directory, the names of the
distributions installed there (``ray-2.9.0.dist-info``: names and
versions) and the text of each ``.pth`` file; and the *sources* that
editable installs put on the path — a directory a ``.pth`` file names, a
package or module a setuptools editable finder maps — by the content of
every module file in them. Installing, removing or upgrading a
distribution, editing a ``.pth`` file, and editing a module of an editable
install in place (no installer involved) each change the digest; the
files of a distribution installed normally are not read (an installer
changes its ``dist-info``; reading every installed file on every command
would cost a quarter of a second here, the standard library more than a
second: see ``docs/performance.md``).

:func:`changes` says, in words, what differs between two documents
(``ray 2.9.0 added``), so that a command can say why stored results were
not reused.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib.machinery
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, final

from codegenie.eval._tree import Entry, TreeBeyondBounds, TreeBounds, Walk

__all__ = ("UNKEYED", "Installed", "changes", "installed")

#: The digest of packages whose editable sources could not be read whole: no run is keyed.
UNKEYED: Final = "unkeyed"
# What, in a site-packages directory, says which distributions are installed.
_INSTALLED: Final = (".dist-info", ".egg-info", ".egg-link", ".pth")
_DISTRIBUTIONS: Final = (".dist-info", ".egg-info")
# The most of a .pth file or an editable finder read.
_TEXT_LIMIT: Final = 64 * 1024
# The files of an editable source the digest reads: what the import system loads.
_MODULES: Final = tuple(importlib.machinery.all_suffixes())
# Bounds of one editable source: a source tree, not a home directory.
_SOURCE_BOUNDS: Final = TreeBounds(entries=100_000, bytes=256 * 1024 * 1024, depth=64)
# The most changes named in one sentence; the rest are counted.
_NAMED: Final = 3


@final
@dataclass(frozen=True, slots=True)
class Installed:
    """The packages of one interpreter: ``document`` (JSON text) and its ``digest``.

    ``digest`` is :data:`UNKEYED` when an editable source could not be read
    whole (beyond its bounds, unreadable): such an interpreter's runs have no
    key, and nothing is stored or served for them.
    """

    document: str
    digest: str

    def parsed(self) -> dict[str, Any]:
        """Return :attr:`document` as a mapping."""
        value: dict[str, Any] = json.loads(self.document)
        return value


def installed(directories: Iterable[str]) -> Installed:
    """Describe what the site-packages ``directories`` hold (see the module)."""
    sites: list[dict[str, Any]] = []
    sources: dict[str, str | None] = {}
    seen: set[str] = set()
    todo = [os.path.abspath(d) for d in directories]
    while todo:
        directory = todo.pop(0)
        if directory in seen:
            continue
        seen.add(directory)
        site, named = _site(directory)
        if site is None:
            continue
        sites.append(site)
        for path in named:
            if path in seen or path in sources:
                continue
            if _holds_distributions(path):  # another site directory, not a source tree
                todo.append(path)
            else:
                sources[path] = _source_digest(path)
    document = json.dumps({"sites": sites, "sources": sources}, sort_keys=True)
    if any(digest is None for digest in sources.values()):
        return Installed(document, UNKEYED)
    digest = hashlib.blake2b(document.encode("utf-8", "surrogateescape"), digest_size=16)
    return Installed(document, digest.hexdigest())


def _site(directory: str) -> tuple[dict[str, Any] | None, list[str]]:
    """Return one site directory's part of the document, and the paths its files put on the path."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return None, []
    entries = [name for name in names if name.endswith(_INSTALLED)]
    texts: dict[str, str] = {}
    named: list[str] = []
    for name in names:
        if name.endswith(".pth"):
            text = _read_text(os.path.join(directory, name))
            texts[name] = hashlib.blake2b(text.encode("utf-8", "surrogateescape")).hexdigest()
            named += _pth_paths(directory, text)
        elif name.startswith("__editable__") and name.endswith("_finder.py"):
            text = _read_text(os.path.join(directory, name))
            texts[name] = hashlib.blake2b(text.encode("utf-8", "surrogateescape")).hexdigest()
            named += _finder_paths(text)
    return {"path": directory, "entries": entries, "files": texts}, named


def _read_text(path: str) -> str:
    with contextlib.suppress(OSError), open(path, "rb") as file:
        return file.read(_TEXT_LIMIT).decode("utf-8", "surrogateescape")
    return ""


def _pth_paths(directory: str, text: str) -> list[str]:
    """Return the existing directories the lines of a ``.pth`` file add to the path, as ``site``."""
    found: list[str] = []
    for line in text.splitlines():
        line = line.rstrip()  # noqa: PLW2901 - the line as site reads it
        if not line or line.startswith(("#", "import ", "import\t")):
            continue
        path = os.path.abspath(os.path.join(directory, line))
        if os.path.isdir(path):
            found.append(path)
    return found


def _finder_paths(text: str) -> list[str]:
    """Return the paths a setuptools editable finder maps module names to (its ``MAPPING``)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    for node in tree.body:
        target: ast.expr | None = None
        value: ast.expr | None = None
        if isinstance(node, ast.AnnAssign):
            target, value = node.target, node.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        if isinstance(target, ast.Name) and target.id == "MAPPING" and value is not None:
            with contextlib.suppress(ValueError, TypeError, SyntaxError, MemoryError):
                mapping = ast.literal_eval(value)
                if isinstance(mapping, dict):
                    return sorted(
                        os.path.abspath(p) for p in mapping.values() if isinstance(p, str)
                    )
    return []


def _holds_distributions(path: str) -> bool:
    try:
        return any(name.endswith(_DISTRIBUTIONS) for name in os.listdir(path))
    except OSError:
        return False


def _source_digest(path: str) -> str | None:
    """Return the digest of an editable source's module files; ``None`` when not read whole."""
    digest = hashlib.blake2b(digest_size=16)
    if os.path.isfile(path):
        try:
            with open(path, "rb") as file:
                digest.update(file.read())
        except OSError:
            return None
        return digest.hexdigest()

    def skip(entry: Entry) -> bool:
        return entry.name == "__pycache__" or entry.name.startswith(".")

    try:
        with Walk(path, skip=skip, bounds=_SOURCE_BOUNDS) as walk:
            for entry in walk:
                if entry.kind != "file" or not entry.name.endswith(_MODULES):
                    continue
                digest.update(f"{entry.relative!r}\n".encode("utf-8", "surrogateescape"))
                with entry.open() as opened:
                    for chunk in opened.chunks():
                        digest.update(chunk)
    except FileNotFoundError:
        return "missing"
    except (OSError, TreeBeyondBounds):
        return None
    return digest.hexdigest()


def _versions(document: Mapping[str, Any]) -> dict[str, str]:
    """Return each distribution's version by its name, from a document's site entries."""
    found: dict[str, str] = {}
    for site in document.get("sites", ()):
        for entry in site.get("entries", ()):
            if not isinstance(entry, str) or entry.endswith(".pth"):
                continue
            stem, _, suffix = entry.rpartition(".")
            if suffix == "egg-link":
                found.setdefault(stem, "(editable)")
                continue
            name, _, rest = stem.partition("-")
            version = rest.split("-", 1)[0] if suffix == "egg-info" else rest
            found.setdefault(name.lower().replace("-", "_"), version)
    return found


def _files(document: Mapping[str, Any]) -> dict[str, str]:
    return {
        name: digest
        for site in document.get("sites", ())
        for name, digest in dict(site.get("files", {})).items()
    }


def changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Return what differs from ``before`` to ``after`` (two documents), in words, at most a few.

    ``ray 2.9.0 added``, ``numpy 1.26.4 removed``, ``requests 2.31.0 to
    2.32.0``, ``x.pth changed``, ``the editable source /src/pkg changed``,
    ``python 3.11.4 to 3.11.7``; beyond :data:`_NAMED` of them, ``and N
    more``. Empty when nothing in them differs.
    """
    said: list[str] = []
    if before.get("python") != after.get("python"):
        said.append(f"python {_first_word(before)} to {_first_word(after)}")
    old, new = _versions(before), _versions(after)
    for name in sorted(old.keys() | new.keys()):
        if name not in old:
            said.append(f"{name} {new[name]} added")
        elif name not in new:
            said.append(f"{name} {old[name]} removed")
        elif old[name] != new[name]:
            said.append(f"{name} {old[name]} to {new[name]}")
    old_files, new_files = _files(before), _files(after)
    for name in sorted(old_files.keys() | new_files.keys()):
        if old_files.get(name) != new_files.get(name):
            what = "added" if name not in old_files else "removed" if name not in new_files else ""
            said.append(f"{name} {what or 'changed'}")
    old_sources, new_sources = dict(before.get("sources", {})), dict(after.get("sources", {}))
    for path in sorted(old_sources.keys() | new_sources.keys()):
        if old_sources.get(path) != new_sources.get(path):
            said.append(f"the editable source {path} changed")
    if before.get("environment") != after.get("environment"):
        said.append("the task class's environment changed")
    if not said and before != after:
        said.append("the site-packages directories moved")
    return _bounded(said)


def _first_word(document: Mapping[str, Any]) -> str:
    python = document.get("python")
    return python.split()[0] if isinstance(python, str) and python.split() else "?"


def _bounded(said: Sequence[str]) -> list[str]:
    if len(said) <= _NAMED:
        return list(said)
    return [*said[:_NAMED], f"and {len(said) - _NAMED} more"]
