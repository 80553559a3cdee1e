"""codegenie.eval._sandbox.seccomp: the filter's program, read by a BPF interpreter, and used for real.

The program is checked two ways: by running it, instruction by instruction,
in a small classic-BPF interpreter over system calls the test makes up
(every denied call denied, with its errno; hypothesis for the rest), and by
running a rubric under it in the sandbox (what rubrics need still works).
The escapes it stops, through the real ``grade``, are in
``tests/test_grade_escapes.py``.
"""

from __future__ import annotations

import errno
import json
import struct
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codegenie.eval._sandbox import seccomp
from codegenie.eval.cases import Case
from codegenie.eval.rubrics import run_rubric

ALLOW = 0x7FFF0000
KILL_PROCESS = 0x80000000


def errno_of(action: int) -> int | None:
    """The errno a SECCOMP_RET_ERRNO action returns, else None."""
    return action & 0xFFFF if action & 0xFFFF0000 == 0x00050000 else None


def evaluate(program: bytes, nr: int, arch: int, args: tuple[int, ...] = ()) -> int:
    """Run a classic-BPF seccomp program over one made-up call; return its action."""
    words = [arg & 0xFFFFFFFFFFFFFFFF for arg in args]  # as the kernel passes them: unsigned
    data = struct.pack("=iIQ6Q", nr, arch, 0, *(words + [0] * (6 - len(words))))
    ops = [struct.unpack("=HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    accumulator, pc = 0, 0
    for _ in range(len(ops) + 1):
        code, jt, jf, k = ops[pc]
        if code == 0x20:  # ld [k]
            (accumulator,) = struct.unpack_from("=I", data, k)
            pc += 1
        elif code == 0x54:  # and k
            accumulator &= k
            pc += 1
        elif code in (0x15, 0x35, 0x45):  # jeq, jge, jset
            taken = {
                0x15: accumulator == k,
                0x35: accumulator >= k,
                0x45: bool(accumulator & k),
            }[code]
            pc += 1 + (jt if taken else jf)
        elif code == 0x06:  # ret k
            return int(k)
        else:  # pragma: no cover - the program uses no other instruction
            raise AssertionError(f"unknown instruction {code:#x}")
    raise AssertionError("the program does not return")  # pragma: no cover


MACHINES = ("x86_64", "aarch64", "riscv64")


@pytest.mark.parametrize("name", MACHINES)
def test_every_denied_call_fails_with_eperm(name: str) -> None:
    """Each call of DENIED that the machine has returns EPERM; clone3 returns ENOSYS."""
    table = seccomp.machine(name)
    program = seccomp.program(name)
    assert table is not None
    assert program is not None
    assert len(program) % 8 == 0
    denied = [call for call in seccomp.DENIED if call in table.numbers]
    assert {"ptrace", "keyctl", "add_key", "request_key", "process_vm_writev"} <= set(denied)
    for call in denied:
        action = evaluate(program, table.numbers[call], table.audit_arch)
        assert errno_of(action) == errno.EPERM, call
    clone3 = evaluate(program, table.numbers["clone3"], table.audit_arch)
    assert errno_of(clone3) == errno.ENOSYS


@pytest.mark.parametrize("name", MACHINES)
def test_the_arguments_of_clone_socket_socketpair_and_ioctl_decide(name: str) -> None:
    """Namespaces, AF_UNIX sockets, datagram pairs and TIOCSTI are denied; the rest allowed."""
    table = seccomp.machine(name)
    program = seccomp.program(name)
    assert table is not None
    assert program is not None
    numbers, arch = table.numbers, table.audit_arch

    def action(call: str, *args: int) -> int:
        return evaluate(program, numbers[call], arch, args)

    sigchld = 17
    assert action("clone", 0x01200000 | sigchld) == ALLOW  # fork's flags
    assert action("clone", 0x003D0F00) == ALLOW  # a thread's flags
    for flag in (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000):
        assert errno_of(action("clone", flag | sigchld)) == errno.EPERM, hex(flag)
    assert errno_of(action("socket", 1, 1, 0)) == errno.EPERM  # AF_UNIX, SOCK_STREAM
    assert errno_of(action("socket", 1, 2 | 0x80000, 0)) == errno.EPERM  # SOCK_CLOEXEC too
    assert action("socket", 2, 1, 0) == ALLOW  # AF_INET
    assert action("socket", 10, 2, 0) == ALLOW  # AF_INET6, UDP
    assert action("socketpair", 1, 1 | 0x80000, 0) == ALLOW  # a stream pair
    assert action("socketpair", 1, 5, 0) == ALLOW  # a sequenced-packet pair
    assert errno_of(action("socketpair", 1, 2, 0)) == errno.EPERM  # a datagram pair
    assert errno_of(action("socketpair", 1, 2 | 0x800, 0)) == errno.EPERM  # non-blocking too
    assert errno_of(action("ioctl", 0, 0x5412)) == errno.EPERM  # TIOCSTI
    assert errno_of(action("ioctl", 0, 0x5412 | (1 << 32))) == errno.EPERM  # high bits ignored
    assert errno_of(action("ioctl", 0, 0x541C)) == errno.EPERM  # TIOCLINUX
    assert action("ioctl", 0, 0x5401) == ALLOW  # TCGETS


@pytest.mark.parametrize("name", MACHINES)
def test_no_file_without_a_name_and_no_preallocation(name: str) -> None:
    """O_TMPFILE and fallocate fail with EOPNOTSUPP, openat2 with ENOSYS; other opens pass."""
    table = seccomp.machine(name)
    program = seccomp.program(name)
    assert table is not None
    assert program is not None
    numbers, arch = table.numbers, table.audit_arch

    def action(call: str, *args: int) -> int:
        return evaluate(program, numbers[call], arch, args)

    o_tmpfile = 0x400000 | (0x4000 if name == "aarch64" else 0x10000)
    assert errno_of(action("openat", -100, 0, o_tmpfile | 2)) == errno.EOPNOTSUPP
    assert action("openat", -100, 0, 0o102 | 0x80000) == ALLOW  # O_CREAT|O_RDWR|O_CLOEXEC
    assert action("openat", -100, 0, 0x10000) == ALLOW  # O_DIRECTORY alone
    if "open" in numbers:
        assert errno_of(action("open", 0, o_tmpfile | 1)) == errno.EOPNOTSUPP
        assert action("open", 0, 0o1101) == ALLOW  # O_WRONLY|O_CREAT|O_TRUNC
    assert errno_of(action("fallocate", 3, 0, 0, 1 << 30)) == errno.EOPNOTSUPP
    assert errno_of(action("openat2", -100, 0, 0, 24)) == errno.ENOSYS


@pytest.mark.parametrize("name", MACHINES)
def test_another_system_call_table_kills_the_process(name: str) -> None:
    """A call through the 32-bit table (another audit arch) is killed, and on x86_64 an x32 one."""
    table = seccomp.machine(name)
    program = seccomp.program(name)
    assert table is not None
    assert program is not None
    i386 = 0x40000003
    assert evaluate(program, 0, i386) == KILL_PROCESS
    if table.x32:
        assert evaluate(program, 0x40000000 | 0, table.audit_arch) == KILL_PROCESS


SPECIAL = (
    "clone",
    "socket",
    "socketpair",
    "ioctl",
    "clone3",
    "openat2",
    "fallocate",
    "open",
    "openat",
)


@given(st.integers(min_value=0, max_value=600))
def test_every_other_call_is_allowed(nr: int) -> None:
    """Any number that names no denied or argument-checked call is allowed, on every machine."""
    for name in MACHINES:
        table = seccomp.machine(name)
        program = seccomp.program(name)
        assert table is not None
        assert program is not None
        named = {
            number for call, number in table.numbers.items() if call in (*seccomp.DENIED, *SPECIAL)
        }
        if nr not in named:
            assert evaluate(program, nr, table.audit_arch) == ALLOW


def test_an_unknown_machine_has_no_filter() -> None:
    """ppc64le, s390x, i686…: no table, no program (the sandbox then refuses to start)."""
    assert seccomp.machine("ppc64le") is None
    assert seccomp.program("ppc64le") is None


# What a rubric can still do under the filter: processes, threads, pools, event loops.
RUBRIC = textwrap.dedent(
    """
    import asyncio, json, multiprocessing, socket, subprocess, sys, threading

    def square(x):
        return x * x

    if __name__ == "__main__":
        done = {}
        with multiprocessing.get_context("fork").Pool(2) as pool:
            done["fork-pool"] = pool.map(square, [1, 2, 3])
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            done["spawn-pool"] = pool.map(square, [4])
        left, right = multiprocessing.Pipe()
        left.send("x")
        done["pipe"] = right.recv()
        done["asyncio"] = asyncio.run(asyncio.sleep(0, result="slept"))
        thread = threading.Thread(target=lambda: done.setdefault("thread", True))
        thread.start()
        thread.join()
        done["subprocess"] = subprocess.run(
            [sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True
        ).stdout.strip()
        with socket.socket() as server:
            server.bind(("127.0.0.1", 0))
            server.listen()
            with socket.create_connection(server.getsockname()):
                done["loopback"] = True
        print(json.dumps({"passed": True, "reason": json.dumps(done, sort_keys=True)}))
    """
)


def test_what_rubrics_need_still_works_in_the_sandbox(tmp_path: Path) -> None:
    """fork and spawn pools, pipes, asyncio, threads, subprocesses and the loopback, under the filter."""
    task = tmp_path / "task"
    (task / "cases" / "one" / "input").mkdir(parents=True)
    (task / "cases" / "one" / "expected").mkdir()
    rubric = task / "rubric.py"
    rubric.write_text(RUBRIC, encoding="utf-8")
    candidate = tmp_path / "candidate"
    candidate.mkdir()
    case = Case(task_class="t", id="one", directory=task / "cases" / "one")
    result = run_rubric(rubric, case, candidate, sandbox="auto")
    assert result.sandbox == "bwrap"
    assert result.status == "passed", (result.reason, result.stderr_tail)
    assert json.loads(result.reason or "") == {
        "asyncio": "slept",
        "fork-pool": [1, 4, 9],
        "loopback": True,
        "pipe": "x",
        "spawn-pool": [16],
        "subprocess": "42",
        "thread": True,
    }
