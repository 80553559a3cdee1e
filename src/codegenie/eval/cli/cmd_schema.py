"""``codegenie-bench schema``: the JSON Schema of ``bench.toml``."""

from __future__ import annotations

import argparse

from codegenie.eval.cli._base import Command, Output, dumps

__all__ = ("COMMAND",)


def run(args: argparse.Namespace, out: Output) -> int:
    """Print the schema that editors validate ``bench.toml`` against."""
    from codegenie.eval._manifest.schema import json_schema  # noqa: PLC0415 - start-up: only this command pays for it

    out.stdout.write(dumps(json_schema()))
    return 0


COMMAND = Command(
    name="schema",
    summary="Print the JSON Schema of bench.toml (what editors validate against).",
    examples="""\
examples:
  codegenie-bench schema > docs/bench.schema.json
""",
    run=run,
)
