"""``codegenie-bench list``: the declared task classes; imports no task class."""

from __future__ import annotations

import argparse

from codegenie.eval._output import escape_control
from codegenie.eval.cli._base import Command, Output, load_manifest

__all__ = ("COMMAND",)


def run(args: argparse.Namespace, out: Output) -> int:
    """Print slug, module and root of every entry; a validated manifest comes from the cache."""
    from codegenie.eval._cache.listing import render_json, render_text  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval.problems import display_path  # noqa: PLC0415 - start-up: only this command pays for it

    out.tree = False  # the manifest only: a problem is described as the manifest says it
    manifest = load_manifest(args, out)
    entries = [entry for _, entry in manifest]
    listing = (
        list(manifest.slugs()),
        [entry.module for entry in entries],
        [entry.root for entry in entries],
    )
    path = manifest.path
    if out.json:
        out.stdout.write(render_json(str(path), listing))
    else:
        slugs, modules, roots = ([escape_control(cell) for cell in column] for column in listing)
        out.stdout.write(render_text((slugs, modules, roots)))
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
