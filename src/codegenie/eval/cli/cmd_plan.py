"""``codegenie-bench plan [SLUG…]``: resolve task classes into a run plan, as ``Runner.plan``."""

from __future__ import annotations

import argparse
from collections.abc import Coroutine, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from codegenie.eval.cli._base import Command, Output, columns, load_manifest

if TYPE_CHECKING:
    from codegenie.eval.models import TaskClass

__all__ = ("COMMAND",)

_T = TypeVar("_T")


def _drive(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coroutine`` to completion without an event loop; return its result.

    ``Runner.plan`` awaits nothing but its own bare ``yield`` between slugs
    (``runner._yield_to_loop``: asyncio's "sleep 0"), so sending ``None`` back
    until it returns runs it exactly as ``asyncio.run`` would — minus the
    ~35 ms that importing ``asyncio`` costs this command, a quarter of its
    floor. Anything else yielded would be a future this driver cannot wait
    for: that is a bug, reported as such (the coroutine is closed first).
    """
    try:
        while True:
            yielded = coroutine.send(None)
            if yielded is not None:
                coroutine.close()
                msg = f"plan awaited {type(yielded).__name__}, which needs an event loop"
                raise RuntimeError(msg)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


def _rows(task_classes: Iterable[TaskClass]) -> str:
    from codegenie.eval.problems import display_path  # noqa: PLC0415 - start-up: only this command pays for it

    return columns(
        [(tc.name, tc.module, display_path(tc.source) if tc.source else "") for tc in task_classes]
    )


def run(args: argparse.Namespace, out: Output) -> int:
    """Resolve the slugs (default: every declared one); print the plan.

    When some fail, the ones that resolved are printed, then the
    ``RunPlanError`` is raised for :func:`~codegenie.eval.cli._app.fail` to
    report every failing slug.
    """
    from codegenie.eval.errors import RunPlanError  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval.registry import TaskClassRegistry  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval.runner import Runner  # noqa: PLC0415 - start-up: only this command pays for it

    manifest = load_manifest(args, out)
    runner = Runner(manifest, registry=TaskClassRegistry())
    try:
        plan = _drive(runner.plan(args.slugs or None))
    except RunPlanError as error:
        if not out.json and error.resolved:
            out.result({}, _rows(error.resolved))
        raise
    # The plan's own JSON form, so RunPlan.model_dump_json() is what this prints.
    out.result(plan.model_dump(mode="json"), _rows(plan.task_classes))
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
