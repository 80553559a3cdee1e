"""Type-checked, never run: pins the typing of the public API under mypy --strict."""

from __future__ import annotations

from pathlib import Path
from typing import Any, assert_type

from pydantic import BaseModel

from codegenie.eval import TaskClass, TaskClassRegistry, register_task_class
from codegenie.eval.cases import Case, CaseScan, read_cases, scan_cases
from codegenie.eval.errors import BenchCasesInvalid, CaseProblem, EvalError
from codegenie.eval.loader import load_cases, load_task_class
from codegenie.eval.rubrics import RubricResult, RubricStatus, run_rubric


@register_task_class("typed-example")
class Example:
    """The decorator keeps the class type."""

    def method(self) -> int:
        return 1


assert_type(Example, type[Example])
assert_type(Example().method(), int)
assert_type(load_task_class("typed-example", Path("bench")), TaskClass)
assert_type(load_task_class("typed-example", "bench", registry=TaskClassRegistry()), TaskClass)
assert_type(TaskClassRegistry().names(), tuple[str, ...])
assert_type(EvalError.exit_code, int)


class ExampleCase(BaseModel):
    """A case model: the task-specific keys of case.toml."""

    package: str


@register_task_class("typed-cases", case_model=ExampleCase, registry=TaskClassRegistry())
class WithCases:
    """The decorator keeps the class type with a case model too."""


assert_type(WithCases, type[WithCases])
task_class = load_task_class("typed-cases")
assert_type(task_class.case_model, type[BaseModel] | None)
cases = load_cases("typed-cases", Path("bench"), registry=TaskClassRegistry(), manifest=None)
assert_type(cases, tuple[Case, ...])
assert_type(read_cases(task_class), tuple[Case, ...])
assert_type(scan_cases(task_class), CaseScan)
assert_type(scan_cases(task_class).problems, tuple[CaseProblem, ...])
assert_type(BenchCasesInvalid("typed-cases", ()).problems, tuple[CaseProblem, ...])
assert_type(cases[0].data, BaseModel | dict[str, Any])
result = run_rubric(Path("bench/x/rubric.py"), cases[0], "candidates/c1", timeout=5.0)
assert_type(result, RubricResult)
assert_type(result.status, RubricStatus)
assert_type(result.score, float | None)
