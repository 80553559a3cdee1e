"""Attacks on the Ray executor from outside: hostile trees, rubrics, clusters; what is left.

Each test makes runs on a real cluster on this machine (a head without CPUs
and one worker node of one CPU, so that the runs of a batch are made one
after the other by the same node process, whose ``TMPDIR`` is a directory
of this module's) and, where the contract is "as the local executor", makes
the same runs with :class:`~codegenie.eval._exec.local.LocalExecutor` and
compares status and reason (times and ``node`` aside).

An attack that is contained is a plain test. An attack that succeeds — a
real difference from what a run on one machine guarantees — is kept as a
``strict`` ``xfail`` whose reason says what goes wrong and where. No test
asserts a time: waits poll for a condition under a generous deadline.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import types
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from codegenie.eval._exec import on_ray
from codegenie.eval._exec.local import LocalExecutor
from codegenie.eval._exec.node import STAGE_PREFIX
from codegenie.eval._exec.on_ray import RETRIES, RayExecutor
from codegenie.eval._run.spec import RunSpec
from codegenie.eval.cases import Case
from codegenie.eval.errors import ExecutorUnavailable
from codegenie.eval.rubrics import (
    CANCELLED_REASON,
    STDERR_TAIL_LIMIT,
    RubricResult,
    choose_sandbox,
)

from .ray_import import Cluster, join, ray
from .test_grade import SLUG, World, script
from .warm import bench

pytestmark = [
    pytest.mark.xdist_group("ray"),
    pytest.mark.skipif(not os.path.exists("/proc/self/ns/user"), reason="needs Linux namespaces"),
]

_DEADLINE = 120.0


# -- the cluster --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def node_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The worker node's TMPDIR: everything the node's runs leave is in it."""
    return tmp_path_factory.mktemp("node-tmp")


@pytest.fixture(scope="module")
def node_cluster(node_tmp: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A head without CPUs and one worker node of one CPU whose TMPDIR is ``node_tmp``."""
    env_dir = tmp_path_factory.mktemp("node-environments")
    made = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    try:
        with pytest.MonkeyPatch.context() as env:  # what the worker node's processes inherit
            env.setenv("TMPDIR", str(node_tmp))
            env.setenv("CODEGENIE_ENV_DIR", str(env_dir))
            made.add_node(num_cpus=1)
        join(made.address)
        made.wait_for_nodes()
        yield made
    finally:
        ray.shutdown()
        made.shutdown()


@pytest.fixture(scope="module")
def box() -> Any:
    try:
        return choose_sandbox("bwrap")
    except Exception as exc:
        pytest.skip(f"no sandbox here: {exc}")


@pytest.fixture
def connected(node_cluster: Any) -> Any:
    """The module's cluster, joined by this process (a test may have left it)."""
    if not ray.is_initialized():
        join(node_cluster.address)
    return node_cluster


def _token() -> str:
    """A comment that makes a task class's digest this test's own (the node caches by digest)."""
    return f"# {uuid.uuid4().hex}\n"


def _both(specs: list[RunSpec], sandbox: Any) -> tuple[list[RubricResult], list[RubricResult]]:
    """The results of ``specs`` on the cluster, then on this machine."""
    remote = RayExecutor().run(specs, jobs=1, sandbox=sandbox)
    local = LocalExecutor().run(specs, jobs=1, sandbox=sandbox)
    return remote, local


def _said(result: RubricResult) -> tuple[str, str | None]:
    return (result.status, result.reason)


def _leftovers(node_tmp: Path) -> list[str]:
    """What is in the node's TMPDIR besides its processes' own directories (and Ray's)."""
    return sorted(
        name for name in os.listdir(node_tmp) if not name.startswith(STAGE_PREFIX) and name != "ray"
    )


def _processes_with(text: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as file:
                cmdline = file.read()
        except OSError:
            continue
        if text.encode() in cmdline:
            found.append(int(entry))
    return found


def _pid(name: str) -> int:
    """The pid a node directory's name says (``codegenie-node-<pid>-…``)."""
    return int(name[len(STAGE_PREFIX) :].split("-", maxsplit=1)[0])


def _naming_any(names: set[str]) -> list[int]:
    return sorted({pid for name in names for pid in _processes_with(name)})


def _until(condition: Callable[[], Any]) -> bool:
    deadline = time.monotonic() + _DEADLINE
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


# Lists the candidate as the rubric sees it (names as hex: bytes survive JSON), and passes.
LIST_RUBRIC = """\
import json, os, sys
top = os.fsencode(sys.argv[2])
names = []
for root, dirs, files in os.walk(top):
    for name in dirs + files:
        path = os.path.join(root, name)
        link = os.readlink(path).hex() if os.path.islink(path) else None
        names.append([os.path.relpath(path, top).hex(), link])
print(json.dumps({"passed": True, "reason": "listed", "names": sorted(names, key=str)}))
"""

PASS_RUBRIC = """\
import json
print(json.dumps({"passed": True, "reason": "ran"}))
"""


def _specs(
    tmp_path: Path, rubric_text: str, make: list[Callable[[Path, Any], Path]], box: Any
) -> list[RunSpec]:
    """One case per ``make``, each graded on the candidate ``make(root, case)`` returns."""
    rubric, cases = bench(tmp_path, _token() + rubric_text, [f"c{i}" for i in range(len(make))])
    return [
        RunSpec.of(rubric, case, each(tmp_path, case), sandbox=box.policy)
        for case, each in zip(cases, make, strict=True)
    ]


# -- 1. trees the packer or the unpacker mishandles ------------------------------------------


def _linked_candidate(root: Path, case: Case) -> Path:
    """A candidate that is itself a link, to the case's own expected/ answer."""
    (case.directory / "expected" / "answer.txt").write_text("42\n")
    (root / "linked").mkdir(exist_ok=True)
    (root / "linked" / case.id).symlink_to(case.directory / "expected")
    return root / "linked" / case.id


# Was a bug at 731da53 (the link followed by pack_tree, the run made on its target, passed);
# contained since ee0a4bc: on_ray._Batch._submit refuses the link in execute()'s words.
def test_a_candidate_that_is_a_link_is_refused_as_a_local_run_refuses_it(
    connected: Any, box: Any, tmp_path: Path
) -> None:
    specs = _specs(tmp_path, LIST_RUBRIC, [_linked_candidate], box)
    remote, local = _both(specs, box)
    assert local[0].status == "error"
    assert "the candidate is a symbolic link" in (local[0].reason or "")
    assert _said(remote[0]) == _said(local[0])


# The grader's rubric, but passing only a candidate that holds the case's secret answer.
ANSWER_RUBRIC = """\
import json, sys
from pathlib import Path
answer = Path(sys.argv[2], "answer.txt")
passed = answer.is_file() and answer.read_text() == "secret-answer\\n"
print(json.dumps({"passed": passed, "reason": "right" if passed else "wrong"}))
sys.exit(0 if passed else 1)
"""


# Was a bug at 731da53: 'passed' under --executor ray, stored in the ledger, then answered
# 'passed' from the store to a LOCAL grade. Contained since ee0a4bc.
def test_a_candidate_linked_to_the_expected_answer_does_not_pass_through_the_cli(
    connected: Any, box: Any, tmp_path: Path
) -> None:
    world = World(tmp_path)
    (world.package / "rubric.py").write_text(_token() + ANSWER_RUBRIC, encoding="utf-8")
    world.case("case-0", None)
    (world.cases / "case-0" / "expected" / "answer.txt").write_text("secret-answer\n")
    (world.candidates / "case-0").symlink_to(world.cases / "case-0" / "expected")
    local = world.grade("--format", "json", "--no-cache")
    assert json.loads(local.stdout)["results"][0]["status"] == "error", local.stdout
    remote = world.grade(
        "--format", "json", "--executor", "ray", "--ray-address", connected.address
    )
    local_again = world.grade("--format", "json")  # the ledger is on: what did Ray store?
    statuses = (
        json.loads(remote.stdout)["results"][0]["status"],
        json.loads(local_again.stdout)["results"][0]["status"],
    )
    assert statuses == ("error", "error"), (remote.stdout, local_again.stdout)


def _absolute_link(root: Path, case: Case) -> Path:
    made = root / "absolute" / case.id
    made.mkdir(parents=True)
    (made / "evil").symlink_to("/etc/passwd")
    return made


def _climbing_link(root: Path, case: Case) -> Path:
    made = root / "climbing" / case.id
    made.mkdir(parents=True)
    (made / "evil").symlink_to("../../../../../../../../etc")
    return made


def _link_then_climb(root: Path, case: Case) -> Path:
    """A link to a directory inside, then a ``..`` chain from "under" it that leaves."""
    made = root / "through" / case.id
    (made / "a" / "b").mkdir(parents=True)
    (made / "down").symlink_to("a/b")
    (made / "up").symlink_to("down/../../../outside")
    (root / "through" / "outside").mkdir(exist_ok=True)
    return made


def _link_in_the_case(root: Path, case: Case) -> Path:
    """A link out of the case (the candidate is the case's input/, as check --rubrics runs)."""
    (case.directory / "evil").symlink_to("/etc")
    return case.directory / "input"


_ESCAPES = [_absolute_link, _climbing_link, _link_then_climb, _link_in_the_case]


@pytest.mark.parametrize("make", _ESCAPES, ids=lambda f: f.__name__.strip("_"))
def test_a_link_that_leaves_the_candidate_is_an_error_on_the_node_too(
    connected: Any, box: Any, tmp_path: Path, node_tmp: Path, make: Any
) -> None:
    before = _leftovers(node_tmp)
    specs = _specs(tmp_path, LIST_RUBRIC, [make], box)
    remote, local = _both(specs, box)
    assert (remote[0].status, local[0].status) == ("error", "error")
    assert "which leads outside the c" in (remote[0].reason or "")
    assert _leftovers(node_tmp) == before  # nothing made beside the node's own directory


# Was a bug at 731da53 (the reason named the node's staging path); contained since ee0a4bc
# (node.run_shipped rewrites the case's and candidate's paths too).
@pytest.mark.parametrize("make", _ESCAPES, ids=lambda f: f.__name__.strip("_"))
def test_a_link_that_leaves_the_candidate_gets_the_local_reason(
    connected: Any, box: Any, tmp_path: Path, make: Any
) -> None:
    specs = _specs(tmp_path, LIST_RUBRIC, [make], box)
    remote, local = _both(specs, box)
    assert _said(remote[0]) == _said(local[0])


def _fifo(root: Path, case: Case) -> Path:
    made = root / "fifo" / case.id
    made.mkdir(parents=True)
    os.mkfifo(made / "pipe")
    return made


def _socket(root: Path, case: Case) -> Path:
    made = root / "sock" / case.id
    made.mkdir(parents=True)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(made / "s"))
    return made


def _missing(root: Path, case: Case) -> Path:
    return root / "nowhere" / case.id


def _a_file(root: Path, case: Case) -> Path:
    (root / "files").mkdir(exist_ok=True)
    (root / "files" / case.id).write_text("not a directory\n")
    return root / "files" / case.id


_UNSENDABLE = [_fifo, _socket, _missing, _a_file]


@pytest.mark.parametrize("make", _UNSENDABLE, ids=lambda f: f.__name__.strip("_"))
def test_a_candidate_that_cannot_be_sent_is_an_error_never_a_verdict(
    connected: Any, box: Any, tmp_path: Path, make: Any
) -> None:
    specs = _specs(tmp_path, LIST_RUBRIC, [make], box)
    remote, local = _both(specs, box)
    assert (remote[0].status, local[0].status) == ("error", "error")
    assert remote[0].node is None  # refused on the driver, nothing submitted


# Was a bug at 731da53 ('cannot send the candidate …' for what a copy words otherwise);
# contained since ee0a4bc.
@pytest.mark.parametrize("make", _UNSENDABLE, ids=lambda f: f.__name__.strip("_"))
def test_a_candidate_that_cannot_be_sent_gets_the_local_reason(
    connected: Any, box: Any, tmp_path: Path, make: Any
) -> None:
    specs = _specs(tmp_path, LIST_RUBRIC, [make], box)
    remote, local = _both(specs, box)
    assert _said(remote[0]) == _said(local[0])


# Was a bug the review found; this test holds its fix.
def test_a_refusal_on_the_driver_is_the_result_a_local_refusal_is(
    connected: Any, box: Any, tmp_path: Path
) -> None:
    specs = _specs(tmp_path, LIST_RUBRIC, [_linked_candidate], box)
    remote, local = _both(specs, box)
    assert _without_times(remote[0]) == _without_times(local[0])


def _without_times(result: RubricResult) -> dict[str, Any]:
    return result.model_dump(exclude={"duration_s", "wall_s", "cpu_s", "peak_memory_mib", "node"})


def test_a_task_class_holding_a_socket_cannot_be_sent_and_its_runs_say_so(
    connected: Any, box: Any, tmp_path: Path
) -> None:
    """A documented difference (distributed.md): locally mounted, on a cluster sent, and a
    socket (a FIFO, a device, a mount, a tree beyond the copies' bounds) cannot be sent."""
    rubric, cases = bench(tmp_path, _token() + PASS_RUBRIC, ["c0"])
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(rubric.parent / "dev.sock"))
    specs = [RunSpec.of(rubric, cases[0], cases[0].input, sandbox=box.policy)]
    remote, local = _both(specs, box)
    assert _said(local[0]) == ("passed", "ran")
    assert remote[0].status == "error"
    assert remote[0].reason == (
        f"cannot send the task class {rubric.parent / 'dev.sock'}: it is a socket, "
        "not a regular file"
    )


def _odd_names(root: Path, case: Case) -> Path:
    made = root / "odd" / case.id
    made.mkdir(parents=True)
    top = os.fsencode(made)
    for name in (b"new\nline", b"back\\slash", b"\xff\xfe-not-utf8", b"tab\t", b" lead"):
        with open(os.path.join(top, name), "wb") as file:
            file.write(name)
    os.mkdir(os.path.join(top, b"dir-\xc3"))
    os.symlink(b"../\xff\xfe-not-utf8", os.path.join(top, b"dir-\xc3", b"link-\x80"))
    os.chmod(os.path.join(top, b"back\\slash"), 0o751)
    return made


def _hard_link(root: Path, case: Case) -> Path:
    outside = root / "outside.txt"
    outside.write_text("outside\n")
    made = root / "hard" / case.id
    made.mkdir(parents=True)
    os.link(outside, made / "h")
    return made


@pytest.mark.parametrize("make", [_odd_names, _hard_link], ids=["odd-names", "hard-link"])
def test_odd_names_and_hard_links_arrive_as_a_local_run_sees_them(
    connected: Any, box: Any, tmp_path: Path, make: Any
) -> None:
    specs = _specs(tmp_path, LIST_RUBRIC, [make], box)
    remote, local = _both(specs, box)
    assert local[0].status == "passed"
    assert (_said(remote[0]), remote[0].verdict) == (_said(local[0]), local[0].verdict)


def _plain(root: Path, case: Case) -> Path:
    """An ordinary candidate: one file."""
    made = root / "plain" / case.id
    made.mkdir(parents=True)
    (made / "x.txt").write_text("x\n")
    return made


def _beyond_path_max(root: Path, case: Case) -> Path:
    """30 levels of 200-character names: 6,000 characters, within the 512 levels of a copy."""
    made = root / "deep" / case.id
    made.mkdir(parents=True)
    fd = os.open(made, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(30):
            os.mkdir("d" * 200, dir_fd=fd)
            inner = os.open("d" * 200, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("leaf", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    return made


# Was a bug the review found; this test holds its fix.
def test_a_candidate_deeper_than_path_max_is_run_as_a_local_run_runs_it(
    connected: Any, box: Any, tmp_path: Path
) -> None:
    specs = _specs(tmp_path, PASS_RUBRIC, [_beyond_path_max], box)
    remote, local = _both(specs, box)
    assert _said(local[0]) == ("passed", "ran")
    assert _said(remote[0]) == _said(local[0])


def test_an_exception_on_the_node_is_an_error_result_never_a_verdict(
    connected: Any, box: Any, tmp_path: Path, node_tmp: Path
) -> None:
    """run_shipped raising (here: a sandbox name no node knows) comes back as an error, once."""
    specs = _specs(tmp_path, PASS_RUBRIC, [_plain], box)
    bogus: Any = types.SimpleNamespace(name="bogus")
    [result] = RayExecutor().run(specs, jobs=1, sandbox=bogus)
    assert result.status == "error"
    assert (result.reason or "").startswith("the run could not be completed on the Ray cluster")
    assert _leftovers(node_tmp) == []
    live = [d for d in node_tmp.glob(f"{STAGE_PREFIX}*") if os.path.exists(f"/proc/{_pid(d.name)}")]
    assert not [p for d in live for p in d.iterdir() if p.name.startswith("run-")]


# Was a bug the review found; this test holds its fix.
def test_an_exception_on_the_node_says_what_it_was(
    connected: Any, box: Any, tmp_path: Path
) -> None:
    specs = _specs(tmp_path, PASS_RUBRIC, [_plain], box)
    bogus: Any = types.SimpleNamespace(name="bogus")
    [result] = RayExecutor().run(specs, jobs=1, sandbox=bogus)
    assert "\x1b" not in (result.reason or "")
    assert "ValueError: sandbox must be one of" in (result.reason or "")


def test_a_candidate_changed_after_its_digest_was_read_is_an_error(
    connected: Any, box: Any, tmp_path: Path
) -> None:
    """The driver read the digest (as grade does for the ledger), then the candidate changed."""
    rubric, cases = bench(tmp_path, _token() + PASS_RUBRIC, ["c0"])
    candidate = tmp_path / "candidates" / "c0"
    candidate.mkdir(parents=True)
    (candidate / "x.txt").write_text("as read\n")
    spec = RunSpec.of(rubric, cases[0], candidate, sandbox=box.policy).read()
    (candidate / "x.txt").write_text("changed since\n")
    [result] = RayExecutor().run([spec], jobs=1, sandbox=box)
    assert result.status == "error"
    assert "the candidate hashes to another digest than the driver read" in (result.reason or "")
    # (A local run of the same spec runs the changed tree and passes, under the old key.)


# Imports the candidate's solution module and passes only the honest value.
IMPORT_RUBRIC = """\
import json, sys
sys.path.insert(0, sys.argv[2])
import solution
passed = solution.VALUE == "honest"
print(json.dumps({"passed": passed, "reason": solution.VALUE}))
sys.exit(0 if passed else 1)
"""


def _solution(root: Path, name: str, *, forged: bool) -> Path:
    """A candidate whose solution.py says "honest"; ``forged``: a .pyc beside it says otherwise.

    The .pyc's header names the source's mtime and size, as Python checks
    them: a copy keeps both, so the interpreter loads the .pyc, not the source.
    """
    import importlib._bootstrap_external as external
    import sys

    made = root / name
    made.mkdir(parents=True)
    source = made / "solution.py"
    source.write_text('VALUE = "honest"\n')
    if forged:
        status = source.stat()
        code = compile('VALUE = "forged"\n', str(source), "exec")
        pyc = external._code_to_timestamp_pyc(code, int(status.st_mtime), status.st_size)  # type: ignore[attr-defined]
        (made / "__pycache__").mkdir()
        (made / "__pycache__" / f"solution.{sys.implementation.cache_tag}.pyc").write_bytes(pyc)
    return made


def test_a_candidate_s_pycache_is_left_home_on_the_node_as_on_one_machine(
    connected: Any, box: Any, tmp_path: Path
) -> None:
    """A forged .pyc is never loaded: neither a copy nor a node's tree carries __pycache__."""
    rubric, cases = bench(tmp_path, _token() + IMPORT_RUBRIC, ["c0"])
    specs = [
        RunSpec.of(
            rubric,
            cases[0],
            # One name for both: the name CANDIDATE_DIR keeps is in the key.
            _solution(tmp_path / name, "candidate", forged=forged),
            sandbox=box.policy,
        )
        for name, forged in (("honest", False), ("forged", True))
    ]
    remote, local = _both(specs, box)
    assert [_said(r) for r in local] == [("passed", "honest"), ("passed", "honest")]
    assert [_said(r) for r in remote] == [_said(r) for r in local]


# Was a bug the review found (every executor): the key ignored __pycache__ and the copies
# carried it, so one key had two verdicts. Now no run reads what its key does not cover.
def test_a_candidate_s_pycache_changes_nothing_its_key_does_not_cover(
    tmp_path: Path, box: Any
) -> None:
    rubric, cases = bench(tmp_path, _token() + IMPORT_RUBRIC, ["c0"])
    specs = [
        RunSpec.of(
            rubric,
            cases[0],
            # One name for both: the name CANDIDATE_DIR keeps is in the key.
            _solution(tmp_path / name, "candidate", forged=forged),
            sandbox=box.policy,
        )
        for name, forged in (("honest", False), ("forged", True))
    ]
    local = LocalExecutor().run(specs, jobs=1, sandbox=box)
    assert [r.status for r in local] == ["passed", "passed"]
    assert specs[0].read().key() == specs[1].read().key()


# -- the sweep of a node's leftovers -------------------------------------------------------------


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    assert not os.path.exists(f"/proc/{child.pid}")
    return child.pid


def test_the_sweep_removes_only_dead_processes_directories_and_never_follows_a_link(
    tmp_path: Path,
) -> None:
    from codegenie.eval._exec.node import sweep_node_directories

    parent = tmp_path / "tmp"
    parent.mkdir()
    dead = _dead_pid()
    precious = tmp_path / "precious"
    (precious / "sub").mkdir(parents=True)
    (precious / "sub" / "file").write_text("keep\n")
    gone = parent / f"{STAGE_PREFIX}{dead}-gone"
    (gone / "ro" / "deeper").mkdir(parents=True)
    (gone / "ro" / "deeper" / "f").write_text("x")
    (gone / "escape").symlink_to(precious)  # inside a swept directory: unlinked, not followed
    os.chmod(gone / "ro" / "deeper", 0o500)
    os.chmod(gone / "ro", 0o500)
    (parent / f"{STAGE_PREFIX}{dead}-link").symlink_to(precious)  # the name, as a link
    alive = parent / f"{STAGE_PREFIX}{os.getpid()}-alive"
    alive.mkdir()
    (parent / f"{STAGE_PREFIX}notapid-x").mkdir()
    (parent / "codegenie-worker-other").mkdir()
    sweep_node_directories(str(parent))
    assert sorted(os.listdir(parent)) == sorted(
        ["codegenie-worker-other", f"{STAGE_PREFIX}notapid-x", alive.name]
    )
    assert (precious / "sub" / "file").read_text() == "keep\n"


def test_the_sweep_of_killed_processes_removes_theirs_alone_once_each_has_ended(
    tmp_path: Path,
) -> None:
    """Given the pids it ended, the sweep removes their directories, not a living one's nor others'."""
    from codegenie.eval._exec.node import sweep_node_directories

    dead, other = _dead_pid(), _dead_pid()
    zombie = subprocess.Popen(["true"])  # ended, not reaped: a killed worker nobody reaped yet
    try:
        while not os.path.exists(f"/proc/{zombie.pid}") or _state(zombie.pid) != "Z":
            time.sleep(0.01)
        names = {pid: f"{STAGE_PREFIX}{pid}-x" for pid in (dead, other, zombie.pid, os.getpid())}
        for name in names.values():
            (tmp_path / name / "sub").mkdir(parents=True)
        sweep_node_directories(str(tmp_path), {dead, zombie.pid, os.getpid()})
        assert sorted(os.listdir(tmp_path)) == sorted([names[other], names[os.getpid()]])
    finally:
        zombie.wait()


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as file:
        return file.read().rpartition(b")")[2].split()[0].decode()


# -- 2. results forged or corrupted ------------------------------------------------------------

NESTED_RUBRIC = """\
import sys
depth = int(open(sys.argv[2] + "/depth.txt").read())
print('{"passed": true, "reason": "nested", "x": ' + "[" * depth + "]" * depth + "}")
"""


# Was a bug the review found; this test holds its fix.
def test_a_deeply_nested_verdict_is_judged_as_a_local_run_judges_it(
    connected: Any, box: Any, tmp_path: Path
) -> None:
    def nested(root: Path, case: Case) -> Path:
        made = root / "nested" / case.id
        made.mkdir(parents=True)
        (made / "depth.txt").write_text("600")
        return made

    specs = _specs(tmp_path, NESTED_RUBRIC, [nested], box)
    remote, local = _both(specs, box)
    assert _said(local[0]) == ("passed", "nested")
    assert "RecursionError" not in (remote[0].reason or "")
    assert _said(remote[0]) == _said(local[0])


def test_a_shallow_nested_verdict_and_huge_output_are_judged_as_locally(
    connected: Any, box: Any, tmp_path: Path
) -> None:
    huge = "import sys\nsys.stderr.write('E' * 5_000_000)\nsys.stdout.write('{' * 2_000_000)\n"
    rubric, cases = bench(tmp_path, _token() + huge, ["c0"])
    specs = [RunSpec.of(rubric, cases[0], cases[0].input, sandbox=box.policy)]
    remote, local = _both(specs, box)
    assert _said(remote[0]) == _said(local[0])
    assert remote[0].reason == "the rubric printed more than 1024 KiB on stdout"
    assert remote[0].stderr_tail == local[0].stderr_tail

    def nested(root: Path, case: Case) -> Path:
        made = root / "shallow" / case.id
        made.mkdir(parents=True)
        (made / "depth.txt").write_text("300")
        return made

    specs = _specs(tmp_path / "n", NESTED_RUBRIC, [nested], box)
    remote, local = _both(specs, box)
    assert (_said(remote[0]), remote[0].verdict) == (("passed", "nested"), local[0].verdict)


# Prints its own file (the task class's path) in every place a result carries text.
PATHS_RUBRIC = """\
import json, sys
here = __file__
sys.stderr.write((here + "\\n") * 4000)
print(json.dumps({"passed": True, "reason": here, "files": [here], here: "key"}))
"""


def test_paths_of_the_node_s_task_class_in_values_are_the_driver_s(
    connected: Any, box: Any, tmp_path: Path
) -> None:
    rubric, cases = bench(tmp_path, _token() + PATHS_RUBRIC, ["c0"])
    specs = [RunSpec.of(rubric, cases[0], cases[0].input, sandbox=box.policy)]
    remote, local = _both(specs, box)
    assert _said(remote[0]) == _said(local[0]) == ("passed", str(rubric))
    assert remote[0].verdict is not None
    assert remote[0].verdict["files"] == [str(rubric)]


# Was a bug the review found; this test holds its fix.
def test_a_verdict_key_naming_the_rubric_names_the_driver_s(
    connected: Any, box: Any, tmp_path: Path
) -> None:
    rubric, cases = bench(tmp_path, _token() + PATHS_RUBRIC, ["c0"])
    specs = [RunSpec.of(rubric, cases[0], cases[0].input, sandbox=box.policy)]
    remote, local = _both(specs, box)
    assert remote[0].verdict is not None
    assert local[0].verdict is not None
    assert sorted(remote[0].verdict) == sorted(local[0].verdict)


# Was a bug the review found; this test holds its fix.
def test_a_stderr_tail_naming_the_rubric_is_the_local_tail(
    connected: Any, box: Any, tmp_path: Path
) -> None:
    # A driver path longer than the node's ($TMPDIR/codegenie-node-<pid>-<8>/<32 hex>/probe).
    deep = tmp_path / ("long-" * 30)
    rubric, cases = bench(deep, _token() + PATHS_RUBRIC, ["c0"])
    specs = [RunSpec.of(rubric, cases[0], cases[0].input, sandbox=box.policy)]
    remote, local = _both(specs, box)
    assert len(local[0].stderr_tail.encode()) <= STDERR_TAIL_LIMIT
    assert len(remote[0].stderr_tail.encode()) <= STDERR_TAIL_LIMIT
    assert remote[0].stderr_tail == local[0].stderr_tail


# Says the name of the directory it was run from.
NAME_RUBRIC = """\
import json, os
print(json.dumps({"passed": True, "reason": os.path.basename(os.path.dirname(__file__))}))
"""


# Was a bug the review found; this test holds its fix.
def test_twin_task_classes_each_run_from_a_directory_of_their_own_name(
    connected: Any, box: Any, tmp_path: Path
) -> None:
    text = _token() + NAME_RUBRIC
    alpha, alpha_cases = bench(tmp_path, text, ["c0"], name="alpha")
    beta, beta_cases = bench(tmp_path, text, ["c0"], name="beta")
    specs = [
        RunSpec.of(alpha, alpha_cases[0], alpha_cases[0].input, sandbox=box.policy),
        RunSpec.of(beta, beta_cases[0], beta_cases[0].input, sandbox=box.policy),
    ]
    assert specs[0].read().task_class.digest == specs[1].read().task_class.digest
    remote, local = _both(specs, box)
    assert [r.reason for r in local] == ["alpha", "beta"]
    assert [r.reason for r in remote] == ["alpha", "beta"]


# Tries to rewrite its task class's data file (the node's unpacked, cached copy), then
# reports what it read before.
TAMPER_RUBRIC = """\
import hashlib, json, os, sys
mode = open(os.path.join(sys.argv[2], "mode.txt")).read().strip()
data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data.txt")
seen = open(data).read().strip()
wrote = "no"
if mode == "tamper":
    try:
        os.chmod(data, 0o644)
        with open(data, "w") as file:
            file.write("tampered\\n")
        os.chmod(os.path.abspath(__file__), 0o644)
        with open(os.path.abspath(__file__), "a") as file:
            file.write("\\n# tampered\\n")
        wrote = "yes"
    except OSError as exc:
        wrote = exc.strerror
# Which copy of the task class this is (one directory a node process), hashed: the
# node's paths in a result are given back as the driver's.
where = hashlib.sha256(os.path.dirname(os.path.abspath(__file__)).encode()).hexdigest()
print(json.dumps({"passed": True, "reason": f"saw {seen}; wrote {wrote}; in {where}"}))
"""


def _seen(results: list[RubricResult]) -> list[tuple[str, str]]:
    """Each run's ``saw ...; wrote ...`` and which copy of the task class it ran (a hash)."""
    found = []
    for result in results:
        said, _, where = (result.reason or "").rpartition("; in ")
        found.append((said, where))
    return found


def _tamper_bench(tmp_path: Path, sandbox: Any) -> list[RunSpec]:
    rubric, cases = bench(tmp_path, _token() + TAMPER_RUBRIC, ["a-tamper", "b-look"])
    (rubric.parent / "data.txt").write_text("original\n")
    (cases[0].input / "mode.txt").write_text("tamper")
    (cases[1].input / "mode.txt").write_text("look")
    return [RunSpec.of(rubric, case, case.input, sandbox=sandbox.policy) for case in cases]


def test_a_sandboxed_rubric_cannot_alter_the_node_s_cached_task_class(
    connected: Any, box: Any, tmp_path: Path
) -> None:
    specs = _tamper_bench(tmp_path, box)
    first = RayExecutor().run(specs, jobs=1, sandbox=box)
    later = RayExecutor().run(specs[1:], jobs=1, sandbox=box)  # another batch, same node
    assert [said for said, _ in _seen(first)] == [
        "saw original; wrote Read-only file system",
        "saw original; wrote no",
    ]
    assert [said for said, _ in _seen(later)] == ["saw original; wrote no"]


def test_under_sandbox_none_a_rubric_rewrites_the_node_s_cached_task_class(
    connected: Any, tmp_path: Path
) -> None:
    """Documented (rubrics.md: under ``none`` a rubric writes anywhere you can), but note:

    on one machine the tampering is in the bench (the user sees it, the next
    command's digest changes); on Ray it is in the node's cached copy only,
    checked once a process, so it lasts for every later run of that task
    class in that node process, later batches included, while the driver's
    tree (and the digest, hence the ledger key) says "original". A run Ray
    gives to another of the node's processes unpacks a copy of its own and
    sees the original. Which process takes a task, and in which order a
    batch's tasks run, are Ray's: the tampering is a batch of its own, and
    each later run is judged by the copy it ran.
    """
    none = choose_sandbox("none")
    specs = _tamper_bench(tmp_path, none)
    [(said, tampered)] = _seen(RayExecutor().run(specs[:1], jobs=1, sandbox=none))
    assert said == "saw original; wrote yes"
    later = [RayExecutor().run(specs[1:], jobs=1, sandbox=none) for _ in range(2)]
    for said, where in _seen(later[0] + later[1]):
        assert said == f"saw {'tampered' if where == tampered else 'original'}; wrote no"
    assert Path(specs[0].task_class.path, "data.txt").read_text() == "original\n"


# -- 3. cluster failures --------------------------------------------------------------------

# Becomes a process naming the candidate's marker that sleeps: a run that can be seen.
HANG_RUBRIC = """\
import os, sys
marker = open(os.path.join(sys.argv[2], "mode.txt")).read().strip()
os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", marker])
"""


@pytest.mark.parametrize("force", [True, False], ids=["force", "interrupt"])
def test_a_task_cancelled_from_outside_is_an_error_and_leaves_no_process(
    connected: Any, box: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, force: bool
) -> None:
    marker = f"codegenie-attack-{uuid.uuid4().hex}"
    rubric, cases = bench(tmp_path, _token() + HANG_RUBRIC, ["c0", "c1"])
    for case in cases:
        (case.input / "mode.txt").write_text(marker)
    specs = [RunSpec.of(rubric, case, case.input, sandbox=box.policy) for case in cases]
    refs: list[Any] = []
    submit = on_ray._Batch._submit

    def spying(self: Any, index: int) -> Any:
        ref = submit(self, index)
        refs.append(ref)
        return ref

    monkeypatch.setattr(on_ray._Batch, "_submit", spying)
    results: list[RubricResult] = []
    batch = threading.Thread(
        target=lambda: results.extend(RayExecutor().run(specs, jobs=1, sandbox=box))
    )
    batch.start()
    try:
        assert _until(lambda: _processes_with(marker)), "the first run did not start"
        for ref in list(refs):
            ray.cancel(ref, force=force)
    finally:
        batch.join(_DEADLINE)
    assert not batch.is_alive()
    assert [r.status for r in results] == ["error", "error"]
    assert all(r.reason == CANCELLED_REASON for r in results), [r.reason for r in results]
    assert _until(lambda: not _processes_with(marker)), _processes_with(marker)


# Under --sandbox none: counts its runs in a file outside, then kills the Ray worker that
# runs it (its first ancestor whose command line Ray made "ray::…").
KILLER_RUBRIC = """\
import os, signal, sys
counter = open(os.path.join(sys.argv[2], "mode.txt")).read().strip()
with open(counter, "a") as file:
    file.write("run\\n")
pid = os.getppid()
while pid > 1:
    with open(f"/proc/{pid}/cmdline", "rb") as file:
        if file.read().startswith(b"ray::"):
            os.kill(pid, signal.SIGKILL)
            break
    with open(f"/proc/{pid}/stat") as file:
        pid = int(file.read().rsplit(")", 1)[1].split()[1])
print('{"passed": true}')
"""


def test_a_run_whose_worker_dies_is_retried_then_an_error_never_a_verdict(
    connected: Any, tmp_path: Path
) -> None:
    none = choose_sandbox("none")
    counter = tmp_path / "runs.txt"
    rubric, cases = bench(tmp_path, _token() + KILLER_RUBRIC, ["c0"])
    (cases[0].input / "mode.txt").write_text(str(counter))
    specs = [RunSpec.of(rubric, cases[0], cases[0].input, sandbox=none.policy)]
    [result] = RayExecutor().run(specs, jobs=1, sandbox=none)
    assert result.status == "error"
    assert (result.reason or "").startswith("the run could not be completed on the Ray cluster")
    # Retried as documented (system failures): the rubric ran once and RETRIES more times.
    assert counter.read_text().count("run") == 1 + RETRIES


# -- 4. leftovers -----------------------------------------------------------------------------


def test_a_command_leaves_only_the_documented_directories_and_the_next_one_sweeps_them(
    connected: Any, box: Any, tmp_path: Path, node_tmp: Path
) -> None:
    world = World(tmp_path)
    for index in range(3):
        world.case(f"case-{index}", "pass")
    address = ("--executor", "ray", "--ray-address", connected.address, "--no-cache")
    mine = set(os.listdir(node_tmp))  # this process's job: its node processes live on
    first = world.grade(*address)
    assert first.returncode == 0, first.stderr
    assert _leftovers(node_tmp) == []
    after_first = set(os.listdir(node_tmp)) - mine
    assert after_first, "the command's node process made no directory"
    # The command's worker processes end with its job (killed, no atexit): their
    # directories stay until the next command's first run sweeps them.
    pids = {_pid(name) for name in after_first}
    assert _until(lambda: not any(os.path.exists(f"/proc/{pid}") for pid in pids))
    # Nothing the command started on the node (bubblewrap, a zygote) names its directories.
    assert _until(lambda: not _naming_any(after_first)), _naming_any(after_first)
    second = world.grade(*address)
    assert second.returncode == 0, second.stderr
    assert not (after_first & set(os.listdir(node_tmp)))
    assert _leftovers(node_tmp) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_a_signalled_command_leaves_no_process_and_nothing_outside_its_directories(
    connected: Any, box: Any, tmp_path: Path, node_tmp: Path, signum: int
) -> None:
    world = World(tmp_path)
    marker = f"codegenie-attack-{uuid.uuid4().hex}"
    (world.package / "rubric.py").write_text(_token() + HANG_RUBRIC, encoding="utf-8")
    for index in range(3):
        world.case(f"case-{index}", marker)
    before = set(os.listdir(node_tmp))
    address = connected.address
    process = subprocess.Popen(
        [script(), "grade", SLUG, "candidates", "--executor", "ray", "--ray-address", address],
        cwd=world.bench.base,
        env=world.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert _until(lambda: _processes_with(marker)), "the run did not start"
        process.send_signal(signum)
        _, err = process.communicate(timeout=_DEADLINE)
        # SIGKILL: nothing of the driver runs; Ray ends the dead driver's job and its workers.
        assert process.returncode == (-signum if signum == signal.SIGKILL else 128 + signum), err
        assert _until(lambda: not _processes_with(marker)), _processes_with(marker)
        # Nothing of the command (bubblewrap, a zygote) names its node directories any more.
        made = set(os.listdir(node_tmp)) - before
        assert made, "the command's node process made no directory"
        assert _until(lambda: not _naming_any(made)), _naming_any(made)
        assert _leftovers(node_tmp) == []
        assert sorted(os.listdir(world.tmp)) == []  # the driver's TMPDIR: nothing either
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


_ON_RAY = ("--executor", "ray", "--ray-address")


# Under --sandbox none the rubric's process sleeps, and so does a child it started (in its
# session, not a daemon): what Ctrl-C on one machine kills with the rubric's session.
CHILD_HANG_RUBRIC = """\
import os, subprocess, sys
marker = open(os.path.join(sys.argv[2], "mode.txt")).read().strip()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", marker, "child"])
os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", marker])
"""


@pytest.mark.parametrize("rubric_text", [HANG_RUBRIC, CHILD_HANG_RUBRIC], ids=["alone", "child"])
def test_an_interrupted_command_under_sandbox_none_leaves_no_rubric_running(
    connected: Any, tmp_path: Path, rubric_text: str
) -> None:
    """Contained as observed; no parent-death signal of codegenie's does it (Ray's cleanup)."""
    world = World(tmp_path)
    marker = f"codegenie-attack-{uuid.uuid4().hex}"
    (world.package / "rubric.py").write_text(_token() + rubric_text, encoding="utf-8")
    world.case("case-0", marker)
    address = connected.address
    process = subprocess.Popen(
        [script(), "grade", SLUG, "candidates", "--sandbox", "none", *_ON_RAY, address],
        cwd=world.bench.base,
        env=world.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        want = 2 if rubric_text == CHILD_HANG_RUBRIC else 1
        assert _until(lambda: len(_processes_with(marker)) >= want), "the run did not start"
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=_DEADLINE)
        assert process.returncode == 128 + signal.SIGINT, err
        # The bubblewrap runs of the tests above are gone within a second or two.
        deadline = time.monotonic() + 15.0
        while _processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _processes_with(marker)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pid in _processes_with(marker):  # the orphaned rubric this test made
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_a_command_with_its_own_ray_instance_leaves_only_node_directories_in_tmpdir(
    tmp_path: Path,
) -> None:
    """Documented (distributed.md): the node directories stay until a later command sweeps them.

    So after ``grade --executor ray`` without an address, the task class as
    unpacked (the bench's rubric and data) and the warm workers' directories
    stay in the user's TMPDIR until the next Ray-executor command there.
    """
    world = World(tmp_path)
    for index in range(2):
        world.case(f"case-{index}", "pass")
    # Ray's own session, in a short directory (its socket paths): not the TMPDIR looked at.
    ray_dir = tempfile.mkdtemp(prefix="cg-ray-", dir="/tmp")
    try:
        done = world.run(
            *("grade", SLUG, "candidates", "--executor", "ray", "--jobs", "1"),
            RAY_TMPDIR=ray_dir,
        )
    finally:
        subprocess.run(["rm", "-rf", ray_dir], check=False)
    assert done.returncode == 0, done.stderr
    left = sorted(os.listdir(world.tmp))
    assert all(name.startswith(STAGE_PREFIX) for name in left), left
    assert _until(lambda: not _naming_any(set(left))), _naming_any(set(left))
    kept = sorted(p.name for d in left for p in (world.tmp / d).rglob("*") if p.is_file())
    assert kept == ["registration.py", "rubric.py"] * len(left)


def _samples(world: World, layout: dict[str, list[str]]) -> None:
    for case_id, modes in layout.items():
        world.case(case_id, None)
        for index, mode in enumerate(modes):
            sample = world.candidates / case_id / f"s{index}"
            sample.mkdir(parents=True)
            (sample / "mode.txt").write_text(mode + "\n")


def test_samples_partly_answered_from_the_ledger_are_reported_as_locally(
    connected: Any, tmp_path: Path
) -> None:
    """Runs answered from the ledger interleaved with runs made on Ray: each at its index."""
    from .test_ray_executor import _timeless

    layout = {
        "case-0": ["pass", "fail", "crash"],
        "case-1": ["fail", "pass", "pass"],
        "case-2": ["crash", "pass", "fail"],
        "case-3": ["pass", "pass", "fail"],
    }
    world = World(tmp_path)
    _samples(world, layout)
    outputs = {}
    for executor in ("local", "ray"):  # the same bench and candidates, a ledger each
        cache = str(tmp_path / f"cache-{executor}")
        first = world.run(
            *("grade", SLUG, "candidates", "--samples", "--case", "case-1", "--case", "case-2"),
            XDG_CACHE_HOME=cache,
        )
        assert first.returncode in (0, 1), first.stderr
        extra = ["--ray-address", connected.address] if executor == "ray" else []
        done = world.run(
            *("grade", SLUG, "candidates", "--samples", "--format", "json"),
            *("--executor", executor, *extra),
            XDG_CACHE_HOME=cache,
        )
        outputs[executor] = (done.returncode, _timeless(json.loads(done.stdout)))
    assert outputs["ray"] == outputs["local"]
    assert outputs["ray"][1]["reused"] == 5  # the conclusive samples of case-1 and case-2


# -- 5. the batch: windows, immediate errors, stopping ---------------------------------------

# Passes or fails as the candidate's x.txt says, naming its case.
ECHO_RUBRIC = """\
import json, os, sys
text = open(os.path.join(sys.argv[2], "x.txt")).read().strip()
passed = text == "x"
print(json.dumps({"passed": passed, "reason": os.path.basename(sys.argv[1]) + ":" + text}))
sys.exit(0 if passed else 1)
"""


def test_every_result_arrives_once_at_its_own_index_among_immediate_errors(
    connected: Any, box: Any, tmp_path: Path
) -> None:
    ids = [f"c{i:02d}" for i in range(12)]
    rubric, cases = bench(tmp_path, _token() + ECHO_RUBRIC, ids)
    specs = []
    for index, case in enumerate(cases):
        if index % 3 == 1:  # an unsendable candidate: an error at submission, no task
            specs.append(RunSpec.of(rubric, case, _fifo(tmp_path, case), sandbox=box.policy))
            continue
        (case.input / "x.txt").write_text("x\n" if index % 2 else "no\n")
        specs.append(RunSpec.of(rubric, case, case.input, sandbox=box.policy))
    specs.append(specs[0])  # the same run twice: two results, one per index
    seen: list[int] = []
    results = RayExecutor().run(
        specs, jobs=1, sandbox=box, on_result=lambda index, _: seen.append(index)
    )
    assert sorted(seen) == list(range(len(specs)))
    assert [r.case for r in results] == [s.case_id for s in specs]
    local = LocalExecutor().run(specs, jobs=2, sandbox=box)
    assert [r.status for r in results] == [r.status for r in local]
    for result, spec in zip(results, specs, strict=True):
        if result.status != "error":
            assert (result.reason or "").startswith(spec.case_id + ":")


# Fails at once for the mode "quick"; otherwise becomes a sleeping process naming the mode.
STOP_RUBRIC = """\
import json, os, sys
mode = open(os.path.join(sys.argv[2], "mode.txt")).read().strip()
if mode != "quick":
    os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", mode])
print(json.dumps({"passed": False, "reason": "quick"}))
sys.exit(1)
"""


def test_an_exception_from_on_result_stops_the_batch_and_no_result_follows_it(
    connected: Any, box: Any, tmp_path: Path
) -> None:
    marker = f"codegenie-attack-{uuid.uuid4().hex}"
    rubric, cases = bench(tmp_path, _token() + STOP_RUBRIC, ["c0", "c1", "c2", "c3"])
    (cases[0].input / "mode.txt").write_text("quick")
    for case in cases[1:]:
        (case.input / "mode.txt").write_text(marker)
    # A run that hangs ends at its timeout, should one be made before the quick one.
    specs = [RunSpec.of(rubric, case, case.input, sandbox=box.policy, timeout=20) for case in cases]
    seen: list[int] = []

    class Stop(Exception):
        pass

    def stop(index: int, _: RubricResult) -> None:
        seen.append(index)
        raise Stop

    with pytest.raises(Stop):
        RayExecutor().run(specs, jobs=1, sandbox=box, on_result=stop)
    assert len(seen) == 1
    assert _until(lambda: not _processes_with(marker)), _processes_with(marker)


# -- 3b. a cluster without a CPU -----------------------------------------------------------------


# Was a bug the review found; this test holds its fix.
def test_a_cluster_without_a_cpu_gives_errors_rather_than_waiting_forever(
    node_cluster: Any, box: Any, tmp_path: Path
) -> None:
    rubric, cases = bench(tmp_path, _token() + PASS_RUBRIC, ["c0"])
    specs = [RunSpec.of(rubric, cases[0], cases[0].input, sandbox=box.policy)]
    ray.shutdown()
    own = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    try:
        join(own.address)
        with pytest.raises(ExecutorUnavailable) as raised:  # at once, nothing submitted
            RayExecutor().run(specs, jobs=1, sandbox=box)
        assert "the cluster has no CPU to make a run on" in raised.value.cause
        assert raised.value.address == own.address
    finally:
        ray.shutdown()
        own.shutdown()


def test_a_cluster_that_loses_its_last_cpu_ends_the_batch_with_errors(
    node_cluster: Any, box: Any, tmp_path: Path
) -> None:
    """Its only worker node lost mid-batch: the runs are errors once no CPU came back."""
    slow = "import time\ntime.sleep(30)\n" + PASS_RUBRIC
    rubric, cases = bench(tmp_path, _token() + slow, ["c0", "c1", "c2"])
    specs = [RunSpec.of(rubric, case, case.input, sandbox=box.policy) for case in cases]
    ray.shutdown()
    own = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    try:
        lost = own.add_node(num_cpus=1)
        join(own.address)
        results: list[RubricResult] = []
        executor = RayExecutor(starved_after=1.0)

        def grade() -> None:
            results.extend(executor.run(specs, jobs=1, sandbox=box))

        batch = threading.Thread(target=grade)
        batch.start()
        time.sleep(3)  # not a timing assertion: the node goes whether or not a run started
        own.remove_node(lost, allow_graceful=False)
        batch.join(_DEADLINE)
        assert not batch.is_alive()
        assert [r.status for r in results] == ["error"] * 3
        assert all("no node of it had a CPU left" in (r.reason or "") for r in results)
    finally:
        ray.shutdown()
        own.shutdown()
