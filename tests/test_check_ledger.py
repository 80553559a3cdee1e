"""check --rubrics as the validation ledger: repeat, envelope, reuse, where a rubric broke."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .factory import Bench, make_bench, write_case
from .observe import tree_digest

SLUG = "ledgered"


def script() -> str:
    found = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert found is not None
    return found


def cli(bench: Bench, *args: str, log: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ}
    if log is not None:
        env["RUBRIC_RUNS"] = str(log)
    return subprocess.run(
        [script(), *args],
        cwd=bench.base,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def ledger_bench(base: Path, rubric: str, cases: dict[str, str] | None = None) -> Bench:
    """A bench of one task class whose rubric is ``rubric``; ``cases`` maps ids to case.toml."""
    bench = make_bench(base, SLUG, parts=True)
    package = bench.root / SLUG
    (package / "rubric.py").write_text(rubric, encoding="utf-8")
    shutil.rmtree(package / "cases")
    for case_id, toml in (cases or {"one": ""}).items():
        write_case(
            package / "cases",
            case_id,
            toml,
            input_files={"answer.txt": "todo\n"},
            expected_files={"answer.txt": "solved\n"},
        )
    return bench


COUNTING = """\
import json, os, sys
from pathlib import Path

log = os.environ.get("RUBRIC_RUNS")
if log:  # outside the bench: only under --sandbox none
    with open(log, "a") as runs:
        runs.write(Path(sys.argv[1]).name + "\\n")
passed = (Path(sys.argv[2]) / "answer.txt").read_text().strip() == "solved"
print(json.dumps({"passed": passed}))
sys.exit(0 if passed else 1)
"""

ALTERNATING = """\
import json, os, sys
from pathlib import Path

log = Path(os.environ["RUBRIC_RUNS"])
side = Path(sys.argv[2]).name
with log.open("a") as runs:
    runs.write(side + "\\n")
count = log.read_text().split().count(side)  # this side's runs so far, whatever the order
passed = (side == "expected") and count % 2 == 1  # expected/ passes on alternate runs of it
print(json.dumps({"passed": passed, "reason": f"run {count}"}))
sys.exit(0 if passed else 1)
"""


def runs_of(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


#: What these tests look at is the ledger of expected/ and input/: the cheat run is left out
#: (its own reuse is tested in test_cheat_run.py).
NO_CHEAT = ("--ignore-exploits", "*")


def test_an_unchanged_bench_runs_no_rubric_the_second_time(tmp_path: Path) -> None:
    """check --rubrics twice: the second runs nothing, says how many it reused, same output."""
    bench = ledger_bench(tmp_path / "b", COUNTING, {"one": "", "two": ""})
    log = tmp_path / "runs.log"
    first = cli(
        bench, "--format", "json", "check", "--rubrics", "--sandbox", "none", *NO_CHEAT, log=log
    )
    assert first.returncode == 0, first.stdout + first.stderr
    assert len(runs_of(log)) == 4  # two cases, expected/ and input/
    second = cli(
        bench, "--format", "json", "check", "--rubrics", "--sandbox", "none", *NO_CHEAT, log=log
    )
    assert second.returncode == 0
    assert len(runs_of(log)) == 4  # nothing ran
    one, two = json.loads(first.stdout), json.loads(second.stdout)
    assert (one["rubrics"]["reused"], two["rubrics"]["reused"]) == (0, 4)
    assert (one["rubrics"]["ran"], two["rubrics"]["ran"]) == (4, 0)
    assert one["diagnostics"] == two["diagnostics"]
    text = cli(bench, "check", "--rubrics", "--sandbox", "none", *NO_CHEAT, log=log)
    assert "4 rubric results reused" in text.stderr


def test_editing_one_case_reruns_that_case_only_and_no_cache_runs_all(tmp_path: Path) -> None:
    """An edit to one case's files re-runs that case's two sides; --no-cache runs every side."""
    bench = ledger_bench(tmp_path / "b", COUNTING, {"one": "", "two": ""})
    log = tmp_path / "runs.log"
    checking = ("check", "--rubrics", "--sandbox", "none", *NO_CHEAT)
    assert cli(bench, *checking, log=log).returncode == 0
    case = bench.root / SLUG / "cases" / "two" / "case.toml"
    case.write_text('description = "edited"\n', encoding="utf-8")
    assert cli(bench, *checking, log=log).returncode == 0
    assert sorted(runs_of(log)) == ["one", "one", "two", "two", "two", "two"]
    assert cli(bench, "--no-cache", *checking, log=log).returncode == 0
    assert len(runs_of(log)) == 10


def test_a_rubric_that_passes_on_alternate_runs_is_flaky(tmp_path: Path) -> None:
    """--repeat 5 on a rubric that passes expected/ every other run: case-flaky, with the counts."""
    bench = ledger_bench(tmp_path / "b", ALTERNATING)
    log = tmp_path / "runs.log"
    done = cli(
        bench, "--format", "json", "check", "--rubrics", "--repeat", "5", "--jobs", "1",
        "--sandbox", "none", log=log,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    document = json.loads(done.stdout)
    [flaky] = [d for d in document["diagnostics"] if d["code"] == "case-flaky"]
    assert "expected/ passed" in flaky["message"]
    assert re.search(r"expected/ passed [23] of 5 runs", flaky["message"])
    assert "input/ failed 5 of 5 runs" in flaky["message"]
    assert "run " in flaky["message"]  # each differing run's reason
    again = cli(bench, "check", "--rubrics", "--repeat", "5", "--sandbox", "none", log=log)
    assert again.returncode == 1
    assert "reused" not in again.stderr  # a flaky case is never served from the store


SLOW = """\
import json, sys, time
from pathlib import Path

if Path(sys.argv[2]).name == "expected":
    time.sleep(1.2)  # 0.6 of the case's timeout of 2 s
passed = Path(sys.argv[2]).name == "expected"
print(json.dumps({"passed": passed}))
sys.exit(0 if passed else 1)
"""


def test_a_solution_that_needs_more_than_half_the_timeout_is_timeout_tight(tmp_path: Path) -> None:
    """timeout-tight is a warning at the timeout key; --strict makes it fail; JSON has the spread."""
    bench = ledger_bench(tmp_path / "b", SLOW, {"slow": 'description = "x"\ntimeout = 2\n'})
    done = cli(bench, "--format", "json", "check", "--rubrics")
    document = json.loads(done.stdout)
    assert done.returncode == 0, done.stdout
    [tight] = [d for d in document["diagnostics"] if d["code"] == "timeout-tight"]
    assert tight["severity"] == "warning"
    assert tight["file"].endswith("cases/slow/case.toml")
    assert (tight["line"], tight["column"]) == (2, 1)
    [expected] = [c for c in document["rubrics"]["cases"] if c["side"] == "expected"]
    assert set(expected["wall_s"]) == {"min", "median", "max"}
    assert expected["wall_s"]["max"] >= 1.2
    assert set(expected["peak_memory_mib"]) == {"min", "median", "max"}
    assert cli(bench, "check", "--strict", "--rubrics").returncode == 1


BROKEN = """\
import json, sys

def grade(case):
    return case["digestt"]

print(json.dumps({"passed": bool(grade({"digest": 1}))}))
"""


def test_a_rubric_that_raises_is_reported_where_it_broke(tmp_path: Path) -> None:
    """One diagnostic at the rubric's raising line, the case named; -v and JSON carry the traceback."""
    bench = ledger_bench(tmp_path / "b", BROKEN)
    done = cli(bench, "check", "--rubrics")
    assert done.returncode == 1
    lines = [line for line in done.stdout.splitlines() if "rubric-error" in line]
    assert lines == [
        f"bench/{SLUG}/rubric.py:4:1: error[rubric-error]: the rubric raised KeyError: 'digestt' "
        f"on expected/ and input/ of case 'one' of '{SLUG}'"
    ]
    assert "protocol" not in done.stdout
    assert "  hint: fix the rubric at this line; -v shows the rubric's traceback" in done.stdout
    verbose = cli(bench, "-v", "check", "--rubrics")
    assert "Traceback (most recent call last)" in verbose.stdout
    assert "  hint: fix the rubric at this line\n" in verbose.stdout  # -v is given: not asked again
    assert "-v shows" not in verbose.stdout
    document = json.loads(cli(bench, "--format", "json", "check", "--rubrics").stdout)
    [error] = [d for d in document["diagnostics"] if d["code"] == "rubric-error"]
    assert "KeyError: 'digestt'" in error["traceback"]
    side = document["rubrics"]["cases"][0]
    assert "KeyError" in side["errors"][0]["stderr_tail"]
    assert "KeyError" in side["errors"][0]["traceback"]


def test_a_timeout_is_reported_at_the_timeout_key(tmp_path: Path) -> None:
    """rubric-timeout points at `timeout =` in case.toml, or at the case directory by default."""
    hang = "import time\ntime.sleep(60)\n"
    bench = ledger_bench(tmp_path / "b", hang, {"keyed": 'description = "x"\ntimeout = 0.5\n'})
    done = cli(bench, "--format", "json", "check", "--rubrics")
    [first, *_] = [
        d for d in json.loads(done.stdout)["diagnostics"] if d["code"] == "rubric-timeout"
    ]
    assert first["file"].endswith("cases/keyed/case.toml")
    assert (first["line"], first["column"]) == (2, 1)


def test_expected_over_a_limit_is_the_benchs_problem_whatever_over_limit_says(
    tmp_path: Path,
) -> None:
    """over-limit = "failed" is about candidates: check --rubrics still errs on expected/."""
    hang = "import time\ntime.sleep(60)\n"
    bench = ledger_bench(tmp_path / "b", hang, {"slow": 'timeout = 0.5\nover-limit = "failed"\n'})
    done = cli(bench, "--format", "json", "check", "--rubrics")
    assert done.returncode == 1, done.stderr
    codes = {d["code"] for d in json.loads(done.stdout)["diagnostics"]}
    assert "rubric-timeout" in codes


def test_grade_finds_a_missing_rubric_before_any_case_runs(tmp_path: Path) -> None:
    """A task class without rubric.py: grade exits 4 with rubric-missing, not one error per case."""
    bench = ledger_bench(tmp_path / "b", COUNTING, {"one": "", "two": ""})
    (bench.root / SLUG / "rubric.py").unlink()
    runs = bench.base / "runs"
    shutil.copytree(bench.root / SLUG / "cases" / "one" / "expected", runs / "one")
    done = cli(bench, "grade", SLUG, "runs")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "rubric-missing" in done.stderr
    assert done.stdout == ""


def _a_rubric_runs(scratch: Path) -> bool:
    """Whether a ``running`` file is anywhere under ``scratch``, which check changes as it runs.

    ``os.walk`` passes over a directory removed while it looks (check removes
    each run's copies as the run ends), where ``Path.rglob`` raises.
    """
    return any("running" in files for _, _, files in os.walk(scratch))


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_stops_check_rubrics_within_a_second(tmp_path: Path, signum: int) -> None:
    """SIGINT, SIGTERM or SIGHUP while rubrics run: check ends within a second, nothing
    left running, bench unchanged."""
    # Each rubric says it runs by a file in its own candidate copy: warm workers fork
    # rubrics, so no process names rubric.py on its command line.
    hang = (
        "import pathlib, sys, time\npathlib.Path(sys.argv[2], 'running').touch()\ntime.sleep(600)\n"
    )
    bench = ledger_bench(tmp_path / "b", hang, {f"c{i}": "" for i in range(4)})
    before = tree_digest(bench.base)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    process = subprocess.Popen(
        [script(), "check", "--rubrics", "--jobs", "2"],
        cwd=bench.base,
        env={**os.environ, "TMPDIR": str(scratch)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # As from a terminal: a job started in the background ignores SIGINT, and
        # check would rightly keep ignoring it.
        preexec_fn=_default_signals,  # noqa: PLW1509 - the test process starts no threads here
    )
    try:
        deadline = time.monotonic() + 120
        while not _a_rubric_runs(scratch) and time.monotonic() < deadline:
            assert process.poll() is None, process.communicate()
            time.sleep(0.05)
        assert _a_rubric_runs(scratch), "no rubric started within two minutes"
        process.send_signal(signum)
        started = time.monotonic()
        process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert time.monotonic() - started < 1.5
    assert process.returncode == 128 + signum
    assert alive_with(str(bench.base)) == []
    assert alive_with(str(scratch)) == []
    assert tree_digest(bench.base) == before


def _default_signals() -> None:
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)


def alive_with(marker: str, within: float = 5.0) -> list[str]:
    """Live (not zombie) processes whose command line names ``marker``, after ``within`` s at most."""
    deadline = time.monotonic() + within
    while True:
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if marker in cmdline and state != "Z":
                found.append(f"{entry.name}: {cmdline}")
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


HASH_ORDERED = """\
import json, sys
from pathlib import Path

side = Path(sys.argv[2]).name
seeded = hash("codegenie")  # Python seeds string hashing once per interpreter
passed = side == "expected" and seeded % 2 == 0
print(json.dumps({"passed": passed, "reason": f"hash {seeded}"}))
sys.exit(0 if passed else 1)
"""


def test_repeats_each_have_a_hash_seed_of_their_own_in_the_sandbox(tmp_path: Path) -> None:
    """A rubric that hangs on hash order is flaky under --repeat, warm workers or not.

    The runs of a warm worker share its interpreter's hash seed; a worker
    never makes the same run twice, so each repeat has a seed of its own, as
    a plain run has. (Each case's expected/ passes on a seed in two: both
    cases agreeing over 12 repeats would take odds of about 1 in 4 million.)
    """
    bench = ledger_bench(tmp_path / "b", HASH_ORDERED, {"one": "", "two": ""})
    done = cli(
        bench, "--format", "json", "check", "--rubrics", "--repeat", "12", "--jobs", "1",
        "--no-cache",
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    document = json.loads(done.stdout)
    flaky = [d for d in document["diagnostics"] if d["code"] == "case-flaky"]
    assert flaky, document["diagnostics"]
    assert all(re.search(r"expected/ passed ([1-9]|1[01]) of 12 runs", d["message"]) for d in flaky)


def test_check_says_why_nothing_was_reused_when_the_interpreters_packages_changed(
    tmp_path: Path,
) -> None:
    """A distribution added to the interpreter: check --rubrics reuses nothing and says why,
    in JSON (rubrics.ledger) and in words; an edited editable module is named the same way."""
    from .test_ledger import harness

    tool = harness(tmp_path)
    bench = ledger_bench(tmp_path / "b", COUNTING)

    def check(*args: str) -> subprocess.CompletedProcess[str]:
        return tool.run(bench.base, *args, "check", "--rubrics", "--sandbox", "none", *NO_CHEAT)

    first = check("--format", "json")
    assert first.returncode == 0, first.stdout + first.stderr
    assert json.loads(first.stdout)["rubrics"]["ledger"] == {
        "looked_up": 2, "reused": 0, "interpreter_changed": 0, "changes": []
    }  # fmt: skip
    (tool.site / "orbit-2.9.0.dist-info").mkdir()
    text = check()
    assert text.returncode == 0, text.stdout + text.stderr
    assert (
        "0 of 2 rubric results reused: the interpreter's packages changed since they were "
        "stored (orbit 2.9.0 added)"
    ) in text.stderr
    (tool.source / "helper_mod.py").write_text('ANSWER = "edited"\n')
    edited = json.loads(check("--format", "json").stdout)["rubrics"]
    assert (edited["reused"], edited["ran"]) == (0, 2)
    assert edited["ledger"]["changes"] == [f"the editable source {tool.source} changed"]
    assert json.loads(check("--format", "json").stdout)["rubrics"]["reused"] == 2
