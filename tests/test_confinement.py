"""One confinement, two renderers: the plan of a contained run, and what each way of starting shows.

The plan (:class:`codegenie.eval._sandbox.plan.Confinement`) is made once
per run from its policy; bubblewrap's arguments and a warm worker's setup
are renderings of it. These tests pin the plan's facts, that each renderer
takes them from the plan (a changed plan changes both), that nothing
outside the sandbox package picks the warm or the plain way, and — by a
probe rubric run both ways — that what a run sees of ``/``, ``/proc``, its
mounts, limits, namespaces, identity and environment is the same, field by
field.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import re
import resource
import socket
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from codegenie.eval import rubrics
from codegenie.eval._process.output import Bounds
from codegenie.eval._sandbox import plan as plans
from codegenie.eval._sandbox import preparation
from codegenie.eval._sandbox.bwrap import Bubblewrap
from codegenie.eval._sandbox.bwrap_run import bwrap_args, render
from codegenie.eval._sandbox.cgroups import RunCgroup
from codegenie.eval._sandbox.confinement import confinement
from codegenie.eval._sandbox.env import sandbox_environment
from codegenie.eval._sandbox.keyring import keyctl_join
from codegenie.eval._sandbox.limits import Limits
from codegenie.eval._sandbox.policy import SandboxPolicy
from codegenie.eval._sandbox.warm import worker as warm

from .warm import bench, bwrap, grade, spy

__all__ = ("bwrap", "spy")  # fixtures

SOURCE = Path(__file__).resolve().parent.parent / "src" / "codegenie" / "eval"
BOUNDS = Bounds(64, 64)
# A bubblewrap as new as the bundled one: every feature, no probe needed.
NEW_BWRAP = Bubblewrap(Path("/usr/bin/bwrap"), (0, 11, 0), "system")


def _policy(tmp_path: Path, **kwargs: Any) -> SandboxPolicy:
    run_dir, task_class = tmp_path / "run", tmp_path / "task"
    (task_class / "cases").mkdir(parents=True)
    run_dir.mkdir()
    return SandboxPolicy("bwrap", run_dir, task_class, hidden=(task_class / "cases",), **kwargs)


# -- the plan ----------------------------------------------------------------------------


def test_the_plan_states_each_fact_of_a_contained_run(tmp_path: Path) -> None:
    """Namespaces, /proc, scratch, binds, hidden, cwd and environment, from the policy."""
    policy = _policy(tmp_path, limits=Limits(memory=256))
    run = confinement(policy)
    assert run.namespaces == ("user", "mount", "pid", "net", "ipc", "uts", "cgroup")
    assert run.hostname == "sandbox"
    assert not run.nested_userns
    assert run.root_read_only
    assert run.proc == plans.ProcView(("/proc/1",), ("/proc/keys", "/proc/key-users"), True)
    assert run.system[0] == plans.Mount("bind", "/usr", "/usr")
    assert [m.target for m in run.scratch] == ["/tmp", "/dev/shm"]
    assert {m.size for m in run.scratch} == {256 * 1024 * 1024}
    assert run.scratch_size == 256 * 1024 * 1024
    assert all(m.optional and not m.writable for m in run.files)
    writable = [m.target for m in run.binds if m.writable]
    assert writable == [str(policy.run_dir)]  # the run's directory, and nothing else
    depths = [m.target.count("/") for m in run.binds]
    assert depths == sorted(depths)  # shallow first
    assert run.hidden == (str(policy.task_class_dir / "cases"),)
    assert run.cwd == str(policy.workdir)
    assert dict(run.env) == sandbox_environment(policy)
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.cwd = "/"  # type: ignore[misc]


def test_a_hidden_directory_that_does_not_exist_is_not_in_the_plan(tmp_path: Path) -> None:
    policy = _policy(tmp_path)
    policy = dataclasses.replace(policy, hidden=(tmp_path / "task" / "nowhere",))
    assert confinement(policy).hidden == ()


def test_an_unlimited_memory_leaves_the_scratch_unsized(tmp_path: Path) -> None:
    run = confinement(_policy(tmp_path, limits=Limits(memory=None)))
    assert run.scratch_size is None
    args = render(run, NEW_BWRAP)
    assert "--size" not in args


# -- the two renderings ------------------------------------------------------------------


def test_bubblewrap_renders_the_plan_in_its_order(tmp_path: Path) -> None:
    """/proc's covers, the scratch, the binds, the hidden, the read-only root, the cwd."""
    policy = _policy(tmp_path, limits=Limits(memory=1))
    run = confinement(policy)
    args = render(run, NEW_BWRAP)
    text = " ".join(args)
    assert "--proc /proc --tmpfs /proc/1 --remount-ro /proc/1" in text
    for name in run.proc.masked:
        assert f"--ro-bind-try /dev/null {name}" in text
    assert "--size 1048576 --tmpfs /tmp --size 1048576 --tmpfs /dev/shm" in text
    hidden = run.hidden[0]
    assert f"--tmpfs {hidden} --remount-ro {hidden}" in text
    assert f"--bind {policy.run_dir} {policy.run_dir}" in text
    assert args[-5:] == ["--remount-ro", "/", "--chdir", str(policy.workdir), "--"]
    assert bwrap_args(policy, NEW_BWRAP)[-len(args) :] == args


def test_both_renderers_take_what_proc_hides_from_the_plan(tmp_path: Path) -> None:
    """A fact changed in the plan changes bubblewrap's arguments and the warm setup alike."""
    policy = _policy(tmp_path)
    run = confinement(policy)
    other = dataclasses.replace(
        run, proc=plans.ProcView(("/proc/1", "/proc/2"), ("/proc/keys", "/proc/kcore"), False)
    )
    text = " ".join(render(other, NEW_BWRAP))
    assert "--tmpfs /proc/2 --remount-ro /proc/2" in text
    assert "--ro-bind-try /dev/null /proc/kcore" in text
    assert "--remount-ro /proc " not in text
    setup = warm._setup(other)
    assert setup["proc"] == {
        "hidden": ["/proc/1", "/proc/2"],
        "masked": ["/proc/keys", "/proc/kcore"],
        "read_only": False,
    }
    assert warm._setup(run)["proc"] == {
        "hidden": list(plans.PROC_HIDDEN),
        "masked": list(plans.PROC_MASKED),
        "read_only": True,
    }


def test_the_warm_setup_renders_namespaces_scratch_cwd_and_environment(tmp_path: Path) -> None:
    """Each run makes the plan's namespaces but the worker's own (user, UTS); PWD as bwrap's."""
    policy = _policy(tmp_path, limits=Limits(memory=4))
    run = confinement(policy)
    setup = warm._setup(run)
    assert setup["unshare"] == ["mount", "pid", "net", "ipc", "cgroup"]
    assert setup["scratch"] == ["/tmp", "/dev/shm"]
    assert setup["dev"] == "/dev"
    assert setup["tmp_size"] == 4 * 1024 * 1024
    assert setup["cwd"] == str(policy.workdir)
    assert setup["env"] == {**run.env, "PWD": str(policy.workdir)}
    assert setup["keyctl"] == keyctl_join()  # the plain run's starting thread's very call
    fewer = dataclasses.replace(run, namespaces=("user", "mount", "pid"))
    assert warm._setup(fewer)["unshare"] == ["mount", "pid"]


def test_both_renderers_take_the_cgroups_rlimits_and_filter_from_the_plan(tmp_path: Path) -> None:
    """A run's limits and seccomp program are facts of its plan: each renderer reads them there."""
    policy = _policy(tmp_path)
    joins = (str(tmp_path / "cg" / "cgroup.procs"),)
    limits = ((resource.RLIMIT_CORE, 0, 0), (resource.RLIMIT_CPU, 7, 8))
    run = confinement(policy, joins=joins, rlimits=limits, seccomp=b"\x06\x00\x00\x00" * 2)
    assert (run.joins, run.rlimits, run.seccomp) == (joins, limits, b"\x06\x00\x00\x00" * 2)
    assert "seccomp" not in repr(run)  # a program of kilobytes stays out of a repr

    setup = warm._setup(run)
    assert setup["join"] == list(joins)
    assert setup["rlimits"] == [list(each) for each in limits]

    head = preparation._launcher(run, RunCgroup({}), ())  # the plan's, not the arguments'
    assert head[head.index("codegenie-sandbox") + 1] == joins[0]
    text = " ".join(head)
    assert "--core=0:0" in text
    assert "--cpu=7:8" in text
    opened: list[int] = []
    reader = preparation._filter_pipe(run.seccomp, opened)
    try:
        assert os.read(reader, 1 << 16) == run.seccomp
    finally:
        for fd in opened:
            os.close(fd)

    bare = confinement(policy)  # nothing to join, nothing limited: nothing rendered
    assert warm._setup(bare)["join"] == []
    assert warm._setup(bare)["rlimits"] == []
    assert preparation._launcher(bare, RunCgroup({}), ()) == []


def test_a_warm_worker_refuses_a_plan_with_another_seccomp_program(tmp_path: Path) -> None:
    """The zygote loads the program it was started with: a plan with another is not run."""
    ours, theirs = socket.socketpair()
    worker = warm.WarmWorker(None, ours, tmp_path, b"ours")  # type: ignore[arg-type]
    run = confinement(_policy(tmp_path), seccomp=b"another")
    prepared = SimpleNamespace(plan=run, policy=SimpleNamespace(run_dir=tmp_path / "run"))
    try:
        with pytest.raises(ValueError, match="seccomp program"):
            worker.run(prepared, ["python"], 1.0, stdout=BOUNDS, stderr=BOUNDS)  # type: ignore[arg-type]
        theirs.setblocking(False)
        with pytest.raises(BlockingIOError):  # nothing was sent to the zygote
            theirs.recv(1)
    finally:
        ours.close()
        theirs.close()


def test_a_worker_sandbox_is_the_plan_with_proc_left_whole_and_capabilities(
    tmp_path: Path,
) -> None:
    """The worker's bubblewrap: the run's mounts, /proc uncovered, the cgroup parents bound."""
    policy = _policy(tmp_path)
    run = confinement(policy)
    args = warm._worker_args(run, NEW_BWRAP, [Path("/sys/fs/cgroup/x")])
    text = " ".join(args)
    assert "--cap-drop" not in args
    assert "--disable-userns" not in args
    assert "--cap-add CAP_SYS_ADMIN" in text
    assert "--proc /proc --dev /dev" in text  # nothing of it covered: each run's init does
    assert "--bind /sys/fs/cgroup/x /sys/fs/cgroup/x" in text
    plain = render(run, NEW_BWRAP)
    for mount in [*run.scratch, *run.binds]:
        assert mount.target in plain
        assert mount.target in args


def test_bubblewrap_renders_fewer_namespaces_one_by_one() -> None:
    from codegenie.eval._sandbox.bwrap import isolation_args

    assert isolation_args(NEW_BWRAP)[:4] == [
        "--unshare-all",
        "--unshare-user",
        "--hostname",
        "sandbox",
    ]
    some = isolation_args(NEW_BWRAP, ("user", "mount", "pid", "net"))
    assert some[:3] == ["--unshare-user", "--unshare-pid", "--unshare-net"]
    assert "--hostname" not in some


# -- the fence ----------------------------------------------------------------------------

# What picks a way of making runs: the warm package, the strategy's own names, the variable.
# The warm machinery's names. Not the word ``warm`` itself: a task class's
# ``register_task_class(..., warm=False)`` is a declaration that travels as data (the
# registration, the run spec) to the one place that decides, ``Runs.place``.
_WARM_NAMES = {"WarmWorker", "WarmWorkers", "warm_workers", "WARM_VARIABLE", "warm_fits"}
_MODE_WORDS = {"bwrap", "none"}


def _outside_the_sandbox() -> list[Path]:
    return sorted(p for p in SOURCE.rglob("*.py") if "_sandbox" not in p.relative_to(SOURCE).parts)


def _findings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            modules = [node.module or "", *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            modules = []
        found += [f"imports {m}" for m in modules if "warm" in m.split(".") or "_warm" in m]
        if isinstance(node, ast.Name) and node.id in _WARM_NAMES:
            found.append(f"names {node.id}")
        if isinstance(node, ast.Attribute) and node.attr in _WARM_NAMES:
            found.append(f"names .{node.attr}")
        if isinstance(node, ast.keyword) and node.arg in _WARM_NAMES:
            found.append(f"passes {node.arg}=")
        if isinstance(node, ast.Constant) and node.value == "CODEGENIE_WARM_WORKERS":
            found.append("reads CODEGENIE_WARM_WORKERS")
        if isinstance(node, ast.Compare):
            for side in [node.left, *node.comparators]:
                if isinstance(side, ast.Constant) and side.value in _MODE_WORDS:
                    found.append(f"compares with {side.value!r} (line {node.lineno})")
    return found


@pytest.mark.parametrize("path", _outside_the_sandbox(), ids=lambda p: str(p.relative_to(SOURCE)))
def test_nothing_outside_the_sandbox_picks_the_warm_or_plain_way(path: Path) -> None:
    """Only the provider (``_sandbox/``, which owns the warm package) chooses how a run is made."""
    assert _findings(path) == []


def test_the_fence_sees_a_module_that_branches_on_the_way(tmp_path: Path) -> None:
    module = tmp_path / "branching.py"
    module.write_text(
        "from codegenie.eval._sandbox.warm.worker import WarmWorkers\n"
        "def f(sandbox, workers):\n"
        "    if sandbox.mode == 'bwrap':\n"
        "        return execute(workers=WarmWorkers(sandbox.bubblewrap))\n",
        encoding="utf-8",
    )
    found = _findings(module)
    assert "imports codegenie.eval._sandbox.warm.worker" in found
    assert "names WarmWorkers" in found
    assert "passes workers=" not in found
    assert any(f.startswith("compares with 'bwrap'") for f in found)


# -- what a run sees, both ways ------------------------------------------------------------

# The probe: what the run sees of the machine, as JSON in its verdict. Paths given to it on
# the command line are its own (the case and candidate copies, in the run's directory).
PROBE = r"""
import json, os, resource, socket, sys

def look(path):
    try:
        st = os.statvfs(path)
    except OSError as exc:
        return ["absent", exc.errno]
    entries = sorted(os.listdir(path)) if os.path.isdir(path) else None
    return [bool(st.f_flag & os.ST_RDONLY), os.access(path, os.W_OK), entries if path != "/proc" else None]

def write(path):
    try:
        with open(os.path.join(path, ".probe"), "w") as f:
            f.write("x")
        os.unlink(os.path.join(path, ".probe"))
        return "written"
    except OSError as exc:
        return exc.errno

def proc_status():
    kept = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")
    with open("/proc/self/status") as f:
        return {k: v.strip() for k, _, v in (line.partition(":") for line in f) if k in kept}

def read(path):
    try:
        with open(path, "rb") as f:
            return len(f.read())
    except OSError as exc:
        return exc.errno

here = os.getcwd()
run_dir = os.path.dirname(here)
task = os.path.dirname(os.path.abspath(__file__))
places = {
    "/": "/", "/usr": "/usr", "/etc": "/etc", "/tmp": "/tmp", "/dev": "/dev",
    "/dev/shm": "/dev/shm", "/proc": "/proc", "/proc/1": "/proc/1", "/proc/sys": "/proc/sys",
    "/home": "/home", "/root": "/root", "/sys": "/sys", "/var": "/var",
    "TASK": task, "CASES": os.path.join(task, "cases"), "RUN": run_dir, "WORK": here,
    "HOME": os.environ.get("HOME", "/nowhere"),
}
report = {
    "seen": {name: look(path) for name, path in places.items()},
    "writes": {name: write(places[name]) for name in ("/", "/usr", "/tmp", "/dev/shm", "WORK", "TASK")},
    "proc_masked": {name: read(name) for name in ("/proc/keys", "/proc/key-users")},
    "proc_pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    "etc": sorted(os.listdir("/etc")),
    "ns": {kind: os.readlink(f"/proc/self/ns/{kind}") for kind in sorted(os.listdir("/proc/self/ns"))},
    "hostname": socket.gethostname(),
    "interfaces": sorted(name for _, name in socket.if_nameindex()),
    "status": proc_status(),
    "uid": [os.getuid(), os.geteuid(), os.getgid(), os.getegid(), sorted(os.getgroups())],
    "dumpable": os.stat("/proc/self/environ").st_uid == os.getuid(),
    "env": dict(os.environ),
    "rlimits": {name: resource.getrlimit(getattr(resource, name)) for name in dir(resource) if name.startswith("RLIMIT_")},
    "cwd": here,
    "argv_in_run": [a.startswith(run_dir) for a in sys.argv[1:]],
}
print(json.dumps({"passed": True, "reason": "probed", "report": report}))
"""


def _probe(tmp_path: Path, box: rubrics.Sandbox) -> dict[str, Any]:
    rubric, cases = bench(tmp_path, PROBE, ["c1"])
    (result,) = grade(rubric, cases, box)
    assert result.status == "passed", (result.reason, result.stderr_tail)
    assert result.verdict is not None
    text = json.dumps(result.verdict["report"], sort_keys=True)
    text = text.replace(str(tmp_path), "TMP")
    # The run's directory: its own name plainly; in its worker's directory, warm.
    text = re.sub(r"codegenie-worker-[A-Za-z0-9_]+/", "", text)
    text = re.sub(r"codegenie-(rubric|worker)-[A-Za-z0-9_]+", "RUN", text)
    harness = {kind: os.readlink(f"/proc/self/ns/{kind}") for kind in os.listdir("/proc/self/ns")}
    report: dict[str, Any] = json.loads(text)
    # A namespace's identity differs run by run: what compares is whether it is the harness's.
    report["ns"] = {kind: link == harness.get(kind) for kind, link in report["ns"].items()}
    if os.getuid() != 0:
        # RLIMIT_NPROC is the user's task count at the run's start plus the limit.
        report["rlimits"].pop("RLIMIT_NPROC")
    return report


# The one difference known: a warm worker binds the directories the runs' cgroups are made
# in (under /sys/fs/cgroup) so that each run joins its own, and each run covers /sys with an
# empty read-only directory; a plain run joins its cgroups before bubblewrap and has no /sys.
# Either way nothing of /sys is there to read or write.
def _without_the_empty_sys(report: dict[str, Any]) -> None:
    seen = report["seen"]
    if seen["/sys"] == [True, False, []]:
        seen["/sys"] = ["absent", 2]
        seen["/"][2].remove("sys")


def test_a_warm_run_and_a_plain_run_see_the_same_machine_field_by_field(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """/, /proc, mounts' read-only flags, writes, namespaces, identity, limits, environment."""
    warm_report = _probe(tmp_path / "warm", bwrap)
    assert spy == ["c1"]  # made by a warm worker
    monkeypatch.setenv("CODEGENIE_WARM_WORKERS", "0")
    plain_report = _probe(tmp_path / "plain", bwrap)
    assert spy == ["c1"]  # and this one plainly
    _without_the_empty_sys(warm_report)
    assert warm_report.keys() == plain_report.keys()
    for field, plain_value in plain_report.items():
        if isinstance(plain_value, dict):
            assert warm_report[field].keys() == plain_value.keys(), field
            for key, value in plain_value.items():
                assert warm_report[field][key] == value, f"{field}[{key}]"
        else:
            assert warm_report[field] == plain_value, field
    # And what both see is the plan's: a fresh, read-only /proc with PID 1 hidden, new
    # namespaces but the time's, no capability, the filter loaded.
    seen = plain_report["seen"]
    assert seen["/proc/1"][2] == []
    assert seen["/proc"][0] is True
    assert seen["CASES"][2] == []
    assert seen["/"][0] is True
    # bubblewrap binds /dev/null there without devices: it cannot even be opened (EACCES).
    assert plain_report["proc_masked"] == {"/proc/keys": 13, "/proc/key-users": 13}
    assert plain_report["writes"]["WORK"] == "written"
    assert plain_report["writes"]["/tmp"] == "written"
    assert plain_report["writes"]["/usr"] != "written"
    assert plain_report["writes"]["TASK"] != "written"
    assert plain_report["hostname"] == plans.HOSTNAME
    assert plain_report["interfaces"] == ["lo"]
    assert plain_report["status"]["CapEff"] == "0000000000000000"
    assert plain_report["status"]["NoNewPrivs"] == "1"
    assert plain_report["status"]["Seccomp"] == "2"
    assert {k for k, same in plain_report["ns"].items() if same} <= {"time", "time_for_children"}
