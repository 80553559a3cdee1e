"""What a JSON Lines file of samples costs ``grade`` in memory: bounded by the limits, not the file.

Through the installed console script, observed from outside: the command
runs under a small wrapper process that reports its peak resident memory
(``ru_maxrss`` of its one child) and caps its address space, so that a
reader that holds a file whole fails the test instead of the machine. Huge
files are sparse (a hole reads as NUL bytes: one line without an end), so
they cost the disk nothing.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codegenie.eval._samples import jsonl
from codegenie.eval._samples.jsonl import (
    CONTAINERS_LIMIT,
    FILE_LIMIT,
    LINE_LIMIT,
    LINES_LIMIT,
    PROBLEMS_LIMIT,
    VALUES_LIMIT,
    lines_of,
    read_samples,
)

from .test_grade import SLUG, World, script
from .test_grade_samples import cases

#: What ``grade`` may reach, in KiB, refusing any of these files: the interpreter and the
#: package take some 60-90 MiB; the old reader took 571 MiB on ten million short lines.
PEAK_BOUND_KIB = 200 * 1024

#: The wrapper: caps the command's address space (a reader that holds a 4 GiB file whole
#: fails with MemoryError instead of taking the machine), runs it, prints its peak RSS.
_MEASURE = """\
import json, resource, subprocess, sys
def cap():
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
done = subprocess.run(sys.argv[1:], capture_output=True, text=True, preexec_fn=cap)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"code": done.returncode, "out": done.stdout, "err": done.stderr, "peak": peak}))
"""


@pytest.fixture
def world(tmp_path: Path) -> World:
    """A fresh bench with the cases ``a`` and ``b``, and a private TMPDIR."""
    made = World(tmp_path)
    cases(made, "a", "b")
    return made


def measured(world: World, samples: Path) -> tuple[int, dict[str, Any] | None, int, str]:
    """Grade ``samples`` as JSON; return the exit code, the JSON document, peak KiB, stderr."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, script(), "grade", SLUG, samples.name, "--format", "json"],
        cwd=world.bench.base,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
        env=world.env(),
    )
    said = json.loads(done.stdout)
    document = json.loads(said["out"]) if said["out"].strip() else None
    return said["code"], document, said["peak"], said["err"]


def refused(world: World, samples: Path) -> tuple[list[dict[str, Any]], int]:
    """Grade ``samples``; assert it is refused (exit 2, nothing left); return problems, peak."""
    code, document, peak, stderr = measured(world, samples)
    assert code == 2, stderr
    assert document is not None
    error = document["error"]
    assert error["type"] == "SamplesInvalid", error
    assert list(world.tmp.iterdir()) == []
    problems: list[dict[str, Any]] = error["attributes"]["problems"]
    assert {problem["file"] for problem in problems} == {samples.name}
    return problems, peak


def sample_line(case: str = "a", mode: str = "pass") -> bytes:
    return json.dumps({"case": case, "files": {"mode.txt": mode + "\n"}}).encode() + b"\n"


def test_ten_million_short_lines_are_refused_at_the_limit_in_bounded_memory(world: World) -> None:
    """The issue's file: 10M two-byte lines; refused at line 1,000,001, the problems capped."""
    path = world.bench.base / "samples.jsonl"
    path.write_bytes(b"1\n" * 10_000_000)
    problems, peak = refused(world, path)
    assert peak < PEAK_BOUND_KIB, f"peak {peak // 1024} MiB"
    assert len(problems) == PROBLEMS_LIMIT + 2
    assert [p["line"] for p in problems[:3]] == [1, 2, 3]
    assert all("not a JSON object" in p["message"] for p in problems[:PROBLEMS_LIMIT])
    assert problems[-2]["line"] == PROBLEMS_LIMIT + 1
    assert f"{LINES_LIMIT - PROBLEMS_LIMIT:,} more problems" in problems[-2]["message"]
    assert (problems[-1]["line"], problems[-1]["message"]) == (
        LINES_LIMIT + 1,
        f"the file has more than {LINES_LIMIT:,} lines",
    )


def test_a_4_gib_file_of_empty_lines_is_refused_without_reading_past_the_limit(
    world: World,
) -> None:
    """Empty lines count: the line past the limit ends the reading, however much follows."""
    path = world.bench.base / "samples.jsonl"
    with open(path, "wb") as file:
        file.write(b"\n" * (LINES_LIMIT + 1))
        file.truncate(FILE_LIMIT)  # the largest file allowed; the rest is a hole, on no disk
    problems, peak = refused(world, path)
    assert peak < PEAK_BOUND_KIB, f"peak {peak // 1024} MiB"
    assert [(p["line"], p["message"]) for p in problems] == [
        (LINES_LIMIT + 1, f"the file has more than {LINES_LIMIT:,} lines")
    ]


def test_one_very_long_line_is_never_held_and_the_lines_after_it_keep_their_numbers(
    world: World,
) -> None:
    """A 1 GiB line (a hole, NUL bytes) is a problem of line 1; line 3 is read as line 3."""
    path = world.bench.base / "samples.jsonl"
    with open(path, "wb") as file:
        file.seek(1 << 30)
        file.write(b"\n" + sample_line() + b'{"case": "zz", "files": {}}\n')
    problems, peak = refused(world, path)
    assert peak < PEAK_BOUND_KIB, f"peak {peak // 1024} MiB"
    assert [(p["line"], p["message"]) for p in problems] == [
        (1, f"the line is longer than {LINE_LIMIT:,} bytes"),
        (3, "no case 'zz' in this task class"),
    ]


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (b"{},", "JSON arrays and objects"),
        (b"[],", "JSON arrays and objects"),
        (b'"ab",', "JSON values"),
        (b"1.5,", "JSON values"),
    ],
)
def test_a_line_under_the_length_limit_that_would_cost_many_times_its_length_is_refused(
    world: World, item: bytes, message: str
) -> None:
    """Millions of tiny values in one line are refused before parsing, not built as objects."""
    count = (LINE_LIMIT - 64) // len(item)
    path = world.bench.base / "samples.jsonl"
    path.write_bytes(b'{"case": "a", "files": {"x": ""}, "sample": [' + item * count + b"0]}\n")
    problems, peak = refused(world, path)
    assert peak < PEAK_BOUND_KIB, f"peak {peak // 1024} MiB"
    assert [p["line"] for p in problems] == [1]
    assert message in problems[0]["message"]


def test_blank_lines_up_to_the_limit_then_a_sample_are_graded(world: World) -> None:
    """Blank lines are passed over but counted: a sample on the last line allowed is graded."""
    path = world.bench.base / "samples.jsonl"
    path.write_bytes(b" \n" * (LINES_LIMIT - 1) + sample_line())
    code, document, peak, stderr = measured(world, path)
    assert code == 1, stderr  # case b has no sample: missing
    assert document is not None
    assert peak < PEAK_BOUND_KIB, f"peak {peak // 1024} MiB"
    (first, second) = document["results"]
    assert (first["case"], first["status"], first["samples"][0]["sample"]) == ("a", "passed", "1")
    assert second["status"] == "missing"
    assert list(world.tmp.iterdir()) == []


def test_a_sample_one_line_past_the_limit_is_refused(world: World) -> None:
    """The same file with one more blank line: the sample is on line 1,000,001, refused."""
    path = world.bench.base / "samples.jsonl"
    path.write_bytes(b"\n" * LINES_LIMIT + sample_line())
    problems, _ = refused(world, path)
    assert [p["line"] for p in problems] == [LINES_LIMIT + 1]


# -- in-process: the reader's own contracts ------------------------------------------------


@given(st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")), max_size=20))
def test_lines_of_yields_each_line_and_marks_the_long_ones(parts: list[bytes]) -> None:
    """Every line comes back as written, one over the limit as None, and none is lost."""
    data = b"\n".join(parts)
    original = jsonl.LINE_LIMIT, jsonl._SKIP_CHUNK
    jsonl.LINE_LIMIT, jsonl._SKIP_CHUNK = 6, 2  # type: ignore[misc]
    try:
        got = list(lines_of(io.BytesIO(data)))
    finally:
        jsonl.LINE_LIMIT, jsonl._SKIP_CHUNK = original  # type: ignore[misc]
    expected = [
        line if len(line) <= 6 else None for line in re.findall(rb"[^\n]*\n|[^\n]+\Z", data)
    ]
    assert got == expected


def test_problems_past_the_cap_are_counted_in_one_last_problem() -> None:
    """Every problem up to the cap is listed in line order, the rest counted from their first line."""
    lines = [b"x"] * (PROBLEMS_LIMIT + 5)
    lines[3] = json.dumps({"case": "a", "files": {}, "sample": "s"}).encode()
    lines[PROBLEMS_LIMIT + 2] = lines[3]  # given twice: found only once the whole file is read
    samples, problems = read_samples(lines, ["a"])
    assert [s.line for s in samples] == [4]
    assert [p.line for p in problems[:PROBLEMS_LIMIT]] == [
        n for n in range(1, PROBLEMS_LIMIT + 2) if n != 4
    ]
    assert (problems[-1].line, problems[-1].message) == (
        PROBLEMS_LIMIT + 2,
        f"4 more problems from this line on are not listed (only the first {PROBLEMS_LIMIT:,} are)",
    )


def test_the_shape_limits_leave_an_ordinary_sample_alone() -> None:
    """A sample with a file full of braces and commas (in strings) and many files is read."""
    code = "{[(" * CONTAINERS_LIMIT + "," * VALUES_LIMIT
    files = {f"f{i}.py": code if i == 0 else "" for i in range(1000)}
    samples, problems = read_samples([json.dumps({"case": "a", "files": files}).encode()], ["a"])
    assert problems == []
    assert samples[0].files == files
