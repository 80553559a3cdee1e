"""One run plan, one JSON document: RunPlan's own and `codegenie-bench plan --format json`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from codegenie.eval import BenchManifest, Runner, TaskClassRegistry

from .factory import make_bench
from .test_cli import assert_shape, run


@pytest.mark.parametrize(
    "slugs",
    [None, ["gamma", "alpha"], ["beta"]],
    ids=["every-slug", "chosen-order", "one-without-cases"],
)
def test_model_dump_json_is_the_plan_command_document(
    tmp_path: Path, slugs: list[str] | None
) -> None:
    """RunPlan.model_dump_json() equals what `plan --format json` prints for the same bench and slugs."""
    bench = make_bench(tmp_path, "alpha", "gamma", parts=True)
    bench.add("beta", parts=False)  # no cases/: an empty case_ids list, no rubric file
    runner = Runner(BenchManifest.load(bench.manifest), registry=TaskClassRegistry())
    model: dict[str, Any] = json.loads(asyncio.run(runner.plan(slugs)).model_dump_json())

    printed = run("plan", *(slugs or []), "--format", "json", cwd=tmp_path)

    assert printed.returncode == 0, printed.stderr
    command: dict[str, Any] = json.loads(printed.stdout)
    assert model == command
    assert_shape(model, "plan")
    assert [tc["slug"] for tc in model["task_classes"]] == (slugs or ["alpha", "gamma", "beta"])
