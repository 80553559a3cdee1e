"""``codegenie-bench show SLUG``: resolve one task class and print it."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from codegenie.eval._output import escape_control
from codegenie.eval.cli._base import Command, Output, load_manifest

if TYPE_CHECKING:
    from codegenie.eval.models import TaskClass

__all__ = ("COMMAND", "describe", "document")


def document(task_class: TaskClass, case_ids: Sequence[str]) -> dict[str, Any]:
    """Return ``show``'s JSON: the task class's fields and its ``case_ids``, sorted."""
    return {**task_class.to_json(), "case_ids": list(case_ids)}


def describe(task_class: TaskClass, case_ids: Sequence[str] = ()) -> str:
    """Return ``show``'s text: one ``key: value`` line per field, paths as shown, values escaped.

    ``reference:`` says whether the rubric's runs are given the case's
    ``expected/`` (``reads_expected``). The last line, ``case_ids:``, lists
    the case ids comma-separated, or ``(none)``.
    """
    from codegenie.eval.problems import display_path  # noqa: PLC0415 - start-up: only this command pays for it

    shown = task_class.to_json()
    for key in ("source", "rubric", "cases"):
        if isinstance(shown.get(key), str):
            shown[key] = display_path(shown[key])
    shown["reference"] = (
        "expected/ is given to the rubric (reads_expected)"
        if shown.pop("reads_expected")
        else "expected/ is hidden from every run"
    )
    shown["case_ids"] = ", ".join(case_ids) if case_ids else "(none)"
    width = max(len(key) for key in shown) + 1
    return "\n".join(
        f"{key + ':':<{width}} {escape_control(str(value))}" for key, value in shown.items()
    )


def run(args: argparse.Namespace, out: Output) -> int:
    """Import the slug's registration (through ``load_task_class``) and print its task class.

    Its cases are read as ``plan`` reads them: a task class with an invalid
    case is not printed, and ``BenchCasesInvalid`` (exit 4) lists every problem.
    """
    from codegenie.eval._resolve import resolve  # noqa: PLC0415 - start-up: only this command pays for it
    from codegenie.eval.registry import TaskClassRegistry  # noqa: PLC0415 - start-up: only this command pays for it

    manifest = load_manifest(args, out)
    out.slug = args.slug
    found = resolve(args.slug, manifest, registry=TaskClassRegistry())
    task_class = found.task_class
    case_ids = [case.id for case in found.cases.raise_for_problems()]
    out.result(document(task_class, case_ids), describe(task_class, case_ids))
    return 0


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the slug argument."""
    parser.add_argument("slug", help="the task class, e.g. vuln-remediation")


COMMAND = Command(
    name="show",
    summary="Resolve one task class (import its registration) and print it and its case ids.",
    examples="""\
examples:
  codegenie-bench show vuln-remediation
  codegenie-bench show vuln-remediation --format json
  codegenie-bench show vuln-remediation -v     the registration's traceback, if it raises
""",
    run=run,
    configure=configure,
    imports_registrations=True,
)
