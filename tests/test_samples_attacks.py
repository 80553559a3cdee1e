"""Hostile input to ``grade``'s samples, pass@k and ``merge``'s run identity, through the console script.

Each test is a defect found by attacking the commands from outside: bad
input gets a typed error naming its file and line (never an internal
error), a refused JSON Lines file leaves nothing in ``$TMPDIR``, and the
exit code follows docs/cli.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .test_grade import SLUG, World
from .test_grade_samples import cases, jsonl, samples


@pytest.fixture
def world(tmp_path: Path) -> World:
    """A fresh bench and candidates directory in tmp_path."""
    return World(tmp_path)


def refused(world: World, raw: str) -> dict[str, object]:
    """Grade a JSON Lines file of the one line ``raw``; return its one problem (exit 2)."""
    cases(world, "a")
    jsonl(world, raw)
    result = world.run("grade", SLUG, "samples.jsonl", "--format", "json")
    assert result.returncode == 2, result.stdout + result.stderr
    error = json.loads(result.stdout)["error"]
    assert error["type"] == "SamplesInvalid"
    (problem,) = error["attributes"]["problems"]
    assert (problem["file"], problem["line"]) == ("samples.jsonl", 1)
    assert list(world.tmp.iterdir()) == []
    return dict(problem)


def test_a_path_with_a_lone_surrogate_is_a_problem_of_its_line(world: World) -> None:
    """'\\ud800' cannot be a file name (was: internal error UnicodeEncodeError)."""
    line = '{"case": "a", "files": {"\\ud800.py": "x", "mode.txt": "pass\\n"}}'
    assert "lone surrogate" in str(refused(world, line)["message"])


def test_a_surrogate_escape_path_is_not_written_as_raw_bytes(world: World) -> None:
    """'\\udc80' was written as the byte 0x80: a file name that is not UTF-8."""
    line = '{"case": "a", "files": {"\\udc80.py": "x", "mode.txt": "pass\\n"}}'
    assert "lone surrogate" in str(refused(world, line)["message"])


def test_a_path_part_longer_than_a_name_may_be_is_a_problem_of_its_line(world: World) -> None:
    """A 300-byte file name (was: internal error OSError ENAMETOOLONG)."""
    line = json.dumps({"case": "a", "files": {"x" * 300: "x", "mode.txt": "pass\n"}})
    assert "longer than 255 bytes" in str(refused(world, line)["message"])


def test_a_path_deeper_than_a_candidate_may_be_is_refused_and_leaves_nothing(world: World) -> None:
    """3,000 levels (was: written out, then RecursionError removing it, left in $TMPDIR)."""
    line = json.dumps({"case": "a", "files": {"d/" * 3000 + "x": "x", "mode.txt": "pass\n"}})
    assert "deeper than 512 levels" in str(refused(world, line)["message"])


def test_the_samples_problems_are_one_line_each_in_text(world: World) -> None:
    """Each problem at FILE:LINE, as check's diagnostics (was: one line of literal '\\n's)."""
    cases(world, "alpha")
    jsonl(world, {"case": "alhpa", "files": {}}, {"case": "alpha", "files": {"/x": ""}})
    result = world.run("grade", SLUG, "samples.jsonl")
    assert result.returncode == 2
    assert "\\n" not in result.stderr
    lines = result.stderr.splitlines()
    assert any(line.startswith("samples.jsonl:1: error[samples-invalid]: ") for line in lines)
    assert any(line.startswith("samples.jsonl:2: error[samples-invalid]: ") for line in lines)


def test_fail_under_reads_pass_at_1_whatever_k_are_reported(world: World) -> None:
    """pass@1 = 0.5 is not below 0.5 (was: exit 1 under --pass-at 2, pass@1 not computed)."""
    cases(world, "a")
    samples(world, "a", "pass", "fail")
    assert world.grade("--samples", "--fail-under", "0.5").returncode == 0
    assert world.grade("--samples", "--fail-under", "0.5", "--pass-at", "2").returncode == 0
    assert world.grade("--samples", "--fail-under", "0.6", "--pass-at", "2").returncode == 1


@pytest.mark.parametrize(
    ("where", "value", "said"),
    [
        ("run", "model-a", "run: Input should be an object, not 'model-a'"),
        ("run.name", ["model-a"], "run.name: Input should be a valid string"),
        ("run.started_at", 5, "run.started_at: Input should be a valid string, not 5"),
        ("results.0.samples", "x", "results[0].samples: Input should be a valid array, not 'x'"),
        (
            "results.0.samples.0.status",
            "won",
            "results[0].samples[0].status: Input should be 'passed', 'failed' or 'error', not 'won'",
        ),
    ],
)
def test_merge_names_a_malformed_run_or_sample(
    world: World, where: str, value: object, said: str
) -> None:
    """A hand-edited shard is refused with its file named (was: internal error, nothing said)."""
    cases(world, "a", "b")
    for case_id in "ab":
        samples(world, case_id, "pass", "fail")
    paths = []
    for index in (1, 2):
        result = world.grade("--samples", "--shard", f"{index}/2", "--format", "json")
        paths.append(world.bench.base / f"shard{index}.json")
        paths[-1].write_text(result.stdout)
    document = json.loads(paths[0].read_text())
    document.setdefault("run", {})
    *parents, last = where.split(".")
    held = document
    for part in parents:
        held = held[int(part)] if part.isdigit() else held[part]
    held[int(last) if last.isdigit() else last] = value
    paths[0].write_text(json.dumps(document))
    result = world.run("merge", *map(str, paths))
    assert result.returncode == 1
    assert result.stdout == ""
    assert "internal error" not in result.stderr
    assert f"shard1.json: {said}" in result.stderr


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("fail_under", "x"),
        ("reused", "y"),
        ("cases", 5),
        ("case_files", []),
        ("shard", "x"),
        ("manifest", 5),
        ("sampled", {}),
    ],
)
def test_merge_refuses_any_other_malformed_key_with_the_files_named(
    world: World, key: str, value: object
) -> None:
    """Whatever key of a shard is edited into another type: a refusal (exit 1), never a crash.

    (A ``sandbox`` word no provider has counts as the least contained: not
    refused. ``pass_at_k`` is computed again from the results, and refused
    when the report says otherwise: see tests/test_reader.py.)
    """
    cases(world, "a", "b")
    for case_id in "ab":
        samples(world, case_id, "pass")
    paths = []
    for index in (1, 2):
        result = world.grade("--samples", "--shard", f"{index}/2", "--format", "json")
        paths.append(world.bench.base / f"shard{index}.json")
        paths[-1].write_text(result.stdout)
    document = json.loads(paths[0].read_text())
    document[key] = value
    paths[0].write_text(json.dumps(document))
    result = world.run("merge", *map(str, paths), "--format", "json")
    assert result.returncode == 1, result.stderr
    assert "internal error" not in result.stderr
    assert "Traceback" not in result.stderr
    assert "shard1.json" in result.stderr


@pytest.mark.parametrize("bad", ["\u00b2", "1" * 5000, "1,\u0661"])
def test_pass_at_says_what_it_takes_for_any_digits(world: World, bad: str) -> None:
    cases(world, "a")
    samples(world, "a", "pass")
    result = world.grade("--samples", "--pass-at", bad)
    assert result.returncode == 2
    assert "expected whole numbers of at least 1" in result.stderr
