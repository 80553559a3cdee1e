"""Type-checked, never run: pins the typing of the public API under mypy --strict."""

from __future__ import annotations

from pathlib import Path
from typing import assert_type

from codegenie.eval import TaskClass, TaskClassRegistry, register_task_class
from codegenie.eval.errors import EvalError
from codegenie.eval.loader import load_task_class


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
