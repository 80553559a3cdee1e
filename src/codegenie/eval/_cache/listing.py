"""``codegenie-bench list``: its output, served from the manifest cache when it can be.

Listing a large manifest is dominated by reading and validating it. The
validated manifest is therefore cached (:mod:`codegenie.eval._cache.entry`,
the one cache of validated manifests, keyed on the BLAKE2b-256 digest of the
manifest's bytes and on this package's version), with ``list``'s text output
ready to print. :func:`fast_list` serves a plain ``list`` straight from that
cache with nothing heavier than the built-in ``_blake2`` imported; on any
doubt (no cache entry, a corrupt, truncated or foreign one, an unusual command
line) it returns ``None`` and the full command line runs, reading the
manifest as every command does (:func:`codegenie.eval._cache.memo.load_manifest_cached`,
which validates it and writes the cache).

This module imports only the standard library's lightest modules: it runs
before the rest of the package on the cached path.
"""

from __future__ import annotations

import os
import sys

from codegenie.eval._cache.entry import Damaged, digest, open_entry
from codegenie.eval._output import readable
from codegenie.eval._paths import FileRefused, absolute, find_manifest_path, read_regular_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

__all__ = ("Listing", "fast_list", "read_cached", "render_json", "render_text")

# slugs, modules and roots, in manifest order
Listing = tuple[list[str], list[str], list[str]]


def read_cached(data: bytes) -> Listing | None:
    """Return the cached entries of the manifest whose bytes are ``data``; ``None`` on any doubt.

    Never raises: a missing, foreign, damaged or unsafe cache is a miss.
    """
    entry = open_entry(digest(data))
    if entry is None:
        return None
    try:
        slugs = entry.slugs()
        records = entry.records()
        modules = [records[slug][0] for slug in slugs]
        roots = [records[slug][1] for slug in slugs]
    except (Damaged, KeyError, UnicodeDecodeError):
        return None
    finally:
        entry.close()
    return list(slugs), modules, roots


def render_text(listing: Listing) -> str:
    """Return the text output: aligned columns slug, module, root."""
    slugs, modules, roots = listing
    if not slugs:
        return ""
    count = len(slugs)
    # map() over str.ljust: ~30% faster than %-formatting each line (13,000 lines: 2.1 ms).
    slug_cells = map(str.ljust, slugs, [max(map(len, slugs))] * count)
    module_cells = map(str.ljust, modules, [max(map(len, modules))] * count)
    return "\n".join(map("  ".join, zip(slug_cells, module_cells, roots, strict=True))) + "\n"


def render_json(manifest: str, listing: Listing) -> str:
    """Return the JSON output: the manifest's path and every entry's slug, module and root."""
    import json  # noqa: PLC0415 - not on the cheap text path

    slugs, modules, roots = listing
    document = {
        "manifest": readable(manifest),  # its path, as text even when the locale is ASCII
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
        data, _ = read_regular_file(path)
    except (OSError, FileRefused):
        return None  # the full command line reports it
    if fmt == "json":
        listing = read_cached(data)
        return None if listing is None else _write(render_json(path, listing))
    entry = open_entry(digest(data))
    if entry is None:
        return None
    try:
        output = entry.text()
    except Damaged:
        return None
    finally:
        entry.close()
    return _write_utf8(output)


def _write_utf8(output: bytes) -> int | None:
    """Print the UTF-8 ``output``; as bytes when ``sys.stdout`` takes them (``LineSafeStream``)."""
    stdout = sys.stdout
    write_utf8 = getattr(stdout, "write_utf8", None)
    if write_utf8 is not None:
        return _print(lambda: write_utf8(output))
    try:
        text = output.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return _write(text)


def _write(output: str) -> int | None:
    """Print ``output``; ``None`` (nothing written) when the full command line must answer."""
    return _print(lambda: sys.stdout.write(output))


def _print(write: Callable[[], object]) -> int | None:
    """Run ``write``, then flush stdout; ``None`` when the full command line must answer."""
    stdout = sys.stdout
    if stdout is None:
        return None  # stdout closed: the full command line decides what that means
    try:
        write()
        stdout.flush()
    except (UnicodeEncodeError, UnicodeDecodeError):
        return None  # nothing written: how to show it in this locale is the CLI's choice
    except BrokenPipeError:
        # The reader stopped (``| head``): end quietly, and let no flush at exit complain.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stdout.fileno())
        os.close(devnull)
    return 0
