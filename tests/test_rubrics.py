"""codegenie.eval.rubrics: the rubric protocol, run on real rubrics in tmp_path."""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import textwrap
import threading
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest

from codegenie.eval import rubrics
from codegenie.eval._process import supervisor
from codegenie.eval._run.spec import RunSpec
from codegenie.eval._sandbox import cgroups as cgroups_module
from codegenie.eval.cases import Case
from codegenie.eval.rubrics import (
    STDERR_TAIL_LIMIT,
    STDOUT_LIMIT,
    RubricResult,
    run_rubric,
    verdict_problem,
)
from tests.factory import write_case
from tests.interrupts import interrupts_inside
from tests.observe import gone, tree_digest

REPO = Path(__file__).resolve().parent.parent
VERDICT_SCHEMA = json.loads((REPO / "docs" / "rubric-verdict.schema.json").read_text())

PASS = 'print(json.dumps({"passed": True, "score": 1, "reason": "ok"}))\nsys.exit(0)\n'
FAIL = 'print(json.dumps({"passed": False, "score": 0.25, "reason": "no"}))\nsys.exit(1)\n'


@pytest.fixture
def workspace_parent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where run_rubric makes its temporary directories in this test (checked empty afterwards)."""
    parent = tmp_path / "tmp"
    parent.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(parent))
    return parent


@pytest.fixture
def case(tmp_path: Path) -> Case:
    """A case directory with case.toml, input/ and expected/ holding a few files."""
    directory = write_case(
        tmp_path / "bench" / "cases",
        "c1",
        'description = "A case."\nvalue = 3\n',
        input_files={"main.txt": "start\n", "sub/deep.txt": "deep\n"},
        expected_files={"main.txt": "done\n"},
    )
    return Case(task_class="t", id="c1", directory=directory, timeout=30)


def write_rubric(tmp_path: Path, body: str, name: str = "rubric.py") -> Path:
    """Write a rubric script: imports, then ``body`` (case_dir and candidate_dir are Paths)."""
    rubric = tmp_path / "rubric-src" / name
    rubric.parent.mkdir(exist_ok=True)
    rubric.write_text(
        "import json, os, sys, time\nfrom pathlib import Path\n"
        "case_dir, candidate_dir = Path(sys.argv[1]), Path(sys.argv[2])\n" + textwrap.dedent(body),
        encoding="utf-8",
    )
    return rubric


# -- verdicts ---------------------------------------------------------------------------


def test_a_passing_rubric_passes(tmp_path: Path, case: Case, workspace_parent: Path) -> None:
    """Exit 0 with passed: true is a pass, with the verdict's score and reason."""
    rubric = write_rubric(tmp_path, PASS)
    result = run_rubric(rubric, case, case.expected)
    assert (result.status, result.score, result.reason) == ("passed", 1.0, "ok")
    assert result.passed
    assert result.exit_status == 0
    assert result.verdict == {"passed": True, "score": 1, "reason": "ok"}
    assert result.case == "c1"
    assert 0 < result.duration_s < 30
    assert list(workspace_parent.iterdir()) == []


def test_a_failing_rubric_fails(tmp_path: Path, case: Case) -> None:
    """Exit 1 with passed: false is a fail, not an error."""
    result = run_rubric(write_rubric(tmp_path, FAIL), case, case.input)
    assert (result.status, result.score, result.reason) == ("failed", 0.25, "no")
    assert not result.passed


def test_the_rubric_runs_as_the_protocol_says(
    tmp_path: Path, case: Case, workspace_parent: Path
) -> None:
    """Harness interpreter, fresh empty working directory and TMPDIR, copies named like the originals."""
    rubric = write_rubric(
        tmp_path,
        """
        print(json.dumps({
            "passed": True,
            "executable": sys.executable,
            "cwd": os.getcwd(),
            "cwd_empty": os.listdir(".") == [],
            "tmpdir": os.environ["TMPDIR"],
            "case": [case_dir.name, sorted(os.listdir(case_dir))],
            "candidate": [candidate_dir.name, sorted(os.listdir(candidate_dir))],
            "bytecode": sys.flags.dont_write_bytecode,
        }))
        """,
    )
    result = run_rubric(rubric, case, case.input)
    assert result.status == "passed", result.reason
    verdict = result.verdict
    assert verdict is not None
    assert verdict["executable"] == sys.executable
    assert verdict["cwd_empty"] is True
    assert verdict["case"] == ["c1", ["case.toml", "input"]]  # the answer key left out
    assert verdict["candidate"] == ["input", ["main.txt", "sub"]]
    assert verdict["bytecode"] == 1
    for key in ("cwd", "tmpdir"):
        assert Path(verdict[key]).is_relative_to(workspace_parent)
        assert not Path(verdict[key]).exists()
    assert not Path(verdict["cwd"]).is_relative_to(case.directory)


def test_each_run_gets_a_fresh_working_directory(tmp_path: Path, case: Case) -> None:
    """Two runs never share a working directory: what one leaves, the next does not see."""
    rubric = write_rubric(
        tmp_path,
        """
        seen = os.listdir(".")
        Path("left-behind").write_text("x")
        print(json.dumps({"passed": True, "seen": seen, "cwd": os.getcwd()}))
        """,
    )
    first, second = (run_rubric(rubric, case, case.input) for _ in range(2))
    assert first.verdict is not None
    assert second.verdict is not None
    assert second.verdict["seen"] == []
    assert first.verdict["cwd"] != second.verdict["cwd"]


ERRORS = [
    pytest.param(
        "sys.stderr.write('usage: rubric.py CASE CANDIDATE\\n')\nsys.exit(2)\n",
        "the rubric exited with status 2 (0 is a pass, 1 a fail); its stderr ends with: "
        "usage: rubric.py CASE CANDIDATE",
        id="exit-2",
    ),
    pytest.param(
        'print(json.dumps({"passed": True}))\nsys.exit(3)\n',
        "the rubric exited with status 3 (0 is a pass, 1 a fail)",
        id="exit-3-with-verdict",
    ),
    pytest.param(
        "print('all good!')\n",
        "stdout is not one JSON object (Expecting value at line 1)",
        id="garbage",
    ),
    pytest.param(
        "pass\n",
        "the rubric printed nothing on stdout; it must print one JSON object",
        id="nothing",
    ),
    pytest.param(
        'print(json.dumps({"passed": True}))\nprint(json.dumps({"passed": True}))\n',
        "stdout holds more than one JSON value; a rubric prints one JSON object",
        id="two-objects",
    ),
    pytest.param(
        'print(json.dumps({"passed": True}))\nsys.exit(1)\n',
        'the rubric exited with status 1 but its verdict says "passed": true',
        id="exit-1-says-passed",
    ),
    pytest.param(
        'print(json.dumps({"passed": False}))\nsys.exit(0)\n',
        'the rubric exited with status 0 but its verdict says "passed": false',
        id="exit-0-says-failed",
    ),
    pytest.param(
        "print('[true]')\n",
        "the verdict is an array, not a JSON object",
        id="array",
    ),
    pytest.param(
        'print(\'{"passed": true, "passed": false}\')\n',
        "stdout is not one JSON object (the key 'passed' appears twice)",
        id="duplicate-key",
    ),
    pytest.param(
        'print(\'{"passed": true, "score": NaN}\')\n',
        "stdout is not one JSON object (NaN is not JSON)",
        id="nan",
    ),
    pytest.param(
        'sys.stdout.buffer.write(b\'{"passed": true, "reason": "\\xff"}\')\n',
        "stdout is not UTF-8 text; a rubric prints one JSON object",
        id="not-utf8",
    ),
    pytest.param(
        "raise RuntimeError('boom')\n",
        "the rubric printed nothing on stdout; it must print one JSON object; "
        "its stderr ends with: RuntimeError: boom",
        id="exception",
    ),
    pytest.param(
        "import signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
        "the rubric was killed by SIGSEGV",
        id="crash-by-signal",
    ),
    pytest.param(
        "import signal\nprint(json.dumps({'passed': True}), flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n",
        "the rubric was killed by SIGKILL",
        id="killed-after-verdict",
    ),
]


@pytest.mark.parametrize(("body", "reason"), ERRORS)
def test_anything_else_is_a_rubric_error_never_a_pass(
    tmp_path: Path, case: Case, body: str, reason: str
) -> None:
    """Another exit status, bad stdout, a contradicting verdict or a crash is status error, with why."""
    result = run_rubric(write_rubric(tmp_path, body), case, case.input)
    assert (result.status, result.reason) == ("error", reason)
    assert not result.passed


def test_an_exception_traceback_reaches_the_stderr_tail(tmp_path: Path, case: Case) -> None:
    """A crashing rubric's traceback is kept in stderr_tail for the error report."""
    result = run_rubric(write_rubric(tmp_path, "raise RuntimeError('boom')\n"), case, case.input)
    assert "Traceback" in result.stderr_tail
    assert result.stderr_tail.rstrip().endswith("RuntimeError: boom")
    assert result.exit_status == 1


VERDICTS: list[tuple[object, str | None]] = [
    ({"passed": True}, None),
    ({"passed": False, "score": 0, "reason": ""}, None),
    ({"passed": True, "score": 1.0, "details": {"tests": 3}}, None),
    ({"passed": True, "score": 0.5, "reason": "half", "case": "c1"}, None),
    ({}, 'the verdict has no "passed" key'),
    ({"passed": 1}, '"passed" must be true or false, not a number'),
    ({"passed": "true"}, '"passed" must be true or false, not a string'),
    ({"passed": None}, '"passed" must be true or false, not null'),
    ({"passed": True, "score": True}, '"score" must be a number in [0, 1], not a boolean'),
    ({"passed": True, "score": "1"}, '"score" must be a number in [0, 1], not a string'),
    ({"passed": True, "score": None}, '"score" must be a number in [0, 1], not null'),
    ({"passed": True, "score": 1.5}, '"score" must be a number in [0, 1], not 1.5'),
    ({"passed": True, "score": -0.1}, '"score" must be a number in [0, 1], not -0.1'),
    ({"passed": True, "reason": 3}, '"reason" must be a string, not a number'),
    ({"passed": True, "reason": ["a"]}, '"reason" must be a string, not an array'),
    ("passed", "the verdict is a string, not a JSON object"),
    (None, "the verdict is null, not a JSON object"),
]


@pytest.mark.parametrize(("verdict", "problem"), VERDICTS)
def test_verdict_rules_agree_with_the_published_schema(
    verdict: object, problem: str | None
) -> None:
    """verdict_problem accepts exactly what docs/rubric-verdict.schema.json accepts."""
    assert verdict_problem(verdict) == problem
    valid = jsonschema.Draft202012Validator(VERDICT_SCHEMA).is_valid(verdict)
    assert valid == (problem is None)


@pytest.mark.parametrize(("verdict", "problem"), VERDICTS[4:9])
def test_a_verdict_that_breaks_the_schema_is_an_error(
    tmp_path: Path, case: Case, verdict: object, problem: str
) -> None:
    """Printed by a real rubric that exits 0, a verdict breaking the schema is an error with its reason."""
    body = f"print(json.dumps({verdict!r}))\n"
    result = run_rubric(write_rubric(tmp_path, body), case, case.input)
    assert (result.status, result.reason) == ("error", problem)


def test_the_verdict_schema_is_valid_json_schema() -> None:
    """The committed schema is itself a valid draft 2020-12 schema."""
    jsonschema.Draft202012Validator.check_schema(VERDICT_SCHEMA)


# -- the process -----------------------------------------------------------------------


def test_timeout_kills_the_whole_process_group(
    tmp_path: Path, case: Case, workspace_parent: Path
) -> None:
    """On the case's timeout the rubric and its grandchild are killed; status timeout."""
    pid_file = tmp_path / "grandchild.pid"
    rubric = write_rubric(
        tmp_path,
        f"""
        import subprocess
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        Path({str(pid_file)!r}).write_text(str(child.pid))
        time.sleep(600)
        """,
    )
    started = time.monotonic()
    result = run_rubric(rubric, case, case.input, timeout=1.5, sandbox="none")
    assert time.monotonic() - started < 15
    assert result.status == "timeout"
    assert result.reason == "the rubric ran longer than the case's timeout of 1.5 s and was killed"
    assert result.exit_status == -signal.SIGKILL
    assert gone(int(pid_file.read_text()))
    assert list(workspace_parent.iterdir()) == []


def test_the_case_timeout_is_the_default(tmp_path: Path, case: Case) -> None:
    """Without timeout=, the case's own timeout applies."""
    short = case.model_copy(update={"timeout": 0.5})
    result = run_rubric(write_rubric(tmp_path, "time.sleep(600)\n"), short, short.input)
    assert result.status == "timeout"
    assert result.duration_s < 10


def test_what_the_rubric_leaves_running_is_killed_when_it_exits(tmp_path: Path, case: Case) -> None:
    """A background grandchild holding stdout neither delays the verdict nor outlives the run."""
    pid_file = tmp_path / "daemon.pid"
    rubric = write_rubric(
        tmp_path,
        f"""
        import subprocess
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        Path({str(pid_file)!r}).write_text(str(child.pid))
        print(json.dumps({{"passed": True}}))
        """,
    )
    started = time.monotonic()
    result = run_rubric(rubric, case, case.input, timeout=60, sandbox="none")
    assert time.monotonic() - started < 15
    assert result.status == "passed"
    assert gone(int(pid_file.read_text()))


def test_without_a_pidfd_the_exit_is_polled(
    tmp_path: Path, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where pidfd_open is missing (older kernels, macOS), verdicts and timeouts work the same."""
    monkeypatch.setattr(rubrics, "_pidfd", lambda pid: None)
    assert run_rubric(write_rubric(tmp_path, PASS), case, case.input).status == "passed"
    slow = write_rubric(tmp_path, "time.sleep(600)\n", name="slow.py")
    assert run_rubric(slow, case, case.input, timeout=0.5).status == "timeout"


def test_stdin_is_at_end_of_file(tmp_path: Path, case: Case) -> None:
    """A rubric that reads stdin gets end of file at once, never a hang."""
    rubric = write_rubric(
        tmp_path,
        """
        data = sys.stdin.read()
        print(json.dumps({"passed": data == "", "reason": repr(data)}))
        sys.exit(0 if data == "" else 1)
        """,
    )
    result = run_rubric(rubric, case, case.input, timeout=20)
    assert (result.status, result.reason) == ("passed", "''")


def test_output_floods_are_bounded_in_memory(tmp_path: Path, case: Case) -> None:
    """64 MiB on stdout and stderr: the head of stdout and the tail of stderr are kept, little else."""
    rubric = write_rubric(
        tmp_path,
        """
        chunk = b"x" * (1 << 20)
        for _ in range(64):
            sys.stdout.buffer.write(chunk)
            sys.stderr.buffer.write(chunk)
        sys.stderr.buffer.write(b"THE END")
        """,
    )
    tracemalloc.start()
    try:
        result = run_rubric(rubric, case, case.input, timeout=60, sandbox="none")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (result.status, result.reason) == (
        "error",
        f"the rubric printed more than {STDOUT_LIMIT // 1024} KiB on stdout",
    )
    assert len(result.stderr_tail) == STDERR_TAIL_LIMIT
    assert result.stderr_tail.endswith("xTHE END")
    assert peak < 8 * STDOUT_LIMIT


# -- copies --------------------------------------------------------------------------


def test_a_rubric_that_deletes_and_writes_its_inputs_changes_nothing(
    tmp_path: Path, case: Case, workspace_parent: Path
) -> None:
    """Bench and candidate are byte-for-byte unchanged whatever the rubric does to its copies."""
    candidate = tmp_path / "candidates" / "c1"
    (candidate / "src").mkdir(parents=True)
    (candidate / "src" / "app.py").write_text("print('hi')\n")
    (candidate / "run.sh").write_text("#!/bin/sh\n")
    (candidate / "run.sh").chmod(0o755)
    before = (tree_digest(case.directory), tree_digest(candidate))
    rubric = write_rubric(
        tmp_path,
        """
        import shutil
        (case_dir / "case.toml").write_text("garbage")
        (candidate_dir / "src" / "app.py").write_text("changed")
        (candidate_dir / "new-file").write_text("new")
        shutil.rmtree(case_dir / "input")
        shutil.rmtree(case_dir / "expected")  # there: the run reads the reference
        locked = candidate_dir / "locked"
        locked.mkdir()
        (locked / "f").write_text("x")
        locked.chmod(0)
        case_dir.chmod(0o500)
        print(json.dumps({"passed": True}))
        """,
    )
    result = run_rubric(rubric, case, candidate, reads_expected=True)
    assert result.status == "passed", (result.reason, result.stderr_tail)
    assert (tree_digest(case.directory), tree_digest(candidate)) == before
    assert list(workspace_parent.iterdir()) == []


# -- symbolic links: nothing outside the copied tree is reachable through one ----------------

# Passes a candidate whose answer.txt holds the case's expected answer; writes out.txt into
# the candidate it was given, as rubrics that build or test a candidate do.
LINK_RUBRIC = """
try:
    answer = (candidate_dir / "answer.txt").read_text()
except OSError as exc:
    answer = f"answer.txt: {exc.strerror}"
(candidate_dir / "out.txt").write_text("written by the rubric\\n")
passed = answer == "done\\n"
print(json.dumps({"passed": passed, "reason": answer.strip()}))
sys.exit(0 if passed else 1)
"""

SANDBOXES = pytest.mark.parametrize("sandbox", ["auto", "none"])


@dataclass
class Linked:
    """A candidate holding links, the link the run must name, where it points, and the places
    that must stay byte for byte as they were."""

    candidate: Path
    named: Path
    target: str
    watched: tuple[Path, ...]

    def digests(self) -> list[str]:
        return [tree_digest(path) for path in self.watched]


def _link(path: Path, target: str | Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)


def _links(tmp_path: Path, case: Case, shape: str) -> Linked:
    """Build the candidate of ``shape``: every shape aims at the case's answer key, another
    candidate, or a file the rubric writes through."""
    candidates = tmp_path / "candidates"
    candidate = candidates / "c1"
    candidate.mkdir(parents=True)
    other = candidates / "c2"
    other.mkdir()
    (other / "answer.txt").write_text("done\n")  # another candidate that solved it
    key = case.expected / "main.txt"
    layout = "../../case/c1/expected/main.txt"  # the documented copy layout, from the top
    named, target = candidate / "answer.txt", ""
    if shape == "absolute-file":
        target = str(key)
    elif shape == "absolute-directory":
        _link(candidate / "key", case.expected)
        named, target = candidate / "answer.txt", "key/main.txt"
    elif shape == "relative-layout":
        target = layout
    elif shape == "relative-deep":
        _link(candidate / "sub" / "deeper" / "real.txt", "../../" + layout)
        target = "sub/deeper/real.txt"
    elif shape == "link-to-link":
        _link(candidate / "hop1", "hop2")
        _link(candidate / "hop2", layout)
        target = "hop1"
    elif shape == "directory-link-then-up":
        # sub/up is the candidate's own top: inside. Lexically answer.txt stays inside
        # (sub/up/../.. is the top); resolved, sub/up is the top and ../.. climbs out of it.
        _link(candidate / "sub" / "up", "..")
        target = "sub/up/" + layout
    elif shape == "another-candidate":
        target = str(other / "answer.txt")
    elif shape == "write-through":
        (candidate / "answer.txt").write_text("no idea\n")
        named, target = candidate / "out.txt", str(key)
    _link(named, target)
    return Linked(candidate, named, target, (case.directory, candidates))


LINK_SHAPES = [
    "absolute-file",
    "absolute-directory",
    "relative-layout",
    "relative-deep",
    "link-to-link",
    "directory-link-then-up",
    "another-candidate",
    "write-through",
]


@SANDBOXES
@pytest.mark.parametrize("shape", LINK_SHAPES)
def test_a_link_leading_out_of_the_candidate_is_refused(
    tmp_path: Path, case: Case, workspace_parent: Path, sandbox: str, shape: str
) -> None:
    """No link reaches the case, the bench or another candidate: the run is an error naming it.

    Absolute links, relative ``..`` chains through the copy layout, links to
    links, links to directories, a link the rubric writes through: each makes
    the case an error before the rubric runs, with or without the sandbox,
    and the case (the bench) and the candidates stay byte for byte.
    """
    linked = _links(tmp_path, case, shape)
    before = linked.digests()
    result = run_rubric(
        write_rubric(tmp_path, LINK_RUBRIC), case, linked.candidate, sandbox=sandbox
    )
    assert result.status == "error"
    assert result.reason == (
        f"cannot copy {linked.named}: it is a symbolic link to {linked.target!r}, "
        "which leads outside the candidate"
    )
    assert result.exit_status is None  # the rubric never ran
    assert linked.digests() == before
    assert list(workspace_parent.iterdir()) == []


def test_a_link_whose_way_the_copy_cannot_look_along_is_refused(
    tmp_path: Path, case: Case, workspace_parent: Path
) -> None:
    """A link whose way passes PATH_MAX in the copy is refused: it could lead out unseen.

    ``answer.txt`` goes down 16 directories of 249-character names to
    ``up`` (a link to ``../../..``, which stays inside), then 15 levels up
    and into ``case``: read as a directory, ``up`` keeps that inside;
    followed, it lands three levels higher, and the way ends at the run's
    copy of the case (its ``expected/`` included). The copy is made by
    descriptors, so it holds such paths; the check cannot look at ``up``
    through a path that long, and refuses rather than guess it is no link.
    """
    candidate = tmp_path / "candidate"
    candidate.mkdir()
    names = [f"{n:02d}" + "n" * 247 for n in range(16)]
    here = os.open(candidate, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in names:
            os.mkdir(name, dir_fd=here)
            deeper = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=here)
            os.close(here)
            here = deeper
        os.symlink("../../..", "up", dir_fd=here)
    finally:
        os.close(here)
    target = "/".join([*names, "up", *[".."] * 15, "case"])
    (candidate / "answer.txt").symlink_to(target)
    try:
        result = run_rubric(write_rubric(tmp_path, PASS), case, candidate, sandbox="none")
        assert result.status == "error"
        assert result.reason == (
            f"cannot copy {candidate / 'answer.txt'}: it is a symbolic link to {target!r}, "
            "which this copy cannot follow to its end (a path too long, say)"
        )
        assert list(workspace_parent.iterdir()) == []
    finally:
        rubrics.remove_tree(str(candidate))


@SANDBOXES
def test_a_loop_of_links_is_refused_not_guessed(
    tmp_path: Path, case: Case, workspace_parent: Path, sandbox: str
) -> None:
    """Links that lead to each other (more than 40 hops, where the kernel gives up) are an error."""
    candidate = tmp_path / "candidate"
    _link(candidate / "answer.txt", "sub/b")
    _link(candidate / "sub" / "b", "../answer.txt")
    result = run_rubric(write_rubric(tmp_path, LINK_RUBRIC), case, candidate, sandbox=sandbox)
    assert result.status == "error"
    assert result.reason == (
        f"cannot copy {candidate / 'answer.txt'}: it is a symbolic link to 'sub/b', "
        "which goes through more than 40 links (a loop)"
    )
    assert list(workspace_parent.iterdir()) == []


@SANDBOXES
def test_a_candidate_that_is_a_link_is_refused(
    tmp_path: Path, case: Case, workspace_parent: Path, sandbox: str
) -> None:
    """A candidate directory that is itself a link (here to the case's expected/) is not followed."""
    candidate = tmp_path / "candidates" / "c1"
    candidate.parent.mkdir()
    candidate.symlink_to(case.expected, target_is_directory=True)
    result = run_rubric(write_rubric(tmp_path, LINK_RUBRIC), case, candidate, sandbox=sandbox)
    assert result.status == "error"
    assert result.reason == (
        f"cannot copy {candidate}: the candidate is a symbolic link (to {str(case.expected)!r}), "
        "not a directory of its own"
    )
    assert list(workspace_parent.iterdir()) == []


@SANDBOXES
def test_links_that_stay_inside_the_candidate_are_copied_as_links(
    tmp_path: Path, case: Case, sandbox: str
) -> None:
    """Links resolving inside the candidate (directories, chains, ``..`` that stays in, dangling)
    are copied as links and work in the copy."""
    candidate = tmp_path / "candidate"
    (candidate / "sub" / "deeper").mkdir(parents=True)
    (candidate / "sub" / "deeper" / "real.txt").write_text("done\n")
    links = {
        "answer.txt": "d/deeper/../deeper/real.txt",
        "d": "sub",
        "sub/up": "..",
        "chain": "answer.txt",
        "climb": "sub/up/sub/up/d/deeper/real.txt",
        "dangling": "not-there-yet",
    }
    for name, target in links.items():
        _link(candidate / name, target)
    rubric = write_rubric(
        tmp_path,
        LINK_RUBRIC.replace(
            "print(json.dumps({",
            "seen = {n: os.readlink(candidate_dir / n) for n in " + repr(sorted(links)) + "}\n"
            "print(json.dumps({'links': seen, 'climbed': (candidate_dir / 'climb').read_text(), ",
        ),
    )
    result = run_rubric(rubric, case, candidate, sandbox=sandbox)
    assert result.status == "passed", (result.reason, result.stderr_tail)
    assert result.verdict is not None
    assert result.verdict["links"] == links
    assert result.verdict["climbed"] == "done\n"
    assert not (candidate / "out.txt").exists()


@SANDBOXES
def test_a_case_link_leading_out_of_the_case_is_refused(
    tmp_path: Path, case: Case, sandbox: str
) -> None:
    """The case's own copy follows the same rule: a link out of the case directory is an error."""
    (case.input / "escape").symlink_to("../../../outside.txt")
    (tmp_path / "bench" / "outside.txt").write_text("not the case's\n")
    result = run_rubric(write_rubric(tmp_path, PASS), case, case.expected, sandbox=sandbox)
    assert result.status == "error"
    assert result.reason == (
        f"cannot copy {case.input / 'escape'}: it is a symbolic link to "
        "'../../../outside.txt', which leads outside the case"
    )


@pytest.mark.skipif(
    not Path("/proc/self").is_dir() or os.stat("/proc").st_dev == os.stat("/").st_dev,
    reason="needs /proc mounted on a file system of its own",
)
def test_a_case_that_is_a_link_to_the_root_is_refused_not_copied_whole(
    tmp_path: Path, workspace_parent: Path
) -> None:
    """A case directory may be a link, but one to / stops at the first mount point (/proc, …)."""
    root = tmp_path / "bench" / "cases" / "rooted"
    root.parent.mkdir(parents=True)
    root.symlink_to("/")
    case = Case(task_class="t", id="rooted", directory=root, timeout=20)
    result = run_rubric(write_rubric(tmp_path, PASS), case, tmp_path, timeout=20)
    assert result.status == "error"
    assert result.reason is not None
    assert result.reason.endswith(": it is on another file system (a mount)")
    assert list(workspace_parent.iterdir()) == []


@pytest.mark.parametrize(
    ("limit", "value", "files", "reason"),
    [
        ("COPY_BYTES_LIMIT", 1000, {"a.bin": 600, "b.bin": 600}, "holds more than 1,000 bytes"),
        ("COPY_ENTRIES_LIMIT", 7, {f"f{n}.txt": 1 for n in range(8)}, "has more than 7 entries"),
    ],
)
def test_a_tree_beyond_the_copy_limits_is_an_error_and_leaves_nothing(
    tmp_path: Path,
    case: Case,
    workspace_parent: Path,
    monkeypatch: pytest.MonkeyPatch,
    limit: str,
    value: int,
    files: dict[str, int],
    reason: str,
) -> None:
    """A candidate beyond the bytes or the entries copied from one tree (the case has 7 entries)."""
    monkeypatch.setattr(rubrics, limit, value)
    candidate = tmp_path / "candidate"
    candidate.mkdir()
    for name, size in files.items():
        (candidate / name).write_bytes(b"x" * size)
    before = tree_digest(candidate)
    result = run_rubric(write_rubric(tmp_path, PASS), case, candidate, timeout=20)
    assert result.status == "error"
    assert result.reason is not None
    assert result.reason.startswith(f"cannot copy {candidate}")
    assert result.reason.endswith(f": the tree {reason}")
    assert tree_digest(candidate) == before
    assert list(workspace_parent.iterdir()) == []


def test_a_file_just_within_the_limits_is_copied_whole(
    tmp_path: Path, case: Case, workspace_parent: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limits are inclusive: a tree of exactly the bytes allowed is copied byte for byte."""
    monkeypatch.setattr(rubrics, "COPY_BYTES_LIMIT", 1000)
    candidate = tmp_path / "candidate"
    candidate.mkdir()
    data = bytes(range(256)) * 3 + b"tail" * 58
    assert len(data) == 1000
    (candidate / "data.bin").write_bytes(data)
    rubric = write_rubric(
        tmp_path,
        """
        same = (candidate_dir / "data.bin").read_bytes() == bytes(range(256)) * 3 + b"tail" * 58
        print(json.dumps({"passed": same}))
        sys.exit(0 if same else 1)
        """,
    )
    result = run_rubric(rubric, case, candidate, timeout=20)
    assert result.status == "passed", result.reason


def test_a_fifo_in_the_candidate_is_an_error_not_a_hang(tmp_path: Path, case: Case) -> None:
    """Special files are not copied (reading one could block): the run is a rubric error."""
    candidate = tmp_path / "candidate"
    candidate.mkdir()
    os.mkfifo(candidate / "pipe")
    result = run_rubric(write_rubric(tmp_path, PASS), case, candidate, timeout=20)
    assert result.status == "error"
    assert (
        result.reason
        == f"cannot copy {candidate / 'pipe'}: it is a FIFO (named pipe), not a regular file"
    )
    assert result.exit_status is None


def test_a_missing_rubric_or_candidate_is_an_error_result(tmp_path: Path, case: Case) -> None:
    """run_rubric reports what it cannot run as an error result instead of raising."""
    missing_rubric = run_rubric(tmp_path / "nope.py", case, case.input)
    missing_candidate = run_rubric(write_rubric(tmp_path, PASS), case, tmp_path / "none")
    assert missing_rubric.status == missing_candidate.status == "error"
    assert missing_rubric.reason == f"the rubric {tmp_path / 'nope.py'} does not exist"
    assert missing_candidate.reason == f"the candidate {tmp_path / 'none'} is not a directory"


def test_no_bytecode_is_written_beside_the_rubric(tmp_path: Path, case: Case) -> None:
    """A rubric importing a helper next to it leaves no __pycache__ in the bench."""
    rubric = write_rubric(tmp_path, "import helper\nprint(json.dumps({'passed': helper.OK}))\n")
    (rubric.parent / "helper.py").write_text("OK = True\n")
    assert run_rubric(rubric, case, case.input).status == "passed"
    assert not (rubric.parent / "__pycache__").exists()


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), True, "5"])
def test_a_bad_timeout_is_a_value_error(tmp_path: Path, case: Case, timeout: object) -> None:
    """timeout= must be a positive number of seconds."""
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        run_rubric(tmp_path / "rubric.py", case, case.input, timeout=timeout)  # type: ignore[arg-type]


def test_a_hand_made_case_with_an_unsafe_id_is_refused(tmp_path: Path, case: Case) -> None:
    """The case id names the copy's directory: an id that is not a case id is a ValueError."""
    unsafe = case.model_copy(update={"id": "../escape"})
    with pytest.raises(ValueError, match="not a valid case id"):
        run_rubric(write_rubric(tmp_path, PASS), unsafe, case.input)


def test_keyboard_interrupt_kills_the_rubric_and_removes_the_copies(
    tmp_path: Path, case: Case, workspace_parent: Path
) -> None:
    """Ctrl-C during a run propagates, after the rubric's group is killed and the temporary tree removed."""
    pid_file = tmp_path / "rubric.pid"
    rubric = write_rubric(
        tmp_path,
        f"""
        import subprocess
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        Path({str(pid_file)!r}).write_text(f"{{os.getpid()}} {{child.pid}}")
        time.sleep(600)
        """,
    )

    def interrupt() -> None:
        deadline = time.monotonic() + 30
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=interrupt)
    thread.start()
    try:
        with interrupts_inside(run_rubric), pytest.raises(KeyboardInterrupt):
            run_rubric(rubric, case, case.input, timeout=120, sandbox="none")
    finally:
        thread.join()
    for pid in pid_file.read_text().split():
        assert gone(int(pid))
    assert list(workspace_parent.iterdir()) == []


BURN = """
import subprocess
BURN = "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.3: pass"
exec(BURN)
subprocess.run([sys.executable, "-c", BURN], check=True)
print(json.dumps({"passed": True}))
"""


@pytest.mark.parametrize(("sandbox", "cgroups"), [("auto", True), ("auto", False), ("none", False)])
def test_cpu_time_counts_every_process_of_the_run_or_is_unknown(
    tmp_path: Path, case: Case, monkeypatch: pytest.MonkeyPatch, sandbox: str, cgroups: bool
) -> None:
    """cpu_s covers the rubric and its children (0.6 s here); in the sandbox only a cgroup
    measures them, so without one it is None rather than bubblewrap's own few milliseconds."""
    if sandbox == "auto" and not cgroups:
        monkeypatch.setattr(cgroups_module, "discover", dict)
    elif sandbox == "auto" and not cgroups_module.discover():
        pytest.skip("no cgroup can be made here")
    result = run_rubric(write_rubric(tmp_path, BURN), case, case.expected, sandbox=sandbox)
    assert result.status == "passed", (result.reason, result.stderr_tail)
    if sandbox == "auto" and not cgroups:
        assert (result.cpu_s, result.peak_memory_mib) == (None, None)
    else:
        assert result.cpu_s is not None
        assert result.cpu_s >= 0.55
        assert result.peak_memory_mib is not None


def test_a_second_interrupt_during_the_clean_up_leaves_no_process_and_no_copy(
    tmp_path: Path, case: Case, workspace_parent: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C, then Ctrl-C again in the kill of the rubric's tree and in the removal of the copies."""
    pid_file = tmp_path / "rubric.pid"
    rubric = write_rubric(
        tmp_path,
        f"""
        import subprocess
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        Path({str(pid_file)!r}).write_text(f"{{os.getpid()}} {{child.pid}}")
        time.sleep(600)
        """,
    )
    kill_tree, remove_all = supervisor.Child._kill_tree, rubrics._remove_all
    seconds: list[str] = []

    def killing_interrupted(self: supervisor.Child) -> int:
        if not seconds:  # the second Ctrl-C, before anything is killed
            seconds.append("kill")
            raise KeyboardInterrupt
        return kill_tree(self)

    def removing_interrupted(path: str) -> None:
        if len(seconds) == 1:  # the second Ctrl-C, halfway through the removal
            seconds.append("remove")
            remove_all(os.path.join(path, "candidate"))
            raise KeyboardInterrupt
        remove_all(path)

    monkeypatch.setattr(supervisor.Child, "_kill_tree", killing_interrupted)
    monkeypatch.setattr(rubrics, "_remove_all", removing_interrupted)

    def interrupt() -> None:
        deadline = time.monotonic() + 30
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=interrupt)
    thread.start()
    try:
        with interrupts_inside(run_rubric), pytest.raises(KeyboardInterrupt):
            run_rubric(rubric, case, case.input, timeout=120, sandbox="none")
    finally:
        thread.join()
    assert seconds == ["kill", "remove"]
    for pid in pid_file.read_text().split():
        assert gone(int(pid))
    assert list(workspace_parent.iterdir()) == []


def test_run_rubrics_waits_for_every_run_through_a_second_ctrl_c(
    tmp_path: Path, case: Case, workspace_parent: Path
) -> None:
    """Ctrl-C twice, 20 ms apart, into run_rubrics: when it raises, no run, rubric or copy is left."""
    pids = tmp_path / "pids"
    pids.mkdir()
    rubric = write_rubric(
        tmp_path,
        f"""
        Path({str(pids)!r}, str(os.getpid())).touch()
        time.sleep(600)
        """,
    )
    box = rubrics.choose_sandbox("none")
    runs = [RunSpec.of(rubric, case, case.input, sandbox=box.policy)] * 3
    for _ in range(5):
        for path in pids.iterdir():
            path.unlink()

        def interrupt() -> None:
            deadline = time.monotonic() + 30
            while len(list(pids.iterdir())) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.02)
            os.kill(os.getpid(), signal.SIGINT)

        thread = threading.Thread(target=interrupt)
        thread.start()
        # The second SIGINT may land after run_rubrics has raised (its clean-up
        # was quicker than 20 ms): it is counted then, not raised into pytest.
        with interrupts_inside(rubrics.run_rubrics) as interrupts:
            try:
                with pytest.raises(KeyboardInterrupt):
                    rubrics.run_rubrics(runs, jobs=2, sandbox=box)
            finally:
                thread.join()
        assert interrupts.raised >= 1
        assert not [t.name for t in threading.enumerate() if t.name.startswith("rubric")]
        assert list(workspace_parent.iterdir()) == []
        for path in pids.iterdir():
            assert gone(int(path.name))


def test_result_json_carries_the_verdict_the_measures_and_where_it_ran() -> None:
    """A result's JSON (what the ledger stores) has every field, and reads back equal."""
    result = RubricResult(case="c1", status="failed", score=0.5, reason="no", duration_s=0.1)
    data = json.loads(result.model_dump_json())
    assert set(data) == {
        "case", "status", "score", "reason", "duration_s", "exit_status", "stderr_tail",
        "wall_s", "cpu_s", "peak_memory_mib", "sandbox", "limit", "verdict", "node",
    }  # fmt: skip
    assert data["stderr_tail"] == ""
    assert RubricResult.model_validate(data) == result


def test_a_cancel_event_stops_the_run_from_another_thread(
    tmp_path: Path, case: Case, workspace_parent: Path
) -> None:
    """Setting cancel kills the rubric's group and removes the copies; the result is an error."""
    pid_file = tmp_path / "rubric.pid"
    rubric = write_rubric(
        tmp_path,
        f"""
        Path({str(pid_file)!r}).write_text(str(os.getpid()))
        time.sleep(600)
        """,
    )
    cancel = threading.Event()

    def stop() -> None:
        deadline = time.monotonic() + 30
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        cancel.set()

    thread = threading.Thread(target=stop)
    thread.start()
    started = time.monotonic()
    try:
        result = run_rubric(rubric, case, case.input, timeout=120, cancel=cancel, sandbox="none")
    finally:
        thread.join()
    assert time.monotonic() - started < 30
    assert result.status == "error"
    assert result.reason == rubrics.CANCELLED_REASON
    assert gone(int(pid_file.read_text()))
    assert list(workspace_parent.iterdir()) == []


def test_a_run_cancelled_before_it_starts_starts_nothing(
    tmp_path: Path, case: Case, workspace_parent: Path
) -> None:
    """A cancel event already set: an error result at once, no process, no temporary directory."""
    marker = tmp_path / "ran"
    rubric = write_rubric(tmp_path, f"Path({str(marker)!r}).write_text('x')\n" + PASS)
    cancel = threading.Event()
    cancel.set()
    result = run_rubric(rubric, case, case.input, cancel=cancel)
    assert (result.status, result.reason) == ("error", rubrics.CANCELLED_REASON)
    assert not marker.exists()
    assert list(workspace_parent.iterdir()) == []


# -- found by attacking grade from the outside ---------------------------------------------


def test_a_child_that_leaves_the_group_but_not_the_session_is_killed(
    tmp_path: Path, case: Case
) -> None:
    """A child that moves to a process group of its own (setpgid, as job control does) dies too."""
    pid_file = tmp_path / "escaped.pid"
    rubric = write_rubric(
        tmp_path,
        f"""
        import subprocess
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(600)"],
            preexec_fn=os.setpgrp,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert os.getpgid(child.pid) == child.pid
        Path({str(pid_file)!r}).write_text(str(child.pid))
        print(json.dumps({{"passed": True}}))
        """,
    )
    result = run_rubric(rubric, case, case.input, timeout=60, sandbox="none")
    assert result.status == "passed", result.reason
    assert gone(int(pid_file.read_text()))


def _deep_tree(root: Path, depth: int) -> None:
    """Make ``root/d/d/…/d/leaf`` ``depth`` directories deep (without one long path)."""
    here = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=here)
            deeper = os.open("d", os.O_RDONLY, dir_fd=here)
            os.close(here)
            here = deeper
        os.close(os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=here))
    finally:
        os.close(here)


def test_a_tree_deeper_than_the_recursion_limit_is_removed(
    tmp_path: Path, case: Case, workspace_parent: Path
) -> None:
    """A rubric that leaves a tree deeper than PATH_MAX and the recursion limit: removed, no raise."""
    rubric = write_rubric(
        tmp_path,
        """
        here = os.open(".", os.O_RDONLY)
        for _ in range(3000):
            os.mkdir("deep-directory", dir_fd=here)
            deeper = os.open("deep-directory", os.O_RDONLY, dir_fd=here)
            os.close(here)
            here = deeper
        os.chmod(".", 0o500)  # and the top one read-only
        print(json.dumps({"passed": True}))
        """,
    )
    result = run_rubric(rubric, case, case.input, timeout=60, sandbox="none")
    assert result.status == "passed", result.reason
    assert list(workspace_parent.iterdir()) == []


def test_a_candidate_deeper_than_the_depth_bound_is_an_error_and_leaves_nothing(
    tmp_path: Path, case: Case, workspace_parent: Path
) -> None:
    """A candidate 1500 directories deep is refused by name of the depth bound, its copy removed."""
    candidate = tmp_path / "deep-candidate"
    candidate.mkdir()
    try:
        _deep_tree(candidate, 1500)
        result = run_rubric(write_rubric(tmp_path, PASS), case, candidate, timeout=60)
        assert result.status == "error"
        assert result.reason == (
            f"cannot copy {candidate}: the tree is deeper than {rubrics.COPY_DEPTH_LIMIT} levels"
        )
        assert list(workspace_parent.iterdir()) == []
    finally:  # pytest's own clean-up of tmp_path recurses, and fails this deep
        rubrics.remove_tree(str(candidate))
    assert not candidate.exists()


def test_a_candidate_exactly_at_the_depth_bound_is_copied_and_graded(
    tmp_path: Path, case: Case, workspace_parent: Path
) -> None:
    """A file exactly COPY_DEPTH_LIMIT levels down is copied: the bound is inclusive."""
    candidate = tmp_path / "deep-candidate"
    candidate.mkdir()
    _deep_tree(candidate, rubrics.COPY_DEPTH_LIMIT - 1)  # d/…/d/leaf: the leaf is 512 down
    rubric = write_rubric(
        tmp_path,
        f"""
        leaf = candidate_dir.joinpath(*["d"] * {rubrics.COPY_DEPTH_LIMIT - 1}, "leaf")
        print(json.dumps({{"passed": leaf.is_file()}}))
        sys.exit(0 if leaf.is_file() else 1)
        """,
    )
    result = run_rubric(rubric, case, candidate, timeout=60)
    assert result.status == "passed", result.reason
    assert list(workspace_parent.iterdir()) == []


def test_a_negative_zero_score_is_zero(tmp_path: Path, case: Case) -> None:
    """ "score": -0.0 is in [0, 1]; it comes back as 0.0, never printed as -0.00."""
    rubric = write_rubric(tmp_path, 'print(\'{"passed": true, "score": -0.0}\')\n')
    result = run_rubric(rubric, case, case.input)
    assert result.status == "passed"
    assert result.score is not None
    assert str(result.score) == "0.0"
