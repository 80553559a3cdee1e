"""``codegenie-bench list``: the declared task classes; imports no task class."""

from __future__ import annotations

import argparse
from pathlib import Path

from codegenie.eval._output import escape_control
from codegenie.eval.cli._base import Command, Output

__all__ = ("COMMAND",)


def run(args: argparse.Namespace, out: Output) -> int:
    """Print slug, module and root of every entry; validated entries come from the cache."""
    from codegenie.eval import _listing  # noqa: PLC0415
    from codegenie.eval.manifest import (  # noqa: PLC0415
        BenchManifest,
        find_manifest,
        read_manifest_bytes,
    )
    from codegenie.eval.problems import display_path  # noqa: PLC0415

    path = (args.manifest or find_manifest(Path.cwd())).absolute()
    data = read_manifest_bytes(path)
    listing = None if args.no_cache else _listing.read_cached(data)
    if listing is None:
        manifest = BenchManifest.from_bytes(data, path)
        listing = (
            list(manifest.slugs()),
            [entry.module for _, entry in manifest],
            [entry.root for _, entry in manifest],
        )
        if not args.no_cache:
            _listing.store(data, listing)
    if out.json:
        out.stdout.write(_listing.render_json(str(path), listing))
    else:
        slugs, modules, roots = ([escape_control(cell) for cell in column] for column in listing)
        out.stdout.write(_listing.render_text((slugs, modules, roots)))
    if not listing[0]:
        out.note(f"{display_path(path)}: no task classes declared")
    return 0


COMMAND = Command(
    name="list",
    summary="List the task classes declared in bench.toml; imports no task class.",
    examples="""\
examples:
  codegenie-bench list
  codegenie-bench list --format json --manifest path/to/bench.toml
""",
    run=run,
)
