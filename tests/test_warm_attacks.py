"""Attacks on the warm workers: what a rubric (or the candidate it runs) does to a warm run.

A warm worker (:mod:`codegenie.eval._sandbox.warm`) is one long-lived bubblewrap
sandbox whose interpreter forks every run into new mount, PID, IPC, network
and cgroup namespaces. What is new, and attacked here, is what the runs of
one worker share — the worker's memory image, its mounts, its user
namespace — and the processes between the rubric and the harness: the
run's init (PID 1 of its namespace, a fork of the worker) and the process
that joined the run's cgroups. Each test makes runs through
:func:`codegenie.eval.rubrics.run_rubrics` (the batch path of ``grade``),
with a spy proving that a warm worker made them, and passes when the
attack is contained; most compare with the plain way
(``CODEGENIE_WARM_WORKERS=0``: a bubblewrap per run). Three attacks found
here were not contained at first (``/dev`` shared by the runs of a worker:
leftovers, a forged ``/dev/fd`` for the next case, memory piled up past the
limit; a SIGINT to the run's process group ending the run's init); they are
now. The one known difference left, ``/proc/self/cmdline`` and ``environ``,
is marked ``xfail(strict=True)`` with the reason.

No test asserts a time; the only waits are bounded polls inside a rubric.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from codegenie.eval import rubrics
from codegenie.eval._sandbox.cgroups import discover
from codegenie.eval._sandbox.limits import Limits
from codegenie.eval.rubrics import RubricResult

from .devices import CHANGE_NODES, NODES, host_nodes, restore
from .warm import bench, bwrap, grade, spy

__all__ = ("bwrap", "spy")  # fixtures

pytestmark = pytest.mark.skipif(
    not os.path.exists("/proc/self/ns/user"), reason="needs Linux namespaces"
)

MACHINE = platform.machine()
# (process_vm_readv, pidfd_getfd, clone) by machine.
SYSCALLS = {"x86_64": (310, 438, 56), "aarch64": (270, 438, 220)}


def _plain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEGENIE_WARM_WORKERS", "0")


def _said(result: RubricResult) -> Any:
    """The JSON a probe rubric put in its verdict's reason."""
    assert result.verdict is not None, (result.status, result.reason, result.stderr_tail)
    return json.loads(str(result.verdict["reason"]))


def _leave_then_look(
    tmp_path: Path, rubric: str, box: rubrics.Sandbox, spy: list[str]
) -> tuple[RubricResult, RubricResult]:
    """Make ``a-leaves`` then ``b-looks`` in one worker; b passes when it found nothing of a."""
    made, cases = bench(tmp_path, rubric, ["a-leaves", "b-looks"])
    first, second = grade(made, cases, box)
    assert spy == ["a-leaves", "b-looks"]
    assert first.status == "passed", (first.reason, first.stderr_tail)
    assert (second.status, _said(second)) == ("passed", [])
    return first, second


# -- state the runs of one worker share: its /dev ----------------------------------------

# The first run leaves what it can in /dev (a tmpfs of the worker's bubblewrap, writable
# as it is in a plain run, where it dies with the run); the second reports what it finds.
DEV_LEFTOVERS = r"""
import json, os, sys
case = os.path.basename(sys.argv[1])
if case == "a-leaves":
    with open("/dev/left-by-a", "w") as f:
        f.write("a message from run a")
    os.mkfifo("/dev/fifo-by-a")
    print(json.dumps({"passed": True, "reason": "[]"}))
    sys.exit(0)
found = sorted(name for name in os.listdir("/dev") if "by-a" in name)
print(json.dumps({"passed": not found, "reason": json.dumps(found)}))
sys.exit(0 if not found else 1)
"""


def test_a_run_leaves_nothing_in_dev_for_the_next_run(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str]
) -> None:
    _leave_then_look(tmp_path, DEV_LEFTOVERS, bwrap, spy)


def test_under_the_plain_path_dev_dies_with_its_run(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference for the test above: a bubblewrap per run, a /dev per run."""
    _plain(monkeypatch)
    rubric, cases = bench(tmp_path, DEV_LEFTOVERS, ["a-leaves", "b-looks"])
    first, second = grade(rubric, cases, bwrap)
    assert spy == []
    assert first.status == "passed"
    assert (second.status, _said(second)) == ("passed", [])


# Case a's candidate (it runs in its rubric's sandbox) points /dev/fd at files of its own;
# case b's rubric is honest: it compares two outputs with bash's process substitution,
# which reads them through /dev/fd/N. The outputs differ: b must fail.
DEV_FD_FORGERY = r"""
import json, os, subprocess, sys
case = os.path.basename(sys.argv[1])
if case == "a-forges":
    os.mkdir("/dev/forged")
    for n in range(3, 256):
        with open(f"/dev/forged/{n}", "w") as f:
            f.write("the same\n")
    os.unlink("/dev/fd")
    os.symlink("/dev/forged", "/dev/fd")
    print(json.dumps({"passed": False, "reason": "a fails"}))
    sys.exit(1)
diff = subprocess.run(
    ["bash", "-c", "diff <(echo the-wrong-answer) <(echo the-expected-answer)"],
    capture_output=True,
)
same = diff.returncode == 0
print(json.dumps({"passed": same, "reason": "outputs match" if same else "outputs differ"}))
sys.exit(0 if same else 1)
"""


@pytest.mark.skipif(shutil.which("bash", path="/usr/bin:/bin") is None, reason="needs bash")
def test_a_run_cannot_forge_the_verdict_of_the_next_run_through_dev_fd(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str]
) -> None:
    rubric, cases = bench(tmp_path, DEV_FD_FORGERY, ["a-forges", "b-honest"])
    first, second = grade(rubric, cases, bwrap)
    assert spy == ["a-forges", "b-honest"]
    assert first.status == "failed"
    assert (second.status, second.reason) == ("failed", "outputs differ")


@pytest.mark.skipif(shutil.which("bash", path="/usr/bin:/bin") is None, reason="needs bash")
def test_under_the_plain_path_dev_fd_cannot_be_forged_for_the_next_run(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _plain(monkeypatch)
    rubric, cases = bench(tmp_path, DEV_FD_FORGERY, ["a-forges", "b-honest"])
    first, second = grade(rubric, cases, bwrap)
    assert spy == []
    assert (first.status, second.status, second.reason) == ("failed", "failed", "outputs differ")


# Each run writes 40 MiB into /dev under a memory limit of 64 MiB, and says what /dev holds.
DEV_FILL = r"""
import json, os, sys
case = os.path.basename(sys.argv[1])
with open(f"/dev/fill-{case}", "wb") as f:
    for _ in range(40):
        f.write(b"x" * (1 << 20))
total = sum(os.path.getsize("/dev/" + n) for n in os.listdir("/dev") if n.startswith("fill-"))
print(json.dumps({"passed": True, "reason": str(total >> 20)}))
"""


def test_runs_cannot_pile_up_memory_in_dev_past_the_memory_limit(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str]
) -> None:
    limits = Limits(memory=64, file_size=100)
    rubric, cases = bench(tmp_path, DEV_FILL, ["a", "b", "c"], limits=limits)
    results = grade(rubric, cases, bwrap)
    assert spy == ["a", "b", "c"]
    assert [r.status for r in results] == ["passed"] * 3
    assert [int(_said(r)) for r in results] == [40, 40, 40]


# -- the host's device nodes, bound into every run ----------------------------------------


# One at a time: a run that changed the nodes (the code before) would spoil another's "before".
@pytest.mark.xdist_group("host-devices")
@pytest.mark.parametrize("warm", [True, False], ids=["warm", "plain"])
def test_no_run_changes_the_host_s_device_nodes_under_any_uid(
    tmp_path: Path,
    bwrap: rubrics.Sandbox,
    spy: list[str],
    monkeypatch: pytest.MonkeyPatch,
    warm: bool,
) -> None:
    """Modes, owners, times, ACLs of the host's nodes: none changes, as root or not; each works.

    As root the sandbox's uid 0 owns the host's nodes; unprivileged, a run
    may still ``touch`` them (write permission suffices). Sealed (read-only,
    devices allowed), every change fails, seen from outside.
    """
    if not warm:
        _plain(monkeypatch)
    before = host_nodes()
    rubric, cases = bench(tmp_path, CHANGE_NODES, ["c1"])
    try:
        (result,) = grade(rubric, cases, bwrap)
        after = host_nodes()
    finally:
        if host_nodes() != before:
            restore(before)
    assert spy == (["c1"] if warm else [])
    said = _said(result)
    assert after == before
    assert (said["warm"], said["changed"]) == (warm, []), said["tried"]
    assert result.status == "passed"
    assert said["works"]["write full"] == "ENOSPC"
    assert said["streams"]["stdin"] == "device"
    assert said["tried"]["stdin futimens"] == "EROFS"
    for name in NODES:
        assert said["tried"][f"{name} touch"] == "EROFS"


# -- reaching the run's init, its parent, the worker -------------------------------------

# A rubric that handles SIGINT and signals its own process group with it (as a test
# runner interrupting what it started does). Its process group is its init's.
SIGINT_GROUP = r"""
import json, os, signal, time
got = []
signal.signal(signal.SIGINT, lambda *_: got.append(1))
os.killpg(0, signal.SIGINT)
deadline = time.monotonic() + 10
while not got and time.monotonic() < deadline:
    time.sleep(0.01)
print(json.dumps({"passed": True, "reason": f"handled {len(got)}"}))
"""


def test_sigint_to_the_rubrics_process_group_ends_as_in_a_plain_run(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rubric, cases = bench(tmp_path, SIGINT_GROUP, ["c1"])
    (warm_result,) = grade(rubric, cases, bwrap)
    assert spy == ["c1"]
    _plain(monkeypatch)
    (plain_result,) = grade(rubric, cases, bwrap)
    assert (plain_result.status, plain_result.reason) == ("passed", "handled 1")
    assert (warm_result.status, warm_result.reason) == ("passed", "handled 1")


# A candidate that wants its (failing) case to be anything but a fail, or wants to break
# the worker for the runs after it: it signals the run's init with SIGINT, the one signal
# init handles, before the rubric prints its verdict.
SIGINT_INIT = r"""
import json, os, signal, sys, time
case = os.path.basename(sys.argv[1])
if case == "a-interrupts":
    os.kill(1, signal.SIGINT)
    time.sleep(5)  # the run ends meanwhile
    print(json.dumps({"passed": False, "reason": "the candidate fails"}))
    sys.exit(1)
print(json.dumps({"passed": True, "reason": "clean"}))
"""


def test_sigint_to_init_never_makes_a_pass_and_the_worker_goes_on(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str]
) -> None:
    rubric, cases = bench(tmp_path, SIGINT_INIT, ["a-interrupts", "b-after"])
    first, second = grade(rubric, cases, bwrap)
    assert spy == ["a-interrupts", "b-after"]
    assert first.status in ("failed", "error")
    assert (second.status, second.reason) == ("passed", "clean")


# Every way of reaching the run's init (and, through it, the worker) the rubric has.
REACH_INIT = r"""
import ctypes, json, os, signal, sys
numbers = json.loads(open(os.path.join(os.path.dirname(__file__), "numbers.json")).read())
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def err():
    return os.strerror(ctypes.get_errno())
said = {}
for name in ("SIGKILL", "SIGTERM", "SIGSTOP", "SIGHUP", "SIGUSR1"):
    try:
        os.kill(1, getattr(signal, name))
        said[name] = "sent"
    except OSError as exc:
        said[name] = exc.strerror
fd = os.pidfd_open(1)
try:
    signal.pidfd_send_signal(fd, signal.SIGKILL)
    said["pidfd_send_signal"] = "sent"
except OSError as exc:
    said["pidfd_send_signal"] = exc.strerror
if numbers:
    process_vm_readv, pidfd_getfd, _ = numbers
    said["pidfd_getfd"] = err() if libc.syscall(pidfd_getfd, fd, 1, 0) < 0 else "GOT"
    buf = ctypes.create_string_buffer(8)
    iov = (ctypes.c_void_p * 2)(ctypes.cast(buf, ctypes.c_void_p), 8)
    said["process_vm_readv"] = err() if libc.syscall(process_vm_readv, 1, iov, 1, iov, 1, 0) < 0 else "READ"
said["ptrace"] = err() if libc.ptrace(16, 1, 0, 0) != 0 else "ATTACHED"  # PTRACE_ATTACH
for path in ("/proc/1/status", "/proc/1/mem", "/proc/1/environ", "/proc/1/fd/0", "/proc/1/root/"):
    try:
        with open(path, "rb") as f:
            f.read(1)
        said[path] = "READ"
    except OSError as exc:
        said[path] = exc.strerror
for path in ("/proc/sys/kernel/core_pattern", "/proc/sysrq-trigger"):
    try:
        with open(path, "w") as f:
            f.write("x")
        said[path] = "WROTE"
    except OSError as exc:
        said[path] = exc.strerror
said["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
said["fds"] = sorted(int(p) for p in os.listdir("/proc/self/fd"))
print(json.dumps({"passed": True, "reason": json.dumps(said, sort_keys=True)}))
"""


def test_the_rubric_cannot_reach_its_init_and_the_worker_goes_on(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Signals, pidfd, pidfd_getfd, process_vm_readv, ptrace, /proc/1, /proc/sys: as plain."""
    rubric, cases = bench(tmp_path, REACH_INIT, ["a-reaches", "b-reaches"])
    (rubric.parent / "numbers.json").write_text(json.dumps(SYSCALLS.get(MACHINE)))
    warm_results = grade(rubric, cases, bwrap)
    assert spy == ["a-reaches", "b-reaches"]
    _plain(monkeypatch)
    plain_results = grade(rubric, cases, bwrap)
    for result in (*warm_results, *plain_results):
        assert result.status == "passed", (result.reason, result.stderr_tail)
    warm_said = _said(warm_results[1])
    plain_said = _said(plain_results[1])
    fd_count = len(warm_said.pop("fds")), len(plain_said.pop("fds"))
    assert warm_said == plain_said
    assert fd_count[0] == fd_count[1]
    assert warm_said["pids"] == [1, 2]  # the rubric, its init hidden; the worker elsewhere
    for path in ("/proc/1/status", "/proc/1/mem", "/proc/1/environ", "/proc/1/fd/0"):
        assert warm_said[path] == "No such file or directory"
    for path in ("/proc/sys/kernel/core_pattern", "/proc/sysrq-trigger"):
        assert warm_said[path] != "WROTE"
    assert warm_said["ptrace"] == "Operation not permitted"
    if MACHINE in SYSCALLS:
        assert warm_said["pidfd_getfd"] == "Operation not permitted"
        assert warm_said["process_vm_readv"] == "Operation not permitted"


# -- capabilities, namespaces, mounts: the user namespace is the worker's ------------------

REGAIN = r"""
import ctypes, json, os, subprocess, sys
numbers = json.loads(open(os.path.join(os.path.dirname(__file__), "numbers.json")).read())
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def err(result):
    return "OK" if result == 0 else os.strerror(ctypes.get_errno())
def status(text):
    return {k: v.strip() for k, v in (l.split(":", 1) for l in text.splitlines() if ":" in l)
            if k.startswith(("Cap", "NoNewPrivs", "Seccomp"))}
said = {"self": status(open("/proc/self/status").read())}
child = subprocess.run([sys.executable, "-c", "print(open('/proc/self/status').read())"],
                       capture_output=True, text=True)
said["exec"] = status(child.stdout)
for name, flag in (("user", 0x10000000), ("mount", 0x20000), ("net", 0x40000000),
                   ("pid", 0x20000000), ("cgroup", 0x02000000), ("ipc", 0x08000000)):
    said[f"unshare {name}"] = err(libc.unshare(flag))
said["mount tmpfs"] = err(libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0, None))
said["remount / rw"] = err(libc.mount(None, b"/", None, 32 | 4096, None))
said["umount /proc/1"] = err(libc.umount2(b"/proc/1", 2))
fd = os.open("/proc/self/ns/user", os.O_RDONLY)
said["setns user"] = err(libc.setns(fd, 0))
said["chroot"] = err(libc.chroot(b"/tmp"))
if numbers:
    clone = numbers[2]
    got = libc.syscall(clone, 0x10000000 | 17, 0, 0, 0, 0)  # CLONE_NEWUSER | SIGCHLD
    if got == 0:
        os._exit(0)
    if got > 0:
        os.waitpid(got, 0)
    said["clone newuser"] = "OK" if got > 0 else os.strerror(ctypes.get_errno())
print(json.dumps({"passed": True, "reason": json.dumps(said, sort_keys=True)}))
"""


def test_no_capability_namespace_or_mount_can_be_regained(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Capabilities none (also after exec), no_new_privs, the filter: unshare, setns, mount denied."""
    rubric, cases = bench(tmp_path, REGAIN, ["c1"])
    (rubric.parent / "numbers.json").write_text(json.dumps(SYSCALLS.get(MACHINE)))
    (warm_result,) = grade(rubric, cases, bwrap)
    assert spy == ["c1"]
    _plain(monkeypatch)
    (plain_result,) = grade(rubric, cases, bwrap)
    warm_said, plain_said = _said(warm_result), _said(plain_result)
    assert warm_said == plain_said
    for each in ("self", "exec"):
        caps = warm_said[each]
        for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            assert int(caps[name], 16) == 0, (each, name)
        assert caps["NoNewPrivs"] == "1"
        assert caps["Seccomp"] == "2"
    for key, value in warm_said.items():
        if key not in ("self", "exec"):
            assert value == "Operation not permitted", key


# The zygote's frames are on the rubric's stack: its request names the run's cgroups.
CGROUP_ESCAPE = r"""
import json, os, sys
places = json.load(open(os.path.join(sys.argv[2], "cgroups.json")))
frames = []
frame = sys._getframe()
while frame is not None:
    if "request" in frame.f_locals:
        frames.append(frame.f_code.co_name)
    frame = frame.f_back
tried = {}
for place in places:
    targets = [os.path.join(place, name)
               for name in ("cgroup.procs", "tasks", "memory.limit_in_bytes", "pids.max")]
    try:
        targets += [os.path.join(place, name, "cgroup.procs") for name in os.listdir(place)]
    except OSError:
        pass
    for target in targets:
        try:
            fd = os.open(target, os.O_WRONLY)
            os.write(fd, b"0")
            os.close(fd)
            tried[target] = "WROTE"
        except OSError as exc:
            tried[target] = exc.strerror
escaped = {k: v for k, v in tried.items() if v != "No such file or directory"}
print(json.dumps({"passed": bool(tried) and not escaped and not frames,
                  "reason": json.dumps([frames, escaped, open("/proc/self/cgroup").read()])}))
"""


def test_the_cgroups_the_zygote_joined_are_out_of_reach(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str]
) -> None:
    """Told where the runs' cgroups are made, the rubric can write none of them.

    Nor can it learn its own from the worker: no frame of the worker's, which
    held the request, is left on the rubric's stack.
    """
    hierarchies = discover().values()
    if not hierarchies:
        pytest.skip("this machine gives the harness no cgroup to make runs' cgroups in")
    rubric, cases = bench(tmp_path, CGROUP_ESCAPE, ["c1"])
    places = sorted({str(p) for each in hierarchies for p in (each.parent, each.parent.parent)})
    (cases[0].input / "cgroups.json").write_text(json.dumps(places), encoding="utf-8")
    (result,) = grade(rubric, cases, bwrap)
    assert spy == ["c1"]
    assert result.status == "passed", (result.reason, result.stderr_tail)
    frames, escaped, cgroup = _said(result)
    assert (frames, escaped) == ([], {})
    assert all(line.endswith(":/") for line in cgroup.splitlines())  # its own cgroup namespace


# -- the worker's memory image, inherited by every run --------------------------------------

# The last run looks through all its memory for the paths of the runs before it (each
# request the worker read named the run's directory, codegenie-rubric-XXXXXXXX, and case).
MEMORY_SCAN = r"""
import ctypes, json, os, re, sys
case = os.path.basename(sys.argv[1])
if not case.startswith("z"):
    print(json.dumps({"passed": True, "reason": "[]"}))
    sys.exit(0)
libc = ctypes.CDLL(None)
libc.memmem.restype = ctypes.c_void_p
libc.memmem.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
mine = re.search(r"codegenie-rubric-\w{8}", sys.argv[1]).group(0)
needles = [b"codegenie-rubric-", b"/case/"]
found = set()
for line in open("/proc/self/maps").read().splitlines():
    parts = line.split()
    if "r" not in parts[1] or (len(parts) > 5 and parts[5].startswith("[v")):
        continue
    low, high = (int(x, 16) for x in parts[0].split("-"))
    for needle in needles:
        at = low
        while at < high:
            hit = libc.memmem(at, high - at, needle, len(needle))
            if not hit:
                break
            text = ctypes.string_at(hit, min(60, high - hit))
            match = re.match(rb"(codegenie-rubric-\w{8}|/case/[\w-]+)", text)
            if match:
                found.add(match.group(0).decode())
            at = hit + 1
others = sorted(f for f in found if f not in (mine, "/case/" + case))
print(json.dumps({"passed": not others, "reason": json.dumps(others)}))
sys.exit(0 if not others else 1)
"""


def test_a_run_finds_nothing_of_earlier_runs_requests_in_its_memory(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str]
) -> None:
    """Neither the run directories nor the case ids of the runs the worker made before."""
    names = ["a-" + "s" * 90, "b-secret-two", "c", "zlooks"]
    rubric, cases = bench(tmp_path, MEMORY_SCAN, names)
    results = grade(rubric, cases, bwrap)
    assert spy == names
    assert [r.status for r in results] == ["passed"] * 4, [r.reason for r in results]
    assert _said(results[-1]) == []


# Randomness a run gets without asking the kernel each time.
RANDOMNESS = r"""
import json, random, tempfile, uuid
print(json.dumps({"passed": True, "reason": json.dumps(
    [random.getrandbits(64), next(tempfile._get_candidate_names()), str(uuid.uuid4())])}))
"""


def test_runs_of_one_worker_do_not_share_random_state(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str]
) -> None:
    """random (reseeded at fork), tempfile's names, uuid4: different in every run."""
    rubric, cases = bench(tmp_path, RANDOMNESS, ["c1", "c2", "c3"])
    results = grade(rubric, cases, bwrap)
    assert spy == ["c1", "c2", "c3"]
    said = [_said(r) for r in results]
    for column in zip(*said, strict=True):
        assert len(set(column)) == len(column), column


# What the rubric's process says of its own command line and environment.
SELF_VIEW = r"""
import json, os, sys
print(json.dumps({"passed": True, "reason": json.dumps({
    "cmdline": open("/proc/self/cmdline", "rb").read().decode().split("\0")[:-1],
    "orig_argv": sys.orig_argv,
    "environ": sorted(open("/proc/self/environ", "rb").read().decode().split("\0")[:-1]),
})}))
"""


def test_the_rubric_sees_its_own_argv_in_sys_orig_argv(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str]
) -> None:
    """``sys.orig_argv`` is the run's command line, as a plain run's is."""
    rubric, cases = bench(tmp_path, SELF_VIEW, ["c1"])
    (result,) = grade(rubric, cases, bwrap)
    assert spy == ["c1"]
    said = _said(result)
    assert said["orig_argv"][1:3] == ["-B", str(rubric)], said["orig_argv"]
    assert said["orig_argv"][3].endswith("/case/c1"), said["orig_argv"]


@pytest.mark.xfail(
    strict=True,
    reason="a known difference of warm runs (ADR-0004): /proc/self/cmdline and "
    "/proc/self/environ are the worker's (its bootstrap, its HOME and TMPDIR); moving them "
    "takes prctl(PR_SET_MM), which needs CAP_SYS_RESOURCE in the initial user namespace",
)
def test_the_rubric_sees_its_own_command_line_and_environment_in_proc(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str]
) -> None:
    rubric, cases = bench(tmp_path, SELF_VIEW, ["c1"])
    (result,) = grade(rubric, cases, bwrap)
    assert spy == ["c1"]
    said = _said(result)
    assert said["cmdline"][2:] == said["orig_argv"][2:]
    assert not any("codegenie-worker-" in each for each in said["environ"]), said["environ"]


# -- leftovers, and runs side by side ------------------------------------------------------

# The first run leaves what it can beyond /tmp and /dev/shm (held by tests/test_warm_workers):
# SysV IPC objects, an abstract Unix socket bound on a socket pair, an unremovable run
# directory; the second reports what it finds.
IPC_LEFTOVERS = r"""
import ctypes, json, os, socket, stat, sys
libc = ctypes.CDLL(None, use_errno=True)
IPC_CREAT = 0o1000
case = os.path.basename(sys.argv[1])
run_dir = os.path.dirname(os.path.dirname(sys.argv[1]))
if case == "a-leaves":
    made = [libc.shmget(0x5EED, 4096, IPC_CREAT | 0o666), libc.msgget(0x5EED, IPC_CREAT | 0o666),
            libc.semget(0x5EED, 1, IPC_CREAT | 0o666)]
    left, _ = socket.socketpair()
    try:
        left.bind(b"\0codegenie-left-by-a")
    except OSError:
        pass
    os.makedirs(os.path.join(run_dir, "work", "locked", "deep"))
    with open(os.path.join(run_dir, "work", "locked", "deep", "marker-by-a"), "w") as f:
        f.write("x")
    os.chmod(os.path.join(run_dir, "work", "locked"), 0)
    print(json.dumps({"passed": all(m >= 0 for m in made), "reason": "[]"}))
    sys.exit(0)
found = []
if libc.shmget(0x5EED, 0, 0) >= 0:
    found.append("shm")
if libc.msgget(0x5EED, 0) >= 0:
    found.append("msg")
if libc.semget(0x5EED, 0, 0) >= 0:
    found.append("sem")
if "codegenie-left-by-a" in open("/proc/net/unix").read():
    found.append("abstract socket")
for top in ("/tmp", "/dev/shm"):
    for root, dirs, files in os.walk(top):
        if root.startswith(run_dir):
            dirs[:] = []
            continue
        found += [
            os.path.join(root, f) for f in files + dirs
            if ("codegenie-rubric-" in f or "by-a" in f) and os.path.join(root, f) != run_dir
        ]
print(json.dumps({"passed": not found, "reason": json.dumps(found)}))
sys.exit(0 if not found else 1)
"""


def test_ipc_sockets_and_earlier_run_directories_do_not_reach_the_next_run(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str]
) -> None:
    _leave_then_look(tmp_path, IPC_LEFTOVERS, bwrap, spy)


# Runs side by side (two workers): each leaves a marker in its run directory, /tmp, /dev/shm
# and looks, for a bounded while, for the others' markers and processes.
SIDE_BY_SIDE = r"""
import json, os, sys, time
case = os.path.basename(sys.argv[1])
run_dir = os.path.dirname(os.path.dirname(sys.argv[1]))
for where in (run_dir, "/tmp", "/dev/shm"):
    with open(os.path.join(where, "marker-" + case), "w") as f:
        f.write(case)
seen = set()
deadline = time.monotonic() + 1.5
while time.monotonic() < deadline:
    for top in ("/tmp", "/dev/shm"):
        for root, dirs, files in os.walk(top):
            for name in files + dirs:
                if (name.startswith("marker-") and name != "marker-" + case) or (
                    name.startswith("codegenie-rubric-") and not run_dir.endswith(name)):
                    seen.add(os.path.join(root, name))
    seen.update(p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid()))
    time.sleep(0.05)
print(json.dumps({"passed": not seen, "reason": json.dumps(sorted(seen))}))
"""


def test_runs_side_by_side_see_nothing_of_each_other(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str]
) -> None:
    names = ["c1", "c2", "c3", "c4"]
    rubric, cases = bench(tmp_path, SIDE_BY_SIDE, names)
    results = grade(rubric, cases, bwrap, jobs=2)
    assert sorted(spy) == names
    assert [(r.status, r.reason) for r in results] == [("passed", "[]")] * 4


# -- limits ----------------------------------------------------------------------------

LIMITED = r"""
import json, os, sys, time
case = os.path.basename(sys.argv[1])
if case == "memory":
    blocks = [bytearray(16 << 20) for _ in range(64)]
elif case == "processes":
    for _ in range(200):
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
elif case == "file-size":
    with open("big", "wb") as f:
        for _ in range(16):
            f.write(b"x" * (1 << 20))
elif case == "cpu-time":
    while True:
        pass
print(json.dumps({"passed": True, "reason": "not stopped"}))
"""


@pytest.mark.parametrize("limit", ["memory", "processes", "file-size", "cpu-time"])
def test_a_warm_run_is_held_to_its_limits(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str], limit: str
) -> None:
    """The zygote's fork joins the cgroups and sets the rlimits: each breach an error naming it."""
    limits = Limits(memory=64, processes=16, file_size=1, cpu_time=1)
    rubric, cases = bench(tmp_path, LIMITED, [limit], limits=limits)
    (result,) = grade(rubric, cases, bwrap)
    assert spy == [limit]
    assert (result.status, result.limit) == ("error", limit), (result.reason, result.stderr_tail)


# -- the worker's channels: output, status ------------------------------------------------

FLOOD = r"""
import json, os, sys
case = os.path.basename(sys.argv[1])
if case == "a-floods":
    chunk = b"y" * (1 << 20)
    for _ in range(8):
        os.write(2, chunk)
        os.write(1, chunk)
    os.close(1)
    os.close(2)
    os._exit(0)
print(json.dumps({"passed": True, "reason": "b"}))
"""


def test_a_flood_of_output_is_bounded_and_never_reaches_the_next_run(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str]
) -> None:
    rubric, cases = bench(tmp_path, FLOOD, ["a-floods", "b-after"])
    first, second = grade(rubric, cases, bwrap)
    assert spy == ["a-floods", "b-after"]
    assert first.status == "error"
    assert "more than" in str(first.reason)
    assert (second.status, second.reason, second.stderr_tail) == ("passed", "b", "")


# A rubric that exits with the statuses the worker's machinery uses (125: a setup failure
# of the zygote; 128 + 9: init's encoding of a SIGKILL) after printing a pass.
STATUSES = r"""
import json, os, sys
print(json.dumps({"passed": True, "reason": "forged"}), flush=True)
os._exit(int(os.path.basename(sys.argv[1]).split("-")[1]))
"""


def test_an_exit_status_of_the_machinery_is_never_a_pass_nor_a_setup_failure(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    names = ["s-125", "s-137", "s-0"]
    rubric, cases = bench(tmp_path, STATUSES, names)
    warm_results = grade(rubric, cases, bwrap)
    assert spy == names
    _plain(monkeypatch)
    plain_results = grade(rubric, cases, bwrap)
    pairs = [(r.status, r.exit_status, r.reason) for r in warm_results]
    assert pairs == [(r.status, r.exit_status, r.reason) for r in plain_results]
    assert [r.status for r in warm_results] == ["error", "error", "passed"]


# -- the worker's own directory, wherever the temporary directory is ----------------------

# Run a looks at the directory its run directory is in (the worker's: every run's directory
# and the worker's own working directory, which is on the worker's import path as '') and
# plants a `resource` module in each place it can write: the worker imports `resource` when
# it reaps a run, and the payload would make every later run of the worker print a pass.
# Run b fails, honestly, whatever it sees.
WORKER_DIRECTORY = r"""
import json, os, sys
PAYLOAD = '''
import importlib.machinery, importlib.util, os, sys
spec = importlib.machinery.PathFinder.find_spec(
    "resource", [p for p in sys.path if p not in ("", os.getcwd())])
real = importlib.util.module_from_spec(spec)
spec.loader.exec_module(real)
globals().update({k: v for k, v in vars(real).items() if not k.startswith("__")})
worker = vars(sys.modules["__main__"])
if "_limit" in worker:
    def _forged(request, _limit=worker["_limit"]):
        _limit(request)
        fds = sys._getframe(1).f_locals["fds"]
        os.write(fds[1], b'{"passed": true, "reason": "forged by an earlier run"}')
        os._exit(0)
    worker["_limit"] = _forged
'''
case = os.path.basename(sys.argv[1])
if case != "a-plants":
    print(json.dumps({"passed": False, "reason": "b fails"}))
    sys.exit(1)
run_dir = os.path.dirname(os.getcwd())
worker_dir = os.path.dirname(run_dir)
seen = sorted(os.listdir(worker_dir))
wrote = []
for where in ("work", "tmp", "home", "."):
    try:
        with open(os.path.join(worker_dir, where, "resource.py"), "w") as out:
            out.write(PAYLOAD)
        wrote.append(where)
    except OSError:
        pass
clean = seen == [os.path.basename(run_dir)] and not wrote
print(json.dumps({"passed": clean, "reason": json.dumps({"seen": seen, "wrote": wrote})}))
"""


@pytest.fixture(
    params=["tmp", "tmp-spelled-with-two-slashes", "inside-a-bound-directory", "var-tmp"]
)
def temporary_directory(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Any:
    """The temporary directory the workers are made in (``TMPDIR``), in each kind of place."""
    if request.param == "var-tmp":  # outside /tmp, as a TMPDIR on another disk or a tmpfs
        try:
            made = Path(tempfile.mkdtemp(prefix="codegenie-test-", dir="/var/tmp"))
        except OSError as exc:
            pytest.skip(f"no directory outside /tmp can be made here: {exc}")
    elif request.param == "inside-a-bound-directory":  # in the task class, which runs see
        made = tmp_path / "bench" / "probe" / "scratch"
        made.mkdir(parents=True)
    else:
        made = tmp_path / "tmpdir"
        made.mkdir()
    spelled = "/" + str(made) if request.param == "tmp-spelled-with-two-slashes" else str(made)
    monkeypatch.setattr(tempfile, "tempdir", spelled)
    yield made
    if request.param == "var-tmp":
        shutil.rmtree(made)


def test_a_run_sees_and_writes_nothing_of_its_worker_s_directory_wherever_it_is(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str], temporary_directory: Path
) -> None:
    made, cases = bench(tmp_path, WORKER_DIRECTORY, ["a-plants", "b-fails", "c-fails"])
    first, *later = grade(made, cases, bwrap)
    assert spy == ["a-plants", "b-fails", "c-fails"]
    assert first.status == "passed", (_said(first), first.stderr_tail)
    assert [(each.status, each.reason) for each in later] == [("failed", "b fails")] * 2
    assert list(temporary_directory.iterdir()) == []  # the workers are gone, and their runs
