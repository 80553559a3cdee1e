"""``codegenie-bench plan [SLUG…]``: resolve task classes into a run plan, as ``Runner.plan``."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from typing import TYPE_CHECKING

from codegenie.eval.cli._base import Command, Output, columns, load_manifest

if TYPE_CHECKING:
    from codegenie.eval.models import TaskClass

__all__ = ("COMMAND",)


def _rows(task_classes: Iterable[TaskClass]) -> str:
    from codegenie.eval.problems import display_path  # noqa: PLC0415

    return columns(
        [(tc.name, tc.module, display_path(tc.source) if tc.source else "") for tc in task_classes]
    )


def run(args: argparse.Namespace, out: Output) -> int:
    """Resolve the slugs (default: every declared one); print the plan.

    When some fail, the ones that resolved are printed, then the
    ``RunPlanError`` is raised for :func:`~codegenie.eval.cli._app.fail` to
    report every failing slug.
    """
    import asyncio  # noqa: PLC0415

    from codegenie.eval.errors import RunPlanError  # noqa: PLC0415
    from codegenie.eval.registry import TaskClassRegistry  # noqa: PLC0415
    from codegenie.eval.runner import Runner  # noqa: PLC0415

    manifest = load_manifest(args, out)
    runner = Runner(manifest, registry=TaskClassRegistry())
    try:
        plan = asyncio.run(runner.plan(args.slugs or None))
    except RunPlanError as error:
        if not out.json and error.resolved:
            out.result({}, _rows(error.resolved))
        raise
    out.result(plan.to_json(), _rows(plan.task_classes))
    return 0


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the slugs argument."""
    parser.add_argument("slugs", nargs="*", metavar="SLUG", help="default: every declared one")


COMMAND = Command(
    name="plan",
    summary="Resolve task classes into a run plan, as Runner.plan does.",
    examples="""\
examples:
  codegenie-bench plan                      every task class, in manifest order
  codegenie-bench plan vuln-remediation migration-chainguard-distroless --format json
""",
    run=run,
    configure=configure,
    imports_registrations=True,
)
