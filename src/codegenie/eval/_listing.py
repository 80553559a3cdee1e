"""``codegenie-bench list``: its output, and the cache that makes a repeat run cheap.

Listing a large manifest is dominated by reading and validating it. The
validated entries are therefore cached under the user cache directory
(``$XDG_CACHE_HOME/codegenie-eval/manifests/``), keyed on the SHA-256 of the
manifest's bytes — never on its modification time — and on this package's
version. :func:`fast_list` serves a plain ``list`` straight from that cache
with nothing heavier than ``hashlib`` imported; on any doubt (no cache entry,
a corrupt, truncated or foreign one, an unusual command line) it returns
``None`` and the full command line runs, validates the manifest and writes
the cache. A cache that cannot be written is ignored.

This module imports only the standard library's lightest modules: it runs
before the rest of the package on the cached path.
"""

from __future__ import annotations

import hashlib
import os
import sys

from codegenie.eval._paths import absolute, cache_dir, find_manifest_path
from codegenie.eval._version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ("Listing", "fast_list", "read_cached", "render_json", "render_text", "store")

_MAGIC = f"codegenie-eval manifest cache 1 {__version__}"
_KEEP = 32  # cache files kept; older ones are removed when a new one is written

# slugs, modules and roots, in manifest order
Listing = tuple[list[str], list[str], list[str]]


def _entry_file(digest: str) -> str:
    return os.path.join(cache_dir(), "manifests", f"{digest}.cache")


def read_cached(data: bytes) -> Listing | None:
    """Return the cached entries of the manifest whose bytes are ``data``, if valid."""
    digest = hashlib.sha256(data).hexdigest()
    try:
        with open(_entry_file(digest), "rb") as file:
            blob = file.read()
        magic, manifest_digest, payload_digest, payload = blob.split(b"\n", 3)
        if magic.decode() != _MAGIC or manifest_digest.decode() != digest:
            return None
        if hashlib.sha256(payload).hexdigest() != payload_digest.decode():
            return None
        slugs, modules, roots = (part.split("\n") for part in payload.decode().split("\0"))
    except (OSError, ValueError):  # missing, unreadable, truncated, not ours
        return None
    if not slugs[0] or not len(slugs) == len(modules) == len(roots):
        return None
    return slugs, modules, roots


def store(data: bytes, listing: Listing) -> None:
    """Cache the validated entries of the manifest whose bytes are ``data``; never raise."""
    slugs, modules, roots = listing
    if not slugs:
        return
    digest = hashlib.sha256(data).hexdigest()
    payload = "\0".join("\n".join(column) for column in (slugs, modules, roots)).encode()
    header = f"{_MAGIC}\n{digest}\n{hashlib.sha256(payload).hexdigest()}\n".encode()
    target = _entry_file(digest)
    temporary = f"{target}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(temporary, "wb") as file:
            file.write(header + payload)
        os.replace(temporary, target)  # atomic: readers see the old file or the new one
        _prune(os.path.dirname(target))
    except OSError:
        _unlink(temporary)


def _prune(directory: str) -> None:
    entries = [e for e in os.scandir(directory) if e.name.endswith(".cache")]
    if len(entries) <= _KEEP:
        return
    entries.sort(key=lambda entry: entry.stat().st_mtime, reverse=True)
    for entry in entries[_KEEP:]:
        _unlink(entry.path)


def _unlink(path: str) -> None:
    # Not contextlib.suppress: importing contextlib costs this path ~3 ms.
    try:  # noqa: SIM105
        os.unlink(path)
    except OSError:
        pass


def render_text(listing: Listing) -> str:
    """Return the text output: aligned columns slug, module, root."""
    slugs, modules, roots = listing
    if not slugs:
        return ""
    line = f"%-{max(map(len, slugs))}s  %-{max(map(len, modules))}s  %s"
    return "\n".join([line % row for row in zip(slugs, modules, roots, strict=True)]) + "\n"


def render_json(manifest: str, listing: Listing) -> str:
    """Return the JSON output (design section 7)."""
    import json  # noqa: PLC0415 - not on the cheap text path

    slugs, modules, roots = listing
    document = {
        "manifest": manifest,
        "task_classes": [
            {"slug": slug, "module": module, "root": root}
            for slug, module, root in zip(slugs, modules, roots, strict=True)
        ],
    }
    return json.dumps(document, indent=2) + "\n"


def _plain_list_options(argv: Sequence[str]) -> tuple[str | None, str, bool] | None:
    """Parse ``list`` with only --manifest, --format text|json and -q; else ``None``."""
    manifest: str | None = None
    fmt = "text"
    quiet = False
    seen_list = False
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "list" and not seen_list:
            seen_list = True
        elif arg in {"-q", "--quiet"}:
            quiet = True
        elif arg == "--manifest" and args:
            manifest = args.pop(0)
        elif arg.startswith("--manifest="):
            manifest = arg.partition("=")[2]
        elif arg == "--format" and args and args[0] in {"text", "json"}:
            fmt = args.pop(0)
        elif arg in {"--format=text", "--format=json"}:
            fmt = arg.partition("=")[2]
        else:
            return None
    if not seen_list or manifest == "":
        return None
    return manifest, fmt, quiet


def fast_list(argv: Sequence[str]) -> int | None:
    """Serve ``codegenie-bench list`` from the cache; ``None`` when the full CLI must run."""
    options = _plain_list_options(argv)
    if options is None:
        return None
    manifest, fmt, _quiet = options
    if manifest is None:
        _, path = find_manifest_path(".")
        if path is None:
            return None
    else:
        path = absolute(manifest)
    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError:
        return None
    listing = read_cached(data)
    if listing is None:
        return None
    output = render_json(path, listing) if fmt == "json" else render_text(listing)
    sys.stdout.write(output)
    sys.stdout.flush()
    return 0
