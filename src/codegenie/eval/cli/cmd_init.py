"""``codegenie-bench init``: start a bench from nothing."""

from __future__ import annotations

import argparse
from pathlib import Path

from codegenie.eval._output import escape_control
from codegenie.eval.cli._base import PROG, Command, Output

__all__ = ("COMMAND",)


def run(args: argparse.Namespace, out: Output) -> int:
    """Create ``bench.toml``, its root directory, the schema editors use, and a ``.gitignore``."""
    from codegenie.eval.problems import display_path  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval.scaffold import init_bench  # noqa: PLC0415 - start-up: only this command pays for it

    manifest = args.manifest if args.manifest is not None else Path.cwd() / "bench.toml"
    created = init_bench(manifest.absolute())
    document = {
        "manifest": str(created.manifest),
        "root": str(created.root),
        "schema": str(created.schema),
        "created": [str(path) for path in created.created],
    }
    text = "\n".join(
        escape_control(display_path(path)) + ("/" if path.is_dir() else "")
        for path in created.created
    )
    out.result(document, text)
    if created.gitignore not in created.created:
        shown = display_path(created.gitignore)
        out.note(f"{shown}: kept as it is (init writes one only where there is none)")
    out.note(f"next: {PROG} new SLUG adds a task class")
    return 0


COMMAND = Command(
    name="init",
    summary=(
        "Start a bench here: bench.toml, bench/, the schema editors use"
        " and, where there is none, a .gitignore."
    ),
    examples="""\
examples:
  codegenie-bench init
  codegenie-bench init --manifest path/to/bench.toml
""",
    run=run,
)
