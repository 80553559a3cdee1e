"""codegenie.eval._process: the one supervisor of child processes, on real processes."""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from codegenie.eval._process import procfs
from codegenie.eval._process.output import Bounds, Output, Sink
from codegenie.eval._process.supervisor import (
    DRAIN_GRACE,
    Child,
    Ending,
    NotStarted,
    Usage,
    fork,
    run,
    set_dumpable,
    signal_name,
    spawn,
    stop_here,
    undumpable,
)

from .interrupts import interrupts_inside
from .observe import gone

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

PY = sys.executable


def python(code: str) -> list[str]:
    """The argv that runs ``code`` (dedented) in a fresh interpreter."""
    return [PY, "-c", textwrap.dedent(code)]


def open_fds() -> set[str]:
    """This process's open file descriptors."""
    return set(os.listdir("/proc/self/fd"))


def reaped(pid: int) -> bool:
    """Whether ``pid`` is no child of this process any more: reaped, no zombie left."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def read_pids(path: Path, count: int) -> list[int]:
    """Wait until ``path`` holds ``count`` process IDs; return them."""
    deadline = time.monotonic() + 60
    while True:
        if path.exists():
            pids = [int(word) for word in path.read_text().split()]
            if len(pids) == count:
                return pids
        assert time.monotonic() < deadline, f"{path} never got {count} pids"
        time.sleep(0.01)


# -- bounded output -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bounds", "chunks", "head", "tail"),
    [
        (Bounds(head=4), [b"abcdefgh"], b"abcd", b""),
        (Bounds(tail=4), [b"abcdefgh"], b"", b"efgh"),
        (Bounds(head=3, tail=3), [b"ab", b"cdefg", b"hi"], b"abc", b"ghi"),
        (Bounds(head=3, tail=10), [b"abcdef"], b"abc", b"def"),
        (Bounds(head=10, tail=10), [b"abc"], b"abc", b""),
        (Bounds(tail=3), [b"a"] * 20, b"", b"aaa"),
        (Bounds(), [b"abc"], b"", b""),
    ],
)
def test_a_sink_keeps_the_head_and_the_tail_never_the_same_byte_twice(
    bounds: Bounds, chunks: list[bytes], head: bytes, tail: bytes
) -> None:
    """The head is the stream's first bytes, the tail its last ones after the head; size counts all."""
    sink = Sink(bounds)
    for chunk in chunks:
        sink.feed(chunk)
    output = sink.output()
    assert (output.head, output.tail) == (head, tail)
    assert output.size == sum(map(len, chunks))
    assert output.complete == (output.size == len(head) + len(tail))


def test_output_text_marks_what_was_dropped() -> None:
    """Text is head and tail decoded (bad bytes replaced), with … where bytes were dropped."""
    assert Output(b"start ", b"end", 9).text() == "start end"
    assert Output(b"start", b"end\xff", 100).text() == "start\n…\nend\ufffd"
    assert Output(b"", b"  end  ", 100).text() == "end"


def test_negative_bounds_are_refused() -> None:
    """A bound below zero is a ValueError that names both bounds."""
    with pytest.raises(ValueError, match="head=-1, tail=0"):
        Bounds(head=-1)


def test_a_flood_on_both_streams_is_kept_within_bounds(tmp_path: Path) -> None:
    """64 MiB on stdout and stderr: the head and the tail are exact, memory stays small."""
    flood = python(
        """
        import sys
        chunk = b"x" * (1 << 20)
        sys.stdout.buffer.write(b"FIRST")
        for _ in range(64):
            sys.stdout.buffer.write(chunk)
            sys.stderr.buffer.write(chunk)
        sys.stdout.buffer.write(b"LAST")
        sys.stderr.buffer.write(b"THE END")
        """
    )
    tracemalloc.start()
    try:
        ending = run(flood, stdout=Bounds(head=1000, tail=1000), stderr=Bounds(tail=5000))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert ending.returncode == 0
    assert ending.stdout is not None
    assert ending.stderr is not None
    assert ending.stdout.size == 64 * (1 << 20) + len(b"FIRSTLAST")
    assert ending.stdout.head == b"FIRST" + b"x" * 995
    assert ending.stdout.tail == b"x" * 996 + b"LAST"
    assert ending.stdout.overflowed
    assert ending.stderr.tail == b"x" * 4993 + b"THE END"
    assert ending.stderr.head == b""
    assert peak < 4 * (1 << 20)


def test_stderr_can_share_the_stdout_pipe() -> None:
    """stderr="stdout": both streams land in one pipe, in the order written."""
    ending = run(
        python(
            """
            import os
            os.write(1, b"out ")
            os.write(2, b"err")
            """
        ),
        stdout=Bounds(head=100),
        stderr="stdout",
    )
    assert ending.stdout is not None
    assert ending.stdout.head == b"out err"
    assert ending.stderr is None


def test_uncaptured_streams_go_to_dev_null_and_stdin_is_at_end_of_file() -> None:
    """Without bounds a stream is discarded; stdin reads end of file at once."""
    ending = run(
        python(
            """
            import sys
            print("ignored")
            sys.exit(0 if sys.stdin.read() == "" else 1)
            """
        ),
    )
    assert (ending.returncode, ending.stdout, ending.stderr) == (0, None, None)


# -- how it ended ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "returncode", "how"),
    [
        ("pass", 0, "exited with status 0"),
        ("raise SystemExit(3)", 3, "exited with status 3"),
        (
            "import os, signal; os.kill(os.getpid(), signal.SIGTERM)",
            -15,
            "killed by signal SIGTERM",
        ),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", -9, "killed by signal SIGKILL"),
    ],
)
def test_the_ending_says_how_the_child_ended(code: str, returncode: int, how: str) -> None:
    """An exit status or the signal that killed it, in the words reports use."""
    ending = run(python(code))
    assert (ending.returncode, ending.how) == (returncode, how)
    assert ending.exit_status == (returncode if returncode >= 0 else None)
    assert ending.signal == (-returncode if returncode < 0 else None)
    assert not ending.timed_out
    assert not ending.cancelled


def test_a_signal_without_a_name_is_given_by_its_number() -> None:
    """signal_name falls back to the number; the ending's wording too."""
    usage = Usage(wall_s=0.0, user_s=0.0, system_s=0.0, peak_rss_bytes=0)
    assert Ending(pid=1, returncode=-200, usage=usage).how == "killed by signal 200"
    assert signal_name(200) == "signal 200"
    assert signal_name(signal.SIGSEGV) == "SIGSEGV"


def test_usage_reports_wall_cpu_and_peak_memory() -> None:
    """The reaped child's CPU time and peak resident memory are those it used."""
    ending = run(
        python(
            """
            block = bytearray(64 * 1024 * 1024)
            for i in range(0, len(block), 4096):
                block[i] = 1
            total = 0
            for i in range(2_000_000):
                total += i
            """
        )
    )
    assert ending.returncode == 0
    assert ending.usage.peak_rss_bytes >= 64 * 1024 * 1024
    assert ending.usage.cpu_s > 0
    assert ending.usage.cpu_s == ending.usage.user_s + ending.usage.system_s
    assert ending.usage.wall_s > 0


def test_a_program_that_cannot_start_is_not_started() -> None:
    """A missing program raises NotStarted with the system's reason; nothing leaks."""
    before = open_fds()
    with pytest.raises(NotStarted) as raised:
        spawn(["/nonexistent/program"], stdout=Bounds(head=10), stderr=Bounds(tail=10))
    assert raised.value.reason == "No such file or directory"
    assert open_fds() == before


# -- deadline, cancellation, interruption ---------------------------------------------------------


def test_the_deadline_kills_the_child(tmp_path: Path) -> None:
    """Past its timeout the child is killed (SIGKILL) and the ending says timed out."""
    ending = run(python("import time; time.sleep(600)"), timeout=0.5)
    assert ending.timed_out
    assert ending.returncode == -signal.SIGKILL
    assert reaped(ending.pid)


def test_without_a_pidfd_the_exit_is_polled() -> None:
    """Where pidfd_open is missing the exit and the deadline still work."""
    assert run(python("raise SystemExit(4)"), pidfd=lambda pid: None).returncode == 4
    slow = run(python("import time; time.sleep(600)"), timeout=0.5, pidfd=lambda pid: None)
    assert slow.timed_out


def test_a_cancel_event_set_from_another_thread_stops_the_child(tmp_path: Path) -> None:
    """Setting the event kills the child's tree; the ending says cancelled, not timed out."""
    pid_file = tmp_path / "pids"
    cancel = threading.Event()

    def stop() -> None:
        read_pids(pid_file, 2)
        cancel.set()

    thread = threading.Thread(target=stop)
    thread.start()
    try:
        ending = run(
            python(
                f"""
                import os, subprocess, sys, time
                child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
                open({str(pid_file)!r}, "w").write(f"{{os.getpid()}} {{child.pid}}")
                time.sleep(600)
                """
            ),
            timeout=120,
            cancel=cancel,
        )
    finally:
        thread.join()
    assert ending.cancelled
    assert not ending.timed_out
    assert all(gone(pid) for pid in read_pids(pid_file, 2))


def test_keyboard_interrupt_kills_and_reaps_the_tree_then_propagates(tmp_path: Path) -> None:
    """Ctrl-C while watching: the child and its child are killed and reaped, the interrupt raised."""
    pid_file = tmp_path / "pids"
    before = open_fds()

    def interrupt() -> None:
        read_pids(pid_file, 2)
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=interrupt)
    thread.start()
    child = spawn(
        python(
            f"""
            import os, subprocess, sys, time
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            open({str(pid_file)!r}, "w").write(f"{{os.getpid()}} {{child.pid}}")
            time.sleep(600)
            """
        ),
        stdout=Bounds(head=100),
    )
    try:
        with interrupts_inside(Child.wait), pytest.raises(KeyboardInterrupt):
            child.wait(120)
    finally:
        thread.join()
    assert reaped(child.pid)
    assert all(gone(pid) for pid in read_pids(pid_file, 2))
    assert open_fds() == before


# -- the whole tree dies ---------------------------------------------------------------------


def test_what_the_child_leaves_in_its_group_is_killed_when_it_exits(tmp_path: Path) -> None:
    """A grandchild still running when the child exits dies with it."""
    pid_file = tmp_path / "pid"
    ending = run(
        python(
            f"""
            import subprocess, sys
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            open({str(pid_file)!r}, "w").write(str(child.pid))
            """
        ),
        timeout=120,
    )
    assert ending.returncode == 0
    assert gone(int(pid_file.read_text()))


def test_a_process_that_leaves_the_group_but_not_the_session_is_killed(tmp_path: Path) -> None:
    """setpgid (as job control does) takes a process out of the group, not out of reach."""
    pid_file = tmp_path / "pid"
    ending = run(
        python(
            f"""
            import os, subprocess, sys
            child = subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(600)"],
                preexec_fn=os.setpgrp,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            assert os.getpgid(child.pid) == child.pid != os.getpgid(0)
            open({str(pid_file)!r}, "w").write(str(child.pid))
            """
        ),
        stdout=Bounds(head=100),
        timeout=120,
    )
    assert ending.returncode == 0
    assert gone(int(pid_file.read_text()))


def test_a_new_session_below_a_child_that_times_out_is_killed(tmp_path: Path) -> None:
    """setsid leaves the session, but a process still below the child is found and killed."""
    pid_file = tmp_path / "pid"
    ending = run(
        python(
            f"""
            import subprocess, sys, time
            child = subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(600)"],
                start_new_session=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            open({str(pid_file)!r}, "w").write(str(child.pid))
            time.sleep(600)
            """
        ),
        timeout=2,
    )
    assert ending.timed_out
    assert gone(int(pid_file.read_text()))


def test_a_process_beyond_reach_holding_the_pipes_is_given_up_on(tmp_path: Path) -> None:
    """A process that left the session and was orphaned keeps the pipes: the exit is still seen."""
    pid_file = tmp_path / "pid"
    started = time.monotonic()
    try:
        ending = run(
            python(
                f"""
                import os, subprocess, sys
                # Its own session, orphaned at once: beyond the supervisor's reach.
                orphan = (
                    "import os, time\\n"
                    "if os.fork() == 0:\\n"
                    "    open({str(pid_file)!r}, 'w').write(str(os.getpid()))\\n"
                    "    time.sleep(600)\\n"
                )
                subprocess.run([sys.executable, "-c", orphan], start_new_session=True)
                while not os.path.exists({str(pid_file)!r}):
                    pass
                print("done", flush=True)
                os._exit(5)
                """
            ),
            stdout=Bounds(head=100),
            timeout=120,
        )
        assert ending.returncode == 5
        assert ending.stdout is not None
        assert ending.stdout.head == b"done\n"
        # Not a measure of speed: the exit was seen without waiting for the 120 s timeout.
        assert time.monotonic() - started < 60 + DRAIN_GRACE
    finally:
        stray = read_pids(pid_file, 1)[0]
        os.kill(stray, signal.SIGKILL)  # the test's own stray, by its id
    assert gone(stray)


def test_an_unwaited_child_is_killed_and_reaped_on_close() -> None:
    """Leaving a Child's with block kills and reaps it, however far it got."""
    with spawn(python("import time; time.sleep(600)"), stdout=Bounds(head=10)) as child:
        assert not child.has_exited()
    assert reaped(child.pid)
    assert child.wait().cancelled  # the ending it got when closed


def test_nothing_leaks_no_zombie_no_descriptor() -> None:
    """After many runs (exits, timeouts) no descriptor and no zombie is left behind."""
    before = open_fds()
    pids = []
    for index in range(20):
        code = "import time; time.sleep(600)" if index % 5 == 0 else "print('x')"
        ending = run(python(code), timeout=0.3, stdout=Bounds(head=10), stderr=Bounds(tail=10))
        pids.append(ending.pid)
    assert open_fds() == before
    assert all(reaped(pid) for pid in pids)


# -- fork ------------------------------------------------------------------------------------


def test_a_forked_body_runs_in_a_session_of_its_own_and_its_status_is_the_exit() -> None:
    """fork: the body's return is the exit status; stdout, stderr and extra pipes are captured."""

    def body(pipes: tuple[int, ...]) -> int:
        os.write(pipes[0], f"{os.getsid(0)} {os.getpgid(0)} {os.getpid()}".encode())
        os.write(1, b"to stdout\n")
        os.write(2, b"to stderr")
        return 7

    child = fork(body, stdout=Bounds(head=100), stderr=Bounds(tail=100), pipes=(Bounds(head=100),))
    result = child.wait(60)
    assert result.returncode == 7
    sid, pgid, pid = result.pipes[0].head.split()
    assert sid == pgid == pid == str(result.pid).encode()
    assert result.stdout is not None
    assert result.stderr is not None
    assert (result.stdout.head, result.stderr.tail) == (b"to stdout\n", b"to stderr")


def test_a_forked_body_that_raises_exits_with_status_70() -> None:
    """An exception in the body never returns into the caller's code: status 70."""

    def body(pipes: tuple[int, ...]) -> int:
        raise RuntimeError("boom")

    assert fork(body, stderr=Bounds(tail=10)).wait(60).returncode == 70


def _answering(then: str) -> Callable[[tuple[int, ...]], int]:
    """A body that writes one line on its channel, then stops itself or exits."""

    def body(channels: tuple[int, ...]) -> int:
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
        os.write(channels[0], b"the answer\n")
        if then == "stop":
            stop_here()
        return 0

    return body


@pytest.mark.parametrize("then", ["stop", "exit"])
def test_an_answer_counts_only_from_a_child_seen_stopped(then: str) -> None:
    """wait(answered=...): a child that stops after answering is stopped; one that exits is not."""
    sink = Sink(Bounds(head=100))
    child = fork(_answering(then), pipes=(sink,))
    ending = child.wait(60, answered=lambda: b"\n" in sink.output().head)
    assert ending.pipes[0].head == b"the answer\n"
    assert ending.stopped is (then == "stop")
    if then == "stop":  # killed where it stopped, its two threads counted first
        assert (ending.signal, ending.threads) == (signal.SIGKILL, 2)
    else:
        assert (ending.returncode, ending.threads) == (0, 0)


def _open_errno(path: str) -> int | None:
    """The errno of opening ``path`` for writing; ``None`` if it opened."""
    try:
        os.close(os.open(path, os.O_WRONLY))
    except OSError as exc:
        return exc.errno
    return None


def test_a_forked_childs_channels_cannot_be_opened_through_proc() -> None:
    """The extra channels are socket pairs: /proc/PID/fd/N of either end opens for no one."""
    ready = threading.Event()

    def body(channels: tuple[int, ...]) -> int:
        os.write(channels[0], b"x")
        time.sleep(60)
        return 0

    child = fork(body, pipes=(Sink(Bounds(head=1)),), stdout=Bounds(head=1))
    try:
        for owner in (child.pid, os.getpid()):
            for name in os.listdir(f"/proc/{owner}/fd"):
                try:
                    target = os.readlink(f"/proc/{owner}/fd/{name}")
                except FileNotFoundError:  # the listing's own descriptor, closed since
                    continue
                if target.startswith("socket:"):
                    found = _open_errno(f"/proc/{owner}/fd/{name}")
                    if found == errno.ENOENT:  # a descriptor of another thread, closed since
                        continue
                    assert found == errno.ENXIO, f"{target}: {found}"
                    ready.set()
        assert ready.is_set()
    finally:
        child.close()


def test_undumpable_closes_this_process_and_restores_it() -> None:
    """undumpable(): PR_GET_DUMPABLE is 0 inside, and what it was after."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    before = prctl(3, 0, 0, 0, 0)
    with undumpable() as closed:
        assert closed
        assert prctl(3, 0, 0, 0, 0) == 0
    assert prctl(3, 0, 0, 0, 0) == before
    assert set_dumpable(True)


_SWEEPING = """
import os, sys, time
from codegenie.eval._process import procfs
from codegenie.eval._process.supervisor import become_subreaper, kill_children

assert become_subreaper()
depth, ready = int(sys.argv[1]), sys.argv[2]
if os.fork() == 0:
    for _ in range(depth):  # a chain, each in a session of its own
        os.setsid()
        if os.fork():
            break
    else:
        open(ready, "w").close()
    time.sleep(600)
while not os.path.exists(ready):
    time.sleep(0.01)
print(kill_children(), len(procfs.children()))
"""


def test_kill_children_sweeps_a_chain_of_any_depth(tmp_path: Path) -> None:
    """An adopting process's sweep kills and reaps a chain of 40 setsid processes, all of it."""
    result = subprocess.run(
        [PY, "-c", _SWEEPING, "40", str(tmp_path / "ready")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert result.stdout.split() == ["41", "0"]


_ADOPTING = """
import os, sys, time
from codegenie.eval._process.supervisor import become_subreaper, fork

assert become_subreaper()
pid_file = sys.argv[1]

def body(pipes):
    # A daemon: a new session, orphaned at once (its parent exits), so it is adopted.
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            with open(pid_file, "w") as file:
                file.write(str(os.getpid()))
            time.sleep(600)
        os._exit(0)
    while not os.path.exists(pid_file) or not open(pid_file).read():
        time.sleep(0.01)
    return 0

ending = fork(body, reach="adopted").wait(60)
print(ending.returncode, ending.orphans)
"""


def test_an_adopting_parent_kills_what_made_a_session_of_its_own(tmp_path: Path) -> None:
    """Reach "adopted": a daemon (setsid, then orphaned) is adopted, counted and killed."""
    pid_file = tmp_path / "daemon.pid"
    result = subprocess.run(
        [PY, "-c", _ADOPTING, str(pid_file)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    returncode, orphans = result.stdout.split()
    assert returncode == "0"
    assert int(orphans) >= 1
    assert gone(int(pid_file.read_text()))


# -- /proc -----------------------------------------------------------------------------------


def test_proc_lists_children_and_tells_a_zombie_from_a_running_process() -> None:
    """children() finds a child of this process; running() is false once it is a zombie."""
    child = subprocess.Popen([PY, "-c", "import time; time.sleep(600)"])
    try:
        assert child.pid in procfs.children()
        assert procfs.running(child.pid)
    finally:
        child.kill()
    assert gone(child.pid)  # killed, not reaped yet: a zombie has ended
    assert not procfs.running(child.pid)
    child.wait()
    assert child.pid not in procfs.children()


def test_proc_finds_the_members_of_a_session_in_other_groups(tmp_path: Path) -> None:
    """session_members() finds a process that moved to a group of its own, not the leader."""
    pid_file = tmp_path / "pid"
    child = spawn(
        python(
            f"""
            import os, subprocess, sys, time
            moved = subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(600)"], preexec_fn=os.setpgrp
            )
            open({str(pid_file)!r}, "w").write(str(moved.pid))
            time.sleep(600)
            """
        )
    )
    with child:
        [moved] = read_pids(pid_file, 1)
        assert procfs.session_members(child.pid) == [moved]
    assert gone(moved)
