"""The Ray executor on a real cluster of three nodes on this machine: a head and two workers.

Runs spread over both worker nodes, and what comes back equals what the
local executor gives (the command's JSON output, times aside); a node
removed while runs are in flight has them retried on the other, the report
still complete and correct; Ctrl-C leaves no process of the command on any
node; a command that started its own Ray instance leaves none of its
processes; a hostile candidate is contained on a worker node as on the
local one. Without Ray installed these tests fail under CI and are skipped
elsewhere, saying why. No test asserts a time: waits poll for a condition,
under a deadline far above what it takes.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codegenie.eval._exec.local import LocalExecutor
from codegenie.eval._exec.on_ray import RayExecutor
from codegenie.eval._ledger.store import DIRECTORY as LEDGER
from codegenie.eval._ledger.store import ResultStore
from codegenie.eval._paths import cache_dir
from codegenie.eval._run.spec import RunSpec
from codegenie.eval.rubrics import RubricResult, choose_sandbox

from .factory import make_bench
from .ray_import import Cluster, join, ray
from .test_grade import SLUG, World, script
from .test_stop import SIGNALS, assert_nothing_left, deaf_world, stop_while_running
from .warm import bench

pytestmark = [
    pytest.mark.xdist_group("ray"),
    pytest.mark.skipif(not os.path.exists("/proc/self/ns/user"), reason="needs Linux namespaces"),
]

_DEADLINE = 120.0
# Each worker node has one CPU: a run occupies a node, so a batch spreads over both.
_WORKER = {"num_cpus": 1}


def _connect(cluster: Any) -> None:
    join(cluster.address)
    cluster.wait_for_nodes()


@pytest.fixture(scope="module")
def node_env_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the nodes keep the environments they build: not the user's cache."""
    return tmp_path_factory.mktemp("node-environments")


@pytest.fixture(scope="module")
def cluster(node_env_dir: Path) -> Iterator[Any]:
    """A head without CPUs (it schedules nothing) and two worker nodes of one CPU each."""
    with pytest.MonkeyPatch.context() as env:  # what the nodes' processes inherit
        env.setenv("CODEGENIE_ENV_DIR", str(node_env_dir))
        made = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
        try:
            made.add_node(**_WORKER)
            made.add_node(**_WORKER)
        except BaseException:
            made.shutdown()
            raise
    try:
        _connect(made)
        yield made
    finally:
        ray.shutdown()
        made.shutdown()


@pytest.fixture(scope="module")
def sandbox() -> Any:
    try:
        return choose_sandbox("bwrap")
    except Exception as exc:
        pytest.skip(f"no sandbox here: {exc}")


def _worker_nodes(cluster: Any) -> set[str]:
    return {node.node_id for node in cluster.worker_nodes}


def _without_times(result: RubricResult) -> dict[str, Any]:
    dumped = result.model_dump()
    for name in ("duration_s", "wall_s", "cpu_s", "peak_memory_mib", "node"):
        dumped.pop(name)
    return dumped


# Sleeps a little (so both nodes get runs), then judges what the candidate's input says.
SPREAD_RUBRIC = """\
import json, pathlib, sys, time
time.sleep(0.3)
text = (pathlib.Path(sys.argv[2]) / "x.txt").read_text()
passed = text.strip() == "x"
print(json.dumps({"passed": passed, "reason": "read " + repr(text)}))
sys.exit(0 if passed else 1)
"""


def test_runs_spread_over_both_nodes_and_return_what_local_runs_return(
    cluster: Any, sandbox: Any, tmp_path: Path
) -> None:
    rubric, cases = bench(tmp_path, SPREAD_RUBRIC, [f"c{i}" for i in range(8)])
    (cases[3].input / "x.txt").write_text("not x\n")
    specs = [RunSpec.of(rubric, case, case.input, sandbox=sandbox.policy) for case in cases]
    seen: list[int] = []
    on_ray = RayExecutor().run(
        specs, jobs=2, sandbox=sandbox, on_result=lambda i, _: seen.append(i)
    )
    here = LocalExecutor().run(specs, jobs=2, sandbox=sandbox)
    assert [_without_times(r) for r in on_ray] == [_without_times(r) for r in here]
    assert [r.status for r in on_ray].count("failed") == 1
    assert sorted(seen) == list(range(8))
    assert {r.node for r in on_ray} == _worker_nodes(cluster)
    assert {r.node for r in here} == {None}


def test_the_command_output_is_the_local_executor_s_times_aside(
    cluster: Any, sandbox: Any, tmp_path: Path
) -> None:
    world = World(tmp_path)
    for index, mode in enumerate(["pass", "fail", "crash", "pass", "ctl"]):
        world.case(f"case-{index}", mode)
    world.case("no-candidate", None)
    local = world.grade("--format", "json", "--no-cache", "--executor", "local")
    remote = world.grade(
        "--format", "json", "--no-cache", "--executor", "ray", "--ray-address", cluster.address
    )
    assert (remote.returncode, local.returncode) == (1, 1), remote.stderr
    assert _timeless(json.loads(remote.stdout)) == _timeless(json.loads(local.stdout))
    assert remote.stderr == local.stderr  # Ray's own notices (-v shows them) are not in it
    # Each result made on the cluster names its node; the local report has no node at all.
    ran = [r for r in json.loads(remote.stdout)["results"] if r["status"] != "missing"]
    assert {r["node"] for r in ran} <= _worker_nodes(cluster)
    assert all("node" not in r for r in json.loads(remote.stdout)["results"] if r not in ran)
    assert all("node" not in r for r in json.loads(local.stdout)["results"])
    # The ledger stays on the driver: what came back conclusive is answered from it next time.
    address = ("--executor", "ray", "--ray-address", cluster.address)
    first = world.grade("--format", "json", *address)
    again = world.grade("--format", "json", *address)
    conclusive = [
        r for r in json.loads(first.stdout)["results"] if r["status"] in ("passed", "failed")
    ]
    assert json.loads(first.stdout)["reused"] == 0
    assert json.loads(again.stdout)["reused"] == len(conclusive) == 4
    text_local = world.grade("--no-cache")
    text_remote = world.grade("--no-cache", "--executor", "ray", "--ray-address", cluster.address)
    assert _lines(text_remote.stdout) == _lines(text_local.stdout)


def _timeless(document: Any) -> Any:
    """The document without its times, and without the node that made each run (Ray's only)."""
    if isinstance(document, dict):
        times = {"started_at", "finished_at", "duration_s", "wall_s", "cpu_s", "peak_memory_mib"}
        return {k: None if k in times else _timeless(v) for k, v in document.items() if k != "node"}
    if isinstance(document, list):
        return [_timeless(each) for each in document]
    return document


def _lines(text: str) -> list[str]:
    """The text report without its timings (the summary's seconds, each line's duration)."""
    import re

    return [re.sub(r"\d+(\.\d+)?\s*(ms|s)\b", "T", line) for line in text.splitlines()]


# Becomes a process that names the candidate's marker, sleeps, and passes: a run whose
# process can be seen from outside while it is in flight.
SLOW_RUBRIC = """\
import os, pathlib, sys
marker = (pathlib.Path(sys.argv[2]) / "x.txt").read_text().strip()
verdict = "import json, time; time.sleep(4); print(json.dumps({'passed': True, 'reason': 'slept'}))"
os.execv(sys.executable, [sys.executable, "-c", verdict, marker])
"""


def test_a_node_removed_in_flight_has_its_runs_retried_on_the_other(
    cluster: Any, sandbox: Any, tmp_path: Path
) -> None:
    ray.shutdown()  # this test makes a cluster of its own, to lose a node of it
    own = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    try:
        doomed = own.add_node(**_WORKER)
        own.add_node(**_WORKER)
        _connect(own)
        marker = f"codegenie-slow-{os.getpid()}-{time.monotonic_ns()}"
        rubric, cases = bench(tmp_path, SLOW_RUBRIC, [f"c{i}" for i in range(4)])
        for case in cases:
            (case.input / "x.txt").write_text(marker)
        specs = [RunSpec.of(rubric, case, case.input, sandbox=sandbox.policy) for case in cases]

        def remove_once_both_run() -> None:  # a run on each node: one of them is lost
            _until(lambda: len(_processes_naming(marker)) >= 2)
            own.remove_node(doomed, allow_graceful=False)

        killer = threading.Thread(target=remove_once_both_run)
        killer.start()
        try:
            results = RayExecutor().run(specs, jobs=2, sandbox=sandbox)
        finally:
            killer.join()
        assert [(r.status, r.reason) for r in results] == [("passed", "slept")] * 4
        assert {r.node for r in results} == {n.node_id for n in own.worker_nodes}
        assert doomed.node_id not in {r.node for r in results}
    finally:
        ray.shutdown()
        own.shutdown()
        _connect(cluster)  # the module's cluster again, for the tests after this one


# Makes the node that imports it one where no bubblewrap can be found.
NO_BWRAP_SITE = """\
import os
if os.environ.get("CODEGENIE_TEST_NO_BWRAP"):
    from codegenie.eval._sandbox import bwrap
    bwrap.candidates = lambda path_env=None: []
"""


def test_a_node_without_a_sandbox_fails_its_runs_as_errors_that_name_it(
    cluster: Any, sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(NO_BWRAP_SITE, encoding="utf-8")
    ray.shutdown()  # a cluster of its own, one of whose nodes has no bubblewrap
    own = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    try:
        good = own.add_node(**_WORKER)
        with monkeypatch.context() as env:  # what the broken node's processes inherit
            env.setenv("CODEGENIE_TEST_NO_BWRAP", "1")
            env.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
            broken = own.add_node(**_WORKER)
        _connect(own)
        rubric, cases = bench(tmp_path, SPREAD_RUBRIC, [f"c{i}" for i in range(6)])
        specs = [RunSpec.of(rubric, case, case.input, sandbox=sandbox.policy) for case in cases]
        results = RayExecutor().run(specs, jobs=2, sandbox=sandbox)
    finally:
        ray.shutdown()
        own.shutdown()
        _connect(cluster)
    errors = [r for r in results if r.status == "error"]
    assert errors, "no run was given to the node without a sandbox"
    for result in errors:
        assert result.node == broken.node_id
        assert result.reason is not None
        assert result.reason.startswith("SandboxUnavailable: ")
        assert result.reason.endswith(f"(on node {broken.node_id})")
    assert {r.node for r in results if r.status == "passed"} <= {good.node_id}
    assert all(r.status in ("passed", "error") for r in results)


# Becomes a process whose command line names the candidate's marker, and sleeps.
HANG_RUBRIC = """\
import json, os, pathlib, sys
marker = (pathlib.Path(sys.argv[2]) / "mode.txt").read_text().strip()
if marker == "pass":
    print(json.dumps({"passed": True}))
    sys.exit(0)
os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", marker])
"""


def _processes(matches: Any) -> list[int]:
    """The pids of the processes whose command line (its NUL-separated bytes) ``matches``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as file:
                cmdline = file.read()
        except OSError:
            continue
        if matches(cmdline):
            found.append(int(entry))
    return found


def _processes_naming(marker: str) -> list[int]:
    """The processes one of whose arguments is ``marker``."""
    return _processes(lambda cmdline: marker.encode() in cmdline.split(b"\0"))


def _processes_mentioning(text: str) -> list[int]:
    """The processes whose command line holds ``text`` anywhere."""
    return _processes(lambda cmdline: text.encode() in cmdline)


def _until(condition: Any) -> bool:
    deadline = time.monotonic() + _DEADLINE
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def _stored_results() -> int:
    """How many runs' results the ledger holds (not its index of which interpreter made them)."""
    store = ResultStore.open()
    assert store is not None
    with store:
        entries = (store.get(p.name.removesuffix(".result")) for p in _ledger_files())
        return sum(1 for entry in entries if entry is not None and "runs" in entry)


def _ledger_files() -> list[Path]:
    return sorted(Path(cache_dir(), LEDGER).glob("*.result"))


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_cancels_every_run_and_leaves_no_process_on_any_node(
    cluster: Any, sandbox: Any, tmp_path: Path, signum: int
) -> None:
    world = World(tmp_path)
    marker = f"codegenie-hang-{os.getpid()}-{time.monotonic_ns()}"
    (world.package / "rubric.py").write_text(HANG_RUBRIC, encoding="utf-8")
    # Submitted in case order; Ray may start them in another, so the two that pass may not
    # have run when the hanging ones hold both nodes.
    for index in range(2):
        world.case(f"case-{index}", "pass")
    for index in range(2, 6):
        world.case(f"case-{index}", marker)
    process = subprocess.Popen(
        [
            script(),
            "grade",
            SLUG,
            "candidates",
            "--executor",
            "ray",
            "--ray-address",
            cluster.address,
        ],
        cwd=world.bench.base,
        env=world.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        # Both nodes busy: a run on each (one CPU each), the others waiting for them.
        assert _until(lambda: len(_processes_naming(marker)) >= 2), "the runs did not start"
        process.send_signal(signum)
        _, err = process.communicate(timeout=_DEADLINE)
        assert process.returncode == 128 + signum, err
        assert _until(lambda: not _processes_naming(marker)), _processes_naming(marker)
        # What the driver had when the signal came was stored, and no interrupted run: the
        # passing runs it stored are answered, not run, next time.
        stored = _stored_results()
        assert stored <= 2
        again = world.grade("--case", "case-0", "--case", "case-1", "--format", "json")
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["reused"] == stored
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_command_that_started_its_own_ray_leaves_none_of_its_processes(
    sandbox: Any, tmp_path: Path
) -> None:
    world = World(tmp_path)
    for index in range(3):
        world.case(f"case-{index}", "pass")
    # Ray's session (its sockets) in a short directory of its own: its processes name it.
    ray_dir = tempfile.mkdtemp(prefix="cg-ray-", dir="/tmp")
    try:
        done = world.run(
            "grade", SLUG, "candidates", "--executor", "ray", "--jobs", "2", RAY_TMPDIR=ray_dir
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.count(" passed") >= 3 or "3 passed" in done.stdout, done.stdout
        assert _until(lambda: not _processes_mentioning(ray_dir)), _processes_mentioning(ray_dir)
    finally:
        subprocess.run(["rm", "-rf", ray_dir], check=False)


@pytest.mark.parametrize("outcome", ["passed", "failed"])
def test_a_command_that_started_its_own_ray_leaves_nothing_in_its_temporary_directories(
    sandbox: Any, tmp_path: Path, outcome: str
) -> None:
    """A grade that succeeds or fails leaves no node directory, Ray session or process."""
    world = World(tmp_path)
    for index in range(3):
        world.case(f"case-{index}", "pass" if outcome == "passed" or index else "fail")
    ray_dir = tempfile.mkdtemp(prefix="cg-", dir="/tmp")  # Ray's sockets need a short path
    try:
        done = subprocess.run(
            [script(), "grade", SLUG, "candidates", "--executor", "ray", "--jobs", "2"],
            cwd=world.bench.base,
            capture_output=True,
            text=True,
            # A hang guard: a local instance may take minutes to start on a loaded machine.
            timeout=600,
            check=False,
            env=world.env(RAY_TMPDIR=ray_dir),
        )
        assert done.returncode == (0 if outcome == "passed" else 1), done.stderr
        assert done.stdout.splitlines()[-1].startswith("3/3" if outcome == "passed" else "2/3")
        assert sorted(path.name for path in world.tmp.iterdir()) == []
        assert os.listdir(ray_dir) == []
        assert _until(lambda: not _processes_mentioning(ray_dir)), _processes_mentioning(ray_dir)
        assert _until(lambda: not _processes_mentioning(str(tmp_path)))
    finally:
        subprocess.run(["rm", "-rf", ray_dir], check=False)


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_signal_ends_a_command_s_own_ray_and_leaves_nothing(
    sandbox: Any, tmp_path: Path, signum: int
) -> None:
    """A stop during rubrics deaf to SIGINT and SIGTERM: 128 + the signal, nothing left anywhere.

    No rubric, Ray or worker process, no cgroup of the runs, nothing in the
    command's TMPDIR (no node directory) nor in Ray's (no session).
    """
    world, marker = deaf_world(tmp_path)
    ray_dir = tempfile.mkdtemp(prefix="cg-", dir="/tmp")
    try:
        command = ["grade", SLUG, "candidates", "--executor", "ray", "--jobs", "2", "--no-cache"]
        # A local instance takes a while to start on a loaded machine.
        status, stderr, makers = stop_while_running(
            world, marker, command, signum, env={"RAY_TMPDIR": ray_dir}, starting=600
        )
        assert status == 128 + signum, stderr
        assert "Traceback" not in stderr
        assert_nothing_left(world, marker, makers)
        assert os.listdir(ray_dir) == []
        assert _until(lambda: not _processes_mentioning(ray_dir)), _processes_mentioning(ray_dir)
    finally:
        subprocess.run(["rm", "-rf", ray_dir], check=False)


# The candidate tries to reach out of its sandbox on the worker node.
HOSTILE_RUBRIC = """\
import json, os, socket, sys
escapes = []
target = (open(os.path.join(sys.argv[2], "mode.txt")).read().strip())
try:
    open(target, "w").write("escaped")
    escapes.append("wrote " + target)
except OSError:
    pass
try:
    socket.create_connection(("127.0.0.1", int(os.path.basename(target).split("-")[-1])), timeout=2)
    escapes.append("connected")
except OSError:
    pass
if os.path.exists(os.path.dirname(target)):
    escapes.append("saw " + os.path.dirname(target))
print(json.dumps({"passed": not escapes, "reason": "; ".join(escapes) or "contained"}))
sys.exit(0 if not escapes else 1)
"""


def test_a_hostile_candidate_is_contained_on_a_worker_node(
    cluster: Any, sandbox: Any, tmp_path: Path
) -> None:
    if not ray.is_initialized():
        _connect(cluster)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        outside = tmp_path / "outside"
        outside.mkdir()
        target = outside / f"escape-{port}"
        rubric, cases = bench(tmp_path, HOSTILE_RUBRIC, ["c0", "c1"])
        for case in cases:
            (case.input / "mode.txt").write_text(str(target))
        specs = [RunSpec.of(rubric, case, case.input, sandbox=sandbox.policy) for case in cases]
        results = RayExecutor().run(specs, jobs=2, sandbox=sandbox)
    assert [(r.status, r.reason) for r in results] == [("passed", "contained")] * 2
    assert not target.exists()
    assert {r.node for r in results} <= _worker_nodes(cluster)


def test_usage_mistakes_are_exit_2_and_say_what_to_do(tmp_path: Path) -> None:
    world = World(tmp_path)
    world.case("case-0", "pass")
    address_alone = world.grade("--ray-address", "127.0.0.1:1")
    assert address_alone.returncode == 2
    assert "--ray-address is for --executor ray" in address_alone.stderr
    empty = world.grade("--executor", "ray", "--ray-address", "")
    assert empty.returncode == 2
    assert "--ray-address needs an address" in empty.stderr
    check = world.run("check", "--executor", "ray")
    assert check.returncode == 2
    assert "check --rubrics" in check.stderr
    # Ray made unimportable: the executor's extra is named, nothing runs.
    blocked = tmp_path / "blocked"
    (blocked / "ray").mkdir(parents=True)
    (blocked / "ray" / "__init__.py").write_text("raise ImportError('no ray here')\n")
    missing = world.run("grade", SLUG, "candidates", "--executor", "ray", PYTHONPATH=str(blocked))
    assert missing.returncode == 2, missing.stderr
    assert "pip install 'codegenie-eval[ray]'" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_a_declared_environment_is_built_on_the_nodes_and_the_report_is_the_same(
    cluster: Any, sandbox: Any, tmp_path: Path, env_dir: Path, node_env_dir: Path
) -> None:
    from .test_grade_environment import RUBRIC as ENV_RUBRIC
    from .test_grade_environment import candidates, cli, declare, task_class
    from .wheels import make_wheel, offline_requirements

    bench = make_bench(tmp_path / "repo")
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "tinypkg", "1.0", "VERSION = '1.0'\n")
    offline_requirements(bench.base / "envs" / "tiny.txt", wheels, "tinypkg==1.0")
    task_class(bench, "tiny-task", ENV_RUBRIC)
    declare(bench, "tiny-task", environment="envs/tiny.txt")
    given = candidates(tmp_path / "cands", {"example": "1.0"})
    local = cli(bench, "grade", "tiny-task", str(given), "--format", "json", "--no-cache")
    assert local.returncode == 0, local.stderr
    remote = cli(
        bench,
        *("grade", "tiny-task", str(given), "--format", "json", "--no-cache"),
        *("--executor", "ray", "--ray-address", cluster.address),
    )
    assert remote.returncode == 0, remote.stderr
    assert _timeless(json.loads(remote.stdout)) == _timeless(json.loads(local.stdout))
    verdict = json.loads(remote.stdout)["results"][0]["verdict"]
    assert verdict["harness"] == []  # the environment's interpreter, not the node's own
    # Built on the node, in the node's store: one environment, the driver's digest.
    digest = json.loads(local.stdout)["environment"]["digest"]
    built = [p.name for p in node_env_dir.iterdir() if not p.name.startswith(".")]
    assert built == [digest.removeprefix("blake2b-256:")]


def test_grade_all_and_check_rubrics_report_what_the_local_executor_reports(
    cluster: Any, sandbox: Any, tmp_path: Path
) -> None:
    bench = make_bench(tmp_path / "b", "alpha", "beta", parts=True)
    for slug, solved in (("alpha", True), ("beta", False)):
        directory = bench.base / "runs" / slug / "example"
        directory.mkdir(parents=True)
        (directory / ("answer.txt" if solved else "README.txt")).write_text("x\n")
    remote = ("--executor", "ray", "--ray-address", cluster.address)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [script(), *args],
            cwd=bench.base,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    for command in (
        ("grade", "--all", "runs", "--format", "json", "--no-cache"),
        ("check", "--rubrics", "--format", "json", "--no-cache"),
    ):
        local, on_ray = run(*command), run(*command, *remote)
        assert (on_ray.returncode, on_ray.stderr) == (local.returncode, local.stderr), command
        assert _timeless(json.loads(on_ray.stdout)) == _timeless(json.loads(local.stdout))
    checked = json.loads(
        run("check", "--rubrics", "--format", "json", "--no-cache", *remote).stdout
    )
    assert checked["ok"] is True, checked


def test_what_a_copy_refuses_is_refused_in_the_same_words(
    cluster: Any, sandbox: Any, tmp_path: Path
) -> None:
    """A candidate no copy may make: the same error on a node as here, paths the driver's."""
    rubric, cases = bench(tmp_path, SPREAD_RUBRIC, [f"c{i}" for i in range(5)])
    candidates = tmp_path / "candidates"
    made = []
    for case in cases:
        directory = candidates / case.id
        directory.mkdir(parents=True)
        (directory / "x.txt").write_text("x\n")
        made.append(directory)
    os.mkfifo(made[0] / "pipe")  # a FIFO: refused by the copy (here: by the packing)
    os.symlink("/etc/passwd", made[1] / "escape")  # a link out: refused by the node's copy
    os.symlink("../../c3", made[2] / "sideways")  # out through the documented layout
    linked = candidates / "linked"
    linked.symlink_to(made[3])  # the candidate itself a link: refused
    (made[4] / "__pycache__").mkdir()  # left home, as a copy leaves it: the run passes
    (made[4] / "__pycache__" / "x.pyc").write_bytes(b"junk")
    specs = [
        RunSpec.of(rubric, case, made[i] if i != 3 else linked, sandbox=sandbox.policy)
        for i, case in enumerate(cases)
    ]
    on_ray = RayExecutor().run(specs, jobs=2, sandbox=sandbox)
    here = LocalExecutor().run(specs, jobs=2, sandbox=sandbox)
    assert [(r.status, r.reason) for r in on_ray] == [(r.status, r.reason) for r in here]
    assert [r.status for r in here] == ["error"] * 4 + ["passed"]
    assert str(made[1] / "escape") in (here[1].reason or "")


def test_a_cluster_that_cannot_be_joined_is_a_typed_error_before_anything_runs(
    tmp_path: Path,
) -> None:
    world = World(tmp_path)
    world.case("case-0", "pass")
    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    done = world.grade("--executor", "ray", "--ray-address", f"127.0.0.1:{port}")
    assert done.returncode == 4, done.stderr
    assert "executor-unavailable" in done.stderr
    assert f"127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


HASHED = """\
import json
print(json.dumps({"passed": True, "reason": str(hash("codegenie"))}))
"""


def test_repeats_of_a_run_on_the_nodes_each_have_a_hash_seed_of_their_own(
    cluster: Any, sandbox: Any, tmp_path: Path
) -> None:
    """A node unpacks each run's trees afresh; its warm workers still know a repeat by content."""
    rubric, cases = bench(tmp_path, HASHED, ["c1"])
    spec = RunSpec.of(rubric, cases[0], cases[0].input, sandbox=sandbox.policy)
    results = RayExecutor().run([spec] * 6, jobs=2, sandbox=sandbox)
    assert [r.status for r in results] == ["passed"] * 6
    assert len({r.reason for r in results}) == 6  # no two repeats in one worker
