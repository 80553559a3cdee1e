"""codegenie.eval.check._protocol: the worker's answers are checked whole on receipt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codegenie.eval.check._protocol import Malformed, parse_answer

from .checking import check, codes, make_bench

DONE: dict[str, Any] = {
    "id": "0f" * 16,
    "kind": "done",
    "orphans": 0,
    "threads": 0,
    "registered": ["aa"],
    "error": None,
    "not_registered": False,
    "rubric": [],
    "left_running": "",
    "parts": {
        "rubric_file": "/bench/aa/rubric.py",
        "rubric_exists": True,
        "cases_found": True,
        "cases": [
            {
                "id": "one",
                "directory": "/bench/aa/cases/one",
                "timeout": 60,
                "memory": 2048,
                "processes": 512,
                "file_size": 1024,
                "cpu_time": None,
                "disk": 1024,
                "disk_files": 20000,
            }
        ],
        "case_problems": [
            {
                "file": "/bench/aa/cases/two/case.toml",
                "line": 2,
                "column": 1,
                "key": "timeout",
                "message": "must be positive",
                "code": "case-invalid",
                "case": "two",
            }
        ],
        "case_problems_unlisted": 0,
    },
}
RAISED = {
    "kind": "raised",
    "type": "ValueError",
    "message": "boom",
    "file": "/bench/aa/registration.py",
    "line": 3,
    "traceback": "Traceback ...",
}


def line(document: object) -> bytes:
    return json.dumps(document).encode()


@pytest.mark.parametrize(
    "answer",
    [
        DONE,
        DONE | {"parts": None, "error": RAISED},
        DONE | {"error": {"kind": "mismatch", "expected": "/a.py", "actual": None}},
        {"id": "ab", "kind": "crashed", "detail": "exited with status 3"},
        {"id": "ab", "kind": "timeout", "detail": "no answer within 1 s"},
        {"id": "ab", "kind": "tampered", "detail": "it wrote to the check's private result pipe"},
        {
            "id": "ab",
            "kind": "unavailable",
            "detail": "cannot start its process: Too many open files",
        },
    ],
    ids=["done", "raised", "mismatch", "crashed", "timeout", "tampered", "unavailable"],
)
def test_a_well_formed_answer_is_taken_as_it_is(answer: dict[str, Any]) -> None:
    """Every kind of answer parses to the same data (an integer timeout becomes a float)."""
    assert parse_answer(line(answer)) == answer


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (b"not json", "the answer is not JSON (Expecting value"),
        (line([1, 2]), "the answer: Input should be a valid dictionary"),
        (line({"id": "ab"}), "the answer: Unable to extract tag using discriminator 'kind'"),
        (line({"id": "ab", "kind": "lost", "detail": ""}), "the answer: Input tag 'lost'"),
        (line(DONE | {"left_running": 42}), "done.left_running: Input should be a valid string"),
        (
            line(DONE | {"not_registered": 0}),
            "done.not_registered: Input should be a valid boolean",
        ),
        (line(DONE | {"extra": 1}), "done.extra: Extra inputs are not permitted"),
        (line({k: v for k, v in DONE.items() if k != "rubric"}), "done.rubric: Field required"),
        (
            line(DONE | {"error": RAISED | {"line": True}}),
            "done.error.raised.line: Input should be a valid integer",
        ),
        (
            line(DONE | {"parts": DONE["parts"] | {"cases": [{"id": "one"}]}}),
            "done.parts.cases.0.directory: Field required (and 7 more)",
        ),
        (line(DONE | {"threads": -1}), "done.threads: Input should be greater than or equal to 0"),
        (
            line(DONE | {"parts": DONE["parts"] | {"case_problems_unlisted": -2}}),
            "done.parts.case_problems_unlisted: Input should be greater than or equal to 0",
        ),
    ],
    ids=[
        "not-json",
        "not-an-object",
        "no-kind",
        "unknown-kind",
        "wrong-type",
        "bool-is-not-int",
        "extra-key",
        "missing-key",
        "nested-wrong-type",
        "nested-missing",
        "negative-count",
        "negative-unlisted",
    ],
)
def test_a_malformed_answer_is_refused_with_its_place(answer: bytes, problem: str) -> None:
    """Malformed says where the answer breaks the protocol, with pydantic's words."""
    with pytest.raises(Malformed) as raised:
        parse_answer(answer)
    assert raised.value.problem.startswith(problem)


def test_a_path_that_is_not_utf8_comes_back_as_it_went() -> None:
    """A lone surrogate (a non-UTF-8 path under the C locale) survives the round trip."""
    answer = DONE | {"rubric": ["/b\udcc3nch/rubric.py"]}
    assert parse_answer(line(answer)) == answer


def test_a_registration_that_breaks_its_answer_cannot_be_judged(tmp_path: Path) -> None:
    """A registration that garbles what its process reports is that slug's import-failed."""
    bench = make_bench(tmp_path, "aa")
    bench.add(
        "garbles",
        before=("import codegenie.eval.check._probe as probe\nprobe._left_running = lambda: 42\n"),
    )
    report = check(bench, jobs=1)
    assert codes(report) == [("import-failed", "garbles")]
    [diagnostic] = report.diagnostics
    assert "cannot be judged: its answer breaks the check's protocol" in diagnostic.message
    assert "left_running" in diagnostic.message
