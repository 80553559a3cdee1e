"""The check codes: constants of `codegenie.eval.codes`, each defined once, read by every output."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from codegenie.eval import _code_docs, codes, errors
from codegenie.eval.codes import CODES, Code, diagnostic


def test_every_constant_is_in_the_table_under_its_name() -> None:
    """CODES holds exactly the module's Code constants, each under its name, named after it."""
    constants = {name: value for name, value in vars(codes).items() if isinstance(value, Code)}
    assert set(constants) <= set(codes.__all__)
    assert len(CODES) == len(constants)
    for name, code in constants.items():
        assert CODES[code.name] is code
        assert name == code.name.upper().replace("-", "_")
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", code.name)


def test_a_code_is_frozen_and_the_table_read_only() -> None:
    """Nothing can change a code, or add one to the table, once the module is imported."""
    with pytest.raises(dataclasses.FrozenInstanceError):
        codes.GOLDEN_FAILS.name = "renamed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        CODES["new-code"] = codes.GOLDEN_FAILS  # type: ignore[index]


def test_a_diagnostic_carries_its_code_s_name_severity_and_hint() -> None:
    """diagnostic(CODE, ...) prints the code's name; its severity and its hint are the code's."""
    found = diagnostic(codes.TIMEOUT_TIGHT, "slow", "case.toml", 2, 1, slug="aa")
    assert (found.code, found.severity, found.hint) == (
        "timeout-tight",
        "warning",
        codes.TIMEOUT_TIGHT.hint,
    )
    assert diagnostic(codes.GOLDEN_FAILS, "fails", hint="mine").hint == "mine"


def test_the_reference_is_keyed_by_the_same_objects() -> None:
    """Each reference entry holds the code's constant itself: one definition, read by explain."""
    assert [doc.code for doc in _code_docs.DOCS.values()] == list(CODES.values())
    for name, doc in _code_docs.DOCS.items():
        assert doc.code is CODES[name]
        assert doc.to_json()["rubrics_only"] is doc.code.rubrics_only


def test_errors_that_are_check_problems_carry_the_check_code_s_name() -> None:
    """An error whose problem check also reports says it with the same code.

    ``errors`` sits beneath ``codes`` (it imports nothing of the package), so
    these errors spell the name; this holds the spelling to the constant.
    """
    assert errors.BenchRootOutsideManifest.code == codes.ROOT_OUTSIDE.name
    assert errors.BenchCasesInvalid.code == codes.CASE_INVALID.name
    assert errors.RubricMissing.code == codes.RUBRIC_MISSING.name
    assert errors.PythonUnavailable.code == codes.PYTHON_UNAVAILABLE.name
    for kind, code in [
        ("layout", codes.CASE_LAYOUT),
        ("syntax", codes.CASE_INVALID),
        ("schema", codes.CASE_INVALID),
    ]:
        problem = errors.CaseProblem(Path("case.toml"), 1, 1, "", "wrong", kind)
        assert CODES[problem.code] is code
