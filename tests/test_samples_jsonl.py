"""Samples as JSON Lines: each line checked, with its line number, before anything runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codegenie.eval._samples.jsonl import (
    JsonlProblem,
    path_problem,
    read_samples,
    write_sample,
)

CASES = ("add", "fizzbuzz", "sort-list")


def lines(*objects: object) -> list[bytes]:
    return [json.dumps(value).encode() for value in objects]


def test_samples_without_ids_are_numbered_in_file_order_within_their_case() -> None:
    samples, problems = read_samples(
        lines(
            {"case": "add", "files": {"solution.py": "a"}},
            {"case": "fizzbuzz", "files": {"solution.py": "b"}},
            {"case": "add", "files": {"solution.py": "c"}, "sample": "2"},
            {"case": "add", "files": {"solution.py": "d"}},
        ),
        CASES,
    )
    assert problems == []
    assert [(s.case, s.sample, s.line) for s in samples] == [
        ("add", "1", 1),
        ("fizzbuzz", "1", 2),
        ("add", "2", 3),
        ("add", "3", 4),
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b"not json", "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"case": 3, "files": {}}', "'case' must be a string"),
        (b'{"case": "ad", "files": {}}', "no case 'ad' in this task class; did you mean 'add'?"),
        (b'{"case": "add", "files": []}', "'files' must be an object"),
        (b'{"case": "add", "files": {"a": 1}}', "a file's content must be text"),
        (b'{"case": "add", "files": {}, "model": "x"}', "unknown key(s) 'model'"),
        (b'{"case": "add", "files": {}, "sample": "Big"}', "invalid sample id 'Big'"),
        (b'{"case": "add", "case": "add", "files": {}}', "the key 'case' is given twice"),
        (b'{"case": "add", "files": {"a": "", "a": ""}}', "the file 'a' is given twice"),
        (b'{"case": "add", "files": {"../x": ""}}', "must stay inside the sample"),
        (b'{"case": "add", "files": {"/etc/x": ""}}', "the path is absolute"),
        (b'{"case": "add", "files": {"a": "", "a/b": ""}}', "'a' is both a file and a directory"),
        (b'{"case": "add", "files": {"a\\\\b": ""}}', "backslash"),
        (b'{"case": "add", "files": {}}\xff', "not UTF-8"),
    ],
)
def test_each_bad_line_is_a_problem_with_its_line(line: bytes, message: str) -> None:
    good = lines({"case": "add", "files": {"solution.py": ""}})
    samples, problems = read_samples([*good, line, *good], CASES)
    assert [(p.line, message in p.message) for p in problems] == [(2, True)], problems
    assert [s.line for s in samples] == [1, 3]


def test_a_sample_given_twice_is_named_with_its_first_line() -> None:
    samples, problems = read_samples(
        lines(
            {"case": "add", "files": {}, "sample": "a"},
            {"case": "add", "files": {}, "sample": "a"},
        ),
        CASES,
    )
    assert problems == [
        JsonlProblem(2, "sample 'a' of case 'add' is given twice (first on line 1)", "add")
    ]
    assert [s.line for s in samples] == [1]


def test_every_problem_of_a_file_is_reported_at_once_in_line_order() -> None:
    _, problems = read_samples(
        [b"{", b"", *lines({"case": "zzz", "files": {}}, {"case": "add", "files": {"": ""}})],
        CASES,
    )
    assert [p.line for p in problems] == [1, 3, 4]


@given(st.text(max_size=30))
def test_a_path_is_accepted_only_if_it_stays_inside(path: str) -> None:
    reason = path_problem(path)
    parts = path.split("/")
    inside = (
        bool(path)
        and not path.startswith("/")
        and "\0" not in path
        and "\\" not in path
        and all(part not in ("", ".", "..") for part in parts)
    )
    assert (reason is None) == inside


def test_a_sample_is_written_where_it_is_graded_and_nothing_is_followed(tmp_path: Path) -> None:
    samples, problems = read_samples(
        lines({"case": "add", "files": {"solution.py": "print(1)\n", "pkg/util/x.py": "é"}}),
        CASES,
    )
    assert problems == []
    target = tmp_path / "add" / "1"
    target.parent.mkdir()
    write_sample(samples[0], str(target))
    assert (target / "solution.py").read_text() == "print(1)\n"
    assert (target / "pkg" / "util" / "x.py").read_text(encoding="utf-8") == "é"
    with pytest.raises(FileExistsError):
        write_sample(samples[0], str(target))
    os.symlink(tmp_path, tmp_path / "link")
    with pytest.raises(FileExistsError):  # a link in the way is never followed
        write_sample(samples[0], str(tmp_path / "link"))
