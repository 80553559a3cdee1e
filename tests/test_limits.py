"""One ``Limits`` value: declared once, held by a case, read by ``case.toml``, the workers and the docs."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest
from pydantic import ValidationError

from codegenie.eval._sandbox.limits import DEFAULT_LIMITS, LIMIT_FIELDS, LIMIT_NAMES, Limits
from codegenie.eval.cases import LIMIT_KEYS, Case, _CommonKeys
from codegenie.eval.check._protocol import CaseFound

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_the_names_are_the_fields_as_case_toml_spells_them() -> None:
    assert tuple(name.replace("-", "_") for name in LIMIT_NAMES) == LIMIT_FIELDS
    assert LIMIT_KEYS == LIMIT_NAMES


@pytest.mark.parametrize("name", LIMIT_NAMES)
def test_each_limit_has_a_value_and_a_sentence(name: str) -> None:
    name_ = typing.cast("typing.Any", name)
    assert DEFAULT_LIMITS.value(name_) == getattr(DEFAULT_LIMITS, name.replace("-", "_"))
    assert DEFAULT_LIMITS.describe(name_).endswith(
        ("MiB", "files", " s", "none", str(DEFAULT_LIMITS.value(name_)))
    )


def test_case_toml_schema_defaults_are_the_limits_defaults() -> None:
    """``case.toml``'s schema declares no default of its own: a file without limits has these."""
    assert _CommonKeys().limits() == DEFAULT_LIMITS


def test_the_workers_message_carries_every_limit() -> None:
    assert set(LIMIT_FIELDS) <= set(CaseFound.__annotations__)


@pytest.mark.parametrize("name", LIMIT_NAMES)
def test_the_docs_give_each_limit_its_default(name: str) -> None:
    """The ``case.toml`` table in docs/rubrics.md states each default as ``Limits`` has it."""
    table = (DOCS / "rubrics.md").read_text(encoding="utf-8")
    row = re.search(rf"^\| `{re.escape(name)}` \|[^|]*\| ([^|]+) \|", table, re.MULTILINE)
    assert row is not None, f"docs/rubrics.md has no row for {name}"
    value = DEFAULT_LIMITS.value(typing.cast("typing.Any", name))
    assert row.group(1).strip() == ("none" if value is None else f"`{value:g}`")


def test_a_case_holds_one_limits_value_and_reads_like_before() -> None:
    fields = {"task_class": "t", "id": "c", "directory": Path("/c")}
    case = Case.model_validate({**fields, "memory": 256, "cpu_time": 2.5})
    assert case.limits == Limits(memory=256, cpu_time=2.5)
    assert (case.memory, case.cpu_time, case.processes) == (256, 2.5, DEFAULT_LIMITS.processes)
    given = Case(task_class="t", id="c", directory=Path("/c"), limits=Limits(disk=9))
    assert given.limits == Limits(disk=9)
    assert Case(task_class="t", id="c", directory=Path("/c")).limits is DEFAULT_LIMITS


def test_a_case_round_trips_through_its_dump() -> None:
    case = Case(task_class="t", id="c", directory=Path("/c"), limits=Limits(memory=300, disk=None))
    assert case.to_json()["limits"] == {**DEFAULT_LIMITS.as_dict(), "memory": 300, "disk": None}
    data = case.model_dump()
    data["limits"] = dict(case.limits.as_dict())  # as JSON gives it: a mapping
    again = Case.model_validate(data)
    assert again.limits == case.limits


@pytest.mark.parametrize("bad", [{"memory": 0}, {"processes": -1}, {"disk_files": True}])
def test_a_bad_limit_is_a_validation_error(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Case.model_validate({"task_class": "t", "id": "c", "directory": Path("/c"), **bad})
