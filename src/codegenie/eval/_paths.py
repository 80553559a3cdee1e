"""Where things are: the manifest (discovery) and the user cache directory.

Kept free of heavy imports (no pathlib, no pydantic): the cached ``list``
path runs on it before anything else is imported.
"""

from __future__ import annotations

import os

__all__ = ("MANIFEST_NAME", "absolute", "cache_dir", "find_manifest_path")

MANIFEST_NAME = "bench.toml"


def absolute(path: str) -> str:
    """Return ``path`` made absolute against the working directory, as ``Path.absolute`` does."""
    joined = path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
    # Path.absolute() drops empty and "." components but keeps "..".
    parts = [part for part in joined.split("/") if part not in {"", "."}]
    return "/" + "/".join(parts)


def find_manifest_path(start: str) -> tuple[str, str | None]:
    """Look for ``bench.toml`` in ``start`` and its parents.

    Returns ``(first_place_looked, found)``, ``found`` being ``None`` when
    there is no manifest.
    """
    directory = absolute(start)
    first = os.path.join(directory, MANIFEST_NAME)
    while True:
        candidate = os.path.join(directory, MANIFEST_NAME)
        if os.path.isfile(candidate):
            return first, candidate
        parent = os.path.dirname(directory)
        if parent == directory:
            return first, None
        directory = parent


def cache_dir() -> str:
    """Return this tool's directory in the user cache: ``$XDG_CACHE_HOME``, else ``~/.cache``."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # the XDG spec: ignore a relative value
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "codegenie-eval")
