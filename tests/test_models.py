"""TaskClass and RunPlan serialise: a class as ``module:qualname``; a plan as `plan` prints it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from codegenie.eval import BenchManifest, Runner, TaskClass, TaskClassRegistry
from codegenie.eval.cases import Case
from codegenie.eval.models import class_path

from .factory import make_bench


class Outer:
    """A class with a nested class, for qualified names."""

    class Inner:
        """The nested class."""


def _task_class(cls: type[object]) -> TaskClass:
    return TaskClass(
        name="foo",
        module="bench.foo.registration",
        source=Path("/r/bench/foo/registration.py"),
        description="A task class.",
        rubric=Path("/r/bench/foo/rubric.py"),
        cases=Path("/r/bench/foo/cases"),
        cls=cls,
    )


def test_task_class_dumps_to_json_with_the_class_as_module_and_qualname() -> None:
    """TaskClass.model_dump_json() works and names the class as module:qualname."""
    document = json.loads(_task_class(Outer.Inner).model_dump_json())
    assert document == {
        "name": "foo",
        "module": "bench.foo.registration",
        "source": "/r/bench/foo/registration.py",
        "description": "A task class.",
        "rubric": "/r/bench/foo/rubric.py",
        "cases": "/r/bench/foo/cases",
        "cls": f"{__name__}:Outer.Inner",
        "case_model": None,
        "over_limit": "error",
    }


def test_case_model_dumps_as_module_and_qualname_too() -> None:
    """TaskClass.case_model is written as module:qualname in JSON, the class in Python mode."""
    task_class = _task_class(Outer).model_copy(update={"case_model": Case})
    assert json.loads(task_class.model_dump_json())["case_model"] == "codegenie.eval.cases:Case"
    assert task_class.model_dump()["case_model"] is Case


def test_python_dump_keeps_the_class_object() -> None:
    """model_dump() in Python mode still hands back the class itself."""
    assert _task_class(Outer).model_dump()["cls"] is Outer
    assert _task_class(Outer).model_dump(mode="json")["cls"] == f"{__name__}:Outer"


def test_class_path_survives_a_class_body_that_sets_module_to_a_non_string() -> None:
    """A class whose __module__ is not a str is still named, with '?' for the module."""
    odd = type("Odd", (), {"__module__": 3})
    assert class_path(odd) == "?:Odd"
    assert json.loads(_task_class(odd).model_dump_json())["cls"] == "?:Odd"


def test_run_plan_dumps_to_the_plan_document(tmp_path: Path) -> None:
    """RunPlan.model_dump_json() is the plan document: each task class as `show` prints it, with its case ids."""
    bench = make_bench(tmp_path, "aa", "bb", parts=True)
    runner = Runner(BenchManifest.load(bench.manifest), registry=TaskClassRegistry())
    plan = asyncio.run(runner.plan())
    document = json.loads(plan.model_dump_json())
    assert document["manifest"] == str(bench.manifest.absolute())
    assert [tc["slug"] for tc in document["task_classes"]] == ["aa", "bb"]
    assert [tc["case_ids"] for tc in document["task_classes"]] == [["example"], ["example"]]
    for entry in document["task_classes"]:
        assert set(entry) == {
            "slug",
            "module",
            "source",
            "description",
            "rubric",
            "cases",
            "reads_expected",
            "case_ids",
            "environment",
        }
        assert entry["environment"] is None  # none declared: the harness's interpreter
        assert entry["reads_expected"] is False  # not declared: no run sees expected/
    assert plan.model_dump(mode="json") == document == plan.to_json()
    assert plan.model_dump()["manifest"] == bench.manifest.absolute()


def test_a_task_class_that_asks_for_no_warm_worker_says_so_in_its_dump() -> None:
    """warm=False is in the dumps (JSON and Python); the default True is in neither."""
    plain = _task_class(Outer).model_copy(update={"warm": False})
    assert json.loads(plain.model_dump_json())["warm"] is False
    assert plain.model_dump()["warm"] is False
    assert "warm" not in _task_class(Outer).model_dump()
