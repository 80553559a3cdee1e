"""``codegenie-bench grade`` under attack: each candidate tries one thing, through the real command.

A bench built in ``tmp_path`` holds one task class whose rubric *runs* its
candidate (``python CANDIDATE_DIR/solve.py``; a pass when it exits 0 and the
first line it prints is ``ok``), as rubrics of coding tasks do. Each
candidate tries one attack and prints ``ok`` only when the attack reached
what it aimed at, so a ``passed`` case is an attack that worked. Every test
grades with the installed console script in a subprocess, with the harness's
``HOME`` a directory holding a secret and ``GITHUB_TOKEN`` and
``AWS_SECRET_ACCESS_KEY`` in its environment, and then checks from the
outside: the case's status (and the limit an ``error`` names), the bench,
the candidates and ``HOME`` byte for byte unchanged (``tree_digest``), and
no process the run started still alive: ``grade`` runs under a watcher that
adopts, as a child subreaper, whatever the run leaves behind (so a process
that changes its pid a thousand times a second is still its child), and a
scan of ``/proc`` for the test's own directory, which is in the command line
of every process of the run, finds nothing either.

The sandboxed tests run ``grade`` as a user would, without ``--sandbox``
(the default, ``auto``); where bubblewrap cannot start, ``grade`` exits 4 and
they fail — nothing here skips for want of a sandbox. Their ``_without_
sandbox`` twins run the same candidate under ``--sandbox none`` and assert
what is *not* contained there: the documented difference. Two attacks are
not run under ``none``, because there they would harm the machine; their
skip reasons say why. No test asserts a time.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import pytest

from .factory import make_bench, write_case
from .observe import processes_with, tree_digest

SLUG = "attacks"
#: The case every attack is graded on, and another whose answer key it covets.
CASE, OTHER = "target", "other"
#: The limits of the attacked case: small, so that each breach comes within a second.
LIMITS_TOML = "timeout = 60\nmemory = 256\nprocesses = 32\nfile-size = 8\n"
SECRET = "the harness's secret"
ANSWER = "the other case's answer key"
TOKEN, AWS_KEY = "ghp_not_for_candidates", "aws-not-for-candidates"

# Runs the candidate's solve.py and passes it when it exits 0 saying "ok" first.
# Its output goes to files, not pipes, so that whatever the candidate leaves
# running cannot hold the rubric up; the candidate's stderr is passed on, as a
# rubric reporting a crash would. It keeps the candidate's output in
# CANDIDATE_DIR/output.txt, a file it writes into the candidate it was given.
RUBRIC = """\
import json, subprocess, sys, tempfile
from pathlib import Path

case, candidate = Path(sys.argv[1]), Path(sys.argv[2])
with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
    try:
        code = subprocess.call(
            [sys.executable, str(candidate / "solve.py")],
            cwd=candidate, stdin=subprocess.DEVNULL, stdout=out, stderr=err, timeout=40,
        )
    except subprocess.TimeoutExpired:
        code = "timeout"
    out.seek(0)
    err.seek(0)
    said = out.read().decode("utf-8", "replace")
    complained = err.read().decode("utf-8", "replace")
sys.stderr.write(complained[-8000:])
(candidate / "output.txt").write_text(said)
lines = said.splitlines()
passed = code == 0 and lines[:1] == ["ok"]
reason = f"solve.py: {code}: " + " | ".join(lines)
print(json.dumps({"passed": passed, "reason": reason[:400]}))
sys.exit(0 if passed else 1)
"""

# Every attack, chosen by the candidate's attack.json: {"attack": NAME, "args": [...]}.
SOLVE = r"""
import ctypes, errno, json, os, signal, socket, subprocess, sys, time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPEC = json.loads((HERE / "attack.json").read_text())
# A process started here runs this, with solve.py's path (and so the test's
# directory) in its command line: what the test's scan of /proc looks for.
SLEEP = "import pathlib, sys, time; pathlib.Path(sys.argv[2]).touch(); time.sleep(120)"
HOP = r'''
import os, sys, time
stop, end, ready, hops = sys.argv[2], time.monotonic() + float(sys.argv[3]), sys.argv[4], 0
while time.monotonic() < end and not os.path.exists(stop):
    if os.fork():
        os._exit(0)  # the parent ends; the child carries on under a new pid
    os.setpgid(0, 0)  # in a process group of its own
    hops += 1
    if hops == 200:
        open(ready, "w").close()
    time.sleep(0.0005)
'''


def code(exc):
    number = getattr(exc, "errno", None)
    return errno.errorcode.get(number, str(number)) if number else type(exc).__name__


def say(reached, detail):
    print("ok" if reached else "contained")
    print(detail, flush=True)


def quiet():
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)


def start_daemon(double_fork, tag):
    ready = HERE / f"{tag}.ready"
    first = os.fork()
    if first == 0:
        os.setsid()
        if double_fork and os.fork():
            os._exit(0)  # the middle process ends: the daemon's parent is gone
        quiet()
        os.execv(sys.executable, [sys.executable, "-c", SLEEP, str(HERE / "solve.py"), str(ready)])
    os.waitpid(first, 0) if double_fork else None
    deadline = time.monotonic() + 20
    while not ready.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def main(attack, args):
    if attack == "read":
        try:
            say(True, Path(args[0]).read_text()[:100])
        except OSError as exc:
            say(False, f"{args[0]}: {code(exc)}")
    elif attack == "write":
        try:
            with open(args[0], "a") as file:
                file.write("pwned\n")
            say(True, f"wrote {args[0]}")
        except OSError as exc:
            say(False, f"{args[0]}: {code(exc)}")
    elif attack == "connect":
        try:
            socket.create_connection(("127.0.0.1", int(args[0])), timeout=10).close()
            say(True, "connected to the host's 127.0.0.1")
        except OSError as exc:
            say(False, f"connect: {code(exc)}")
    elif attack == "env":
        found = sorted(name for name in args if name in os.environ)
        say(bool(found), f"found {found}")
    elif attack in ("setsid", "double-fork"):
        started = start_daemon(attack == "double-fork", attack)
        say(started, f"{attack} daemon started: {started}")
    elif attack == "sleep":  # a daemon, then hold the rubric up until the harness is killed
        start_daemon(False, "sleeper")
        time.sleep(120)
    elif attack == "forkbomb":
        forked = 0
        while True:
            try:
                pid = os.fork()
            except OSError as exc:
                say(False, f"forked {forked}, then {code(exc)}")
                raise  # as a crashing program does: the traceback goes to stderr
            if pid == 0:
                time.sleep(120)
                os._exit(0)
            forked += 1
            if forked == 100_000:
                say(True, "forked 100000")
                return
    elif attack == "memory":
        chunks, total = [], 0
        while total < 10 * 1024**3:
            chunks.append(bytearray(64 * 1024**2))  # zero-filled: every page is touched
            total += 64 * 1024**2
        say(True, f"allocated {total}")
    elif attack == "bigfile":
        written, chunk = 0, b"x" * (1024 * 1024)
        with open(HERE / "big.bin", "wb") as file:
            while written < 5 * 1024**3:
                try:
                    written += file.write(chunk)
                    file.flush()
                except OSError as exc:
                    say(False, f"wrote {written}, then {code(exc)}")
                    raise
        say(True, f"wrote {written}")
    elif attack == "killall":
        try:
            os.kill(-1, signal.SIGKILL)
            say(True, "sent SIGKILL to every process in reach")
        except OSError as exc:
            say(False, f"kill: {code(exc)}")
    elif attack == "ptrace":
        libc = ctypes.CDLL(None, use_errno=True)
        libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
        # PTRACE_SEIZE attaches without stopping the target; exiting detaches.
        if libc.ptrace(0x4206, int(args[0]), None, None) == 0:
            say(True, f"attached to {args[0]}")
        else:
            say(False, f"ptrace: {errno.errorcode.get(ctypes.get_errno())}")
    elif attack == "hop":
        ready = HERE / "hop.ready"
        argv = [sys.executable, "-c", HOP, str(HERE / "solve.py"), args[0], "30", str(ready)]
        subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        say(ready.exists(), f"hopping: {ready.exists()}")
    else:
        raise SystemExit(f"unknown attack {attack}")


main(SPEC["attack"], SPEC["args"])
"""

# Runs a command as a child subreaper: whatever the command leaves behind (a
# daemon, each new pid of a pid-hopper) becomes a child of this process, in
# whatever session or process group it moved to, whatever pid it has now. It
# says the command's pid at once; once the command has ended it watches its
# descendants — for a quiet spell of 0.3 s with none running, or until PATIENCE
# seconds have passed — reports those it saw running, kills them all and exits.
WATCH = r"""
import ctypes, json, os, signal, subprocess, sys, time

ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
channel, patience = os.fdopen(int(sys.argv[1]), "w"), float(sys.argv[2])
command = subprocess.Popen(sys.argv[3:])
channel.write(f"{command.pid}\n")
channel.flush()
status = None
while status is None:  # what the command left is reaped on the way
    pid, code = os.waitpid(-1, 0)
    if pid == command.pid:
        status = command.returncode = os.waitstatus_to_exitcode(code)


def children(pid):
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as file:
                found += [int(child) for child in file.read().split()]
        except OSError:
            continue
    return found


def running():  # every live process below this one; zombies among its children reaped first
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
    live, pending = [], children(os.getpid())
    while pending:
        pid = pending.pop()
        try:
            with open(f"/proc/{pid}/stat", "rb") as file:
                stat = file.read()
        except OSError:
            continue
        if stat[stat.rfind(b")") + 2 :][:1] not in (b"Z", b"X"):
            live.append(pid)
        pending += children(pid)
    return live


deadline = time.monotonic() + patience
while True:
    seen, spell = set(), time.monotonic() + 0.3
    while time.monotonic() < spell:
        seen.update(running())
        time.sleep(0.002)
    if not seen or time.monotonic() >= deadline:
        break
for _ in range(10_000):  # a hopper's next pid is this process's child too: it cannot outrun this
    live = running()
    if not live:
        break
    for pid in live:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.001)
channel.write(json.dumps({"status": status, "left": sorted(seen)}) + "\n")
"""


@dataclass
class Graded:
    """One ``grade`` run: its exit status, JSON document, stderr, and what it left running.

    ``left`` are the processes the run left behind that still ran once grade
    had ended (adopted by the watcher, :data:`WATCH`).
    """

    returncode: int
    document: dict[str, Any]
    stderr: str
    left: list[int]

    @property
    def result(self) -> dict[str, Any]:
        (result,) = self.document["results"]
        assert result["case"] == CASE
        return dict(result)

    @property
    def status(self) -> str:
        return str(self.result["status"])

    @property
    def reason(self) -> str:
        return str(self.result["reason"])


@dataclass
class Arena:
    """A bench, candidates, the harness's HOME and TMPDIR, all under one test's directory."""

    base: Path
    host_tmp: Path

    @property
    def repo(self) -> Path:
        return self.base / "repo"

    @property
    def package(self) -> Path:
        return self.repo / "bench" / SLUG

    @property
    def candidates(self) -> Path:
        return self.base / "candidates"

    @property
    def candidate(self) -> Path:
        return self.candidates / CASE

    @property
    def home(self) -> Path:
        return self.base / "home"

    @property
    def tmp(self) -> Path:
        return self.base / "tmp"

    @property
    def stop(self) -> Path:
        """A file whose existence stops a pid-hopper (visible to it only under none)."""
        return self.base / "stop"

    @property
    def marker(self) -> str:
        """In the command line of every process of a run: the test's own directory."""
        return str(self.base)

    def build(self) -> None:
        make_bench(self.repo, SLUG)
        (self.package / "rubric.py").write_text(RUBRIC, encoding="utf-8")
        cases = self.package / "cases"
        known_good = {"solve.py": "print('ok')\n", "output.txt": "ok\n"}
        write_case(cases, CASE, LIMITS_TOML, expected_files=known_good)
        write_case(cases, OTHER, "", expected_files={"answer.txt": ANSWER + "\n"})
        (self.candidates / OTHER).mkdir(parents=True)
        (self.candidates / OTHER / "answer.txt").write_text("another candidate's work\n")
        self.candidate.mkdir()
        (self.candidate / "solve.py").write_text(SOLVE, encoding="utf-8")
        self.home.mkdir()
        (self.home / "secret.txt").write_text(SECRET + "\n", encoding="utf-8")
        self.tmp.mkdir()

    def attack(self, name: str, *args: object) -> None:
        """Arm the candidate with one attack."""
        spec = {"attack": name, "args": [str(a) for a in args]}
        (self.candidate / "attack.json").write_text(json.dumps(spec), encoding="utf-8")

    def digests(self) -> tuple[str, str, str]:
        """The bench (manifest and task class), the candidates and HOME, byte for byte."""
        return tree_digest(self.repo), tree_digest(self.candidates), tree_digest(self.home)

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "HOME": str(self.home),
            "TMPDIR": str(self.tmp),
            "XDG_CACHE_HOME": str(self.base / "cache"),
            "GITHUB_TOKEN": TOKEN,
            "AWS_SECRET_ACCESS_KEY": AWS_KEY,
        }

    def start(self, *options: str, patience: float = 10.0) -> Watched:
        """Start ``grade`` (JSON output, the attacked case only) under the watcher, held back.

        ``grade`` waits for :meth:`Watched.release`; its pid is known before
        it starts (``sh`` execs it), so that a candidate can be aimed at the
        harness itself. ``patience``: how long the watcher waits for what the
        run left to end (a run expected to leave something: 0).
        """
        script = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
        assert script, "the codegenie-bench console script is not installed"
        grade = [script, "grade", SLUG, str(self.candidates), "--case", CASE, "--format", "json"]
        held = ["/bin/sh", "-c", 'read -r _; exec "$@" </dev/null', "sh", *grade, *options]
        reader, writer = os.pipe()
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", WATCH, str(writer), str(patience), *held],
                cwd=self.repo,
                env=self.env(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                pass_fds=(writer,),
                text=True,
            )
        finally:
            os.close(writer)
        channel = os.fdopen(reader, encoding="utf-8")
        return Watched(process, channel, int(channel.readline()))

    def grade(
        self, *options: str, aim: Callable[[int], None] | None = None, patience: float = 10.0
    ) -> tuple[Graded, tuple[str, str, str]]:
        """Grade the armed candidate; return the run and the digests taken just before it.

        ``aim(pid)`` arms the candidate once the harness's pid is known.
        """
        with self.start(*options, patience=patience) as run:
            if aim is not None:
                aim(run.pid)
            before = self.digests()
            run.release()
            graded = run.finish()
        assert "results" in graded.document, graded
        return graded, before

    def clean_up(self) -> None:
        """A safety net: kill whatever holds the test's directory in its command line."""
        self.stop.touch()
        for _ in range(100):
            pids = processes_with(self.marker)
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.05)
        self.host_tmp.unlink(missing_ok=True)


@dataclass
class Watched:
    """A ``grade`` started under the watcher: the watcher, its report channel, grade's pid."""

    process: subprocess.Popen[str]
    channel: TextIO
    pid: int

    def __enter__(self) -> Watched:
        return self

    def __exit__(self, *_: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()
        self.channel.close()

    def release(self) -> None:
        """Let grade start."""
        assert self.process.stdin is not None
        self.process.stdin.write("go\n")
        self.process.stdin.close()
        self.process.stdin = None  # so that communicate() does not write to it

    def finish(self) -> Graded:
        """Wait for grade and the watcher; return what grade printed and what it left running."""
        stdout, stderr = self.process.communicate(timeout=120)
        report = json.loads(self.channel.readline())
        document = json.loads(stdout) if stdout.strip() else {}
        return Graded(report["status"], document, stderr, report["left"])


@pytest.fixture
def arena(tmp_path: Path) -> Iterator[Arena]:
    """A fresh bench, candidates, HOME and TMPDIR; whatever a run left is stopped afterwards."""
    made = Arena(tmp_path, Path(f"/tmp/codegenie-attack-{secrets.token_hex(8)}.txt"))
    made.build()
    yield made
    made.clean_up()


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP listener on the host's 127.0.0.1."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        server.settimeout(0)
        yield server


@pytest.fixture
def sentinel() -> Iterator[int]:
    """A process of the harness's user outside any run: what an attack must not reach."""
    process = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL)
    yield process.pid
    process.kill()
    process.wait()


def contained(arena: Arena, graded: Graded, before: tuple[str, str, str]) -> None:
    """Assert what every sandboxed run keeps: sandboxed, nothing changed, nothing left, no copy left."""
    assert graded.document["sandbox"] == "bwrap"
    assert arena.digests() == before
    assert graded.left == []
    assert processes_with(arena.marker) == []
    assert list(arena.tmp.iterdir()) == []


def unsandboxed(graded: Graded) -> None:
    """Assert the run happened under none, and grade said so on stderr."""
    assert graded.document["sandbox"] == "none"
    assert "--sandbox none" in graded.stderr


# -- reading what the candidate must not see ------------------------------------------------

READS: dict[str, Callable[[Arena], tuple[Path, str]]] = {
    "home": lambda a: (a.home / "secret.txt", SECRET),
    "other-case-expected": lambda a: (
        a.package / "cases" / OTHER / "expected" / "answer.txt",
        ANSWER,
    ),
    "bench-manifest": lambda a: (a.repo / "bench.toml", "schema-version"),
    "other-candidate": lambda a: (a.candidates / OTHER / "answer.txt", "another candidate"),
}


@pytest.mark.parametrize("where", sorted(READS))
def test_reading_outside_the_copies_finds_nothing(arena: Arena, where: str) -> None:
    """HOME's secret, another case's answer key, bench.toml, another candidate: none exists inside."""
    path, _ = READS[where](arena)
    arena.attack("read", path)
    graded, before = arena.grade()
    assert graded.status == "failed"
    assert graded.reason == f"solve.py: 0: contained | {path}: ENOENT"
    contained(arena, graded, before)


@pytest.mark.parametrize("where", sorted(READS))
def test_reading_outside_the_copies_succeeds_without_sandbox(arena: Arena, where: str) -> None:
    """Under none the candidate reads each of them, and passes on what it read."""
    path, content = READS[where](arena)
    arena.attack("read", path)
    graded, before = arena.grade("--sandbox", "none")
    unsandboxed(graded)
    assert graded.status == "passed"
    assert content in graded.reason
    assert arena.digests() == before


# -- writing outside the copies ---------------------------------------------------------------

WRITES: dict[str, Callable[[Arena], Path]] = {
    "bench-answer-key": lambda a: a.package / "cases" / CASE / "expected" / "solve.py",
    "bench-manifest": lambda a: a.repo / "bench.toml",
    "home": lambda a: a.home / "secret.txt",
    "host-tmp": lambda a: a.host_tmp,
}


@pytest.mark.parametrize("where", sorted(WRITES))
def test_writing_outside_the_copies_changes_nothing(arena: Arena, where: str) -> None:
    """The bench's answer key, bench.toml, HOME, the host's /tmp: not one byte of them changes.

    The write fails (the path does not exist inside, or is read-only), or
    lands in the run's own memory-backed /tmp, which is where a path under
    the host's /tmp leads inside (this test's directories are there).
    """
    path = WRITES[where](arena)
    original = path.read_bytes() if path.exists() else None
    arena.attack("write", path)
    graded, before = arena.grade()
    assert graded.reason in {
        f"solve.py: 0: contained | {path}: ENOENT",
        f"solve.py: 0: contained | {path}: EROFS",
        f"solve.py: 0: ok | wrote {path}",
    }
    contained(arena, graded, before)
    assert (path.read_bytes() if path.exists() else None) == original


@pytest.mark.parametrize("where", sorted(WRITES))
def test_writing_outside_the_copies_succeeds_without_sandbox(arena: Arena, where: str) -> None:
    """Under none the candidate changes the bench, HOME or the host's /tmp."""
    path = WRITES[where](arena)
    arena.attack("write", path)
    graded, before = arena.grade("--sandbox", "none")
    unsandboxed(graded)
    assert graded.status == "passed"
    assert path.read_text().endswith("pwned\n")
    if where != "host-tmp":
        assert arena.digests() != before


# -- the network and the environment -----------------------------------------------------------


def test_a_listener_on_the_hosts_loopback_is_unreachable(
    arena: Arena, listener: socket.socket
) -> None:
    """The run has a loopback of its own: the host's 127.0.0.1 refuses, nothing reaches the listener."""
    arena.attack("connect", listener.getsockname()[1])
    graded, before = arena.grade()
    assert graded.status == "failed"
    assert graded.reason == "solve.py: 0: contained | connect: ECONNREFUSED"
    with pytest.raises(BlockingIOError):
        listener.accept()
    contained(arena, graded, before)


def test_a_listener_on_the_hosts_loopback_is_reachable_without_sandbox(
    arena: Arena, listener: socket.socket
) -> None:
    """Under none the candidate connects to the host's services."""
    arena.attack("connect", listener.getsockname()[1])
    graded, _ = arena.grade("--sandbox", "none")
    unsandboxed(graded)
    assert graded.status == "passed"
    connection, _ = listener.accept()
    connection.close()


def test_secrets_in_the_harness_environment_are_absent(arena: Arena) -> None:
    """GITHUB_TOKEN and AWS_SECRET_ACCESS_KEY, set for the harness, never reach the candidate."""
    arena.attack("env", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY")
    graded, before = arena.grade()
    assert graded.status == "failed"
    assert graded.reason == "solve.py: 0: contained | found []"
    contained(arena, graded, before)


def test_secrets_in_the_harness_environment_are_present_without_sandbox(arena: Arena) -> None:
    """Under none the candidate inherits the harness's whole environment."""
    arena.attack("env", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY")
    graded, _ = arena.grade("--sandbox", "none")
    unsandboxed(graded)
    assert graded.status == "passed"
    assert "found ['AWS_SECRET_ACCESS_KEY', 'GITHUB_TOKEN']" in graded.reason


# -- processes that try to outlive the run -----------------------------------------------------


@pytest.mark.parametrize("how", ["setsid", "double-fork"])
def test_a_daemon_dies_with_the_run(arena: Arena, how: str) -> None:
    """A setsid daemon, or a double-forked one, is gone once grade has returned."""
    arena.attack(how)
    graded, before = arena.grade()
    assert graded.status == "passed"
    assert graded.reason == f"solve.py: 0: ok | {how} daemon started: True"
    contained(arena, graded, before)


@pytest.mark.parametrize("how", ["setsid", "double-fork"])
def test_a_daemon_outlives_the_run_without_sandbox(arena: Arena, how: str) -> None:
    """Under none the daemon left the rubric's session and still runs after grade (then killed here)."""
    arena.attack(how)
    graded, _ = arena.grade("--sandbox", "none", patience=0)
    unsandboxed(graded)
    assert graded.status == "passed"
    assert len(graded.left) == 1


def test_a_pid_hopper_dies_with_the_run(arena: Arena) -> None:
    """A process that forks into a new pid and process group ~1,000 times a second dies with the run."""
    arena.attack("hop", arena.stop)
    graded, before = arena.grade()
    assert graded.status == "passed"
    assert graded.reason == "solve.py: 0: ok | hopping: True"
    contained(arena, graded, before)


def test_without_sandbox_a_pid_hopper_is_only_in_a_race_with_the_session_sweep(
    arena: Arena,
) -> None:
    """Under none only the supervisor's sweep of the rubric's session stands in a hopper's way.

    The hopper stays in the rubric's session, so the sweep that kills the
    session once the rubric has ended looks for it; with a new pid before
    each scan of /proc is over it may get away (docs/security.md says so).
    Whether it does is a race, so this pins what always holds: grade gives
    its verdict, says the run was not contained, and whatever got away is
    stopped by the arena afterwards.
    """
    arena.attack("hop", arena.stop)
    graded, _ = arena.grade("--sandbox", "none", patience=0)
    unsandboxed(graded)
    assert graded.status == "passed"


def test_killing_the_harness_outright_leaves_nothing_of_a_sandboxed_run(arena: Arena) -> None:
    """SIGKILL of grade while its rubric runs (and a daemon sleeps): bubblewrap takes everything down."""
    arena.attack("sleep")
    with arena.start() as run:
        before = arena.digests()
        run.release()
        waiting_for_the_sleeper(arena, run)
        os.kill(run.pid, signal.SIGKILL)
        graded = run.finish()
    assert graded.returncode == -signal.SIGKILL
    assert graded.left == []
    assert processes_with(arena.marker) == []
    assert arena.digests() == before  # only the run directory is left, under TMPDIR
    remove_the_run_cgroups(run.pid)


def test_killing_the_harness_outright_leaves_the_run_running_without_sandbox(
    arena: Arena,
) -> None:
    """Under none the rubric, the candidate and its daemon all outlive a grade killed outright."""
    arena.attack("sleep")
    with arena.start("--sandbox", "none", patience=0) as run:
        run.release()
        waiting_for_the_sleeper(arena, run)
        os.kill(run.pid, signal.SIGKILL)
        graded = run.finish()
    assert graded.returncode == -signal.SIGKILL
    assert len(graded.left) == 3  # the rubric, the candidate, the daemon


def waiting_for_the_sleeper(arena: Arena, run: Watched) -> None:
    """Wait until the candidate's daemon runs (a grade that ended first fails the test)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if any(b"sleeper.ready" in cmdline(pid) for pid in processes_with(arena.marker)):
            return
        assert run.process.poll() is None, run.process.communicate()
        time.sleep(0.02)
    pytest.fail("the candidate's daemon never started")


def cmdline(pid: int) -> bytes:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    return b""


def remove_the_run_cgroups(harness: int) -> None:
    """Remove the (empty) cgroups a harness killed outright had no chance to remove."""
    for root in Path("/sys/fs/cgroup").glob("*"):
        for directory in root.rglob(f"codegenie-run-{harness}-*"):
            with contextlib.suppress(OSError):
                directory.rmdir()


# -- limits ---------------------------------------------------------------------------------


def test_a_fork_bomb_is_contained_and_an_error_naming_the_process_limit(arena: Arena) -> None:
    """Forking stops at the case's process limit; the case is an error naming it, never failed."""
    arena.attack("forkbomb")
    graded, before = arena.grade()
    assert graded.status == "error"
    assert graded.result["limit"] == "processes"
    assert graded.reason == "process limit of 32 exceeded"
    contained(arena, graded, before)


@pytest.mark.skipif(
    os.getuid() == 0,
    reason="under none nothing bounds a fork bomb run as root (RLIMIT_NPROC does not apply to "
    "uid 0 and there is no cgroup): it would fill this machine's process table",
)
def test_a_fork_bomb_without_sandbox_is_bounded_by_rlimit_only(arena: Arena) -> None:
    """Under none, as a user, RLIMIT_NPROC stops it, and only the relayed stderr tells grade."""
    arena.attack("forkbomb")
    graded, _ = arena.grade("--sandbox", "none")
    unsandboxed(graded)
    assert graded.status == "error"
    assert graded.result["limit"] == "processes"


def test_allocating_10_gib_is_an_error_naming_the_memory_limit(arena: Arena) -> None:
    """A 10 GiB allocation under a 256 MiB limit ends the run as an error naming the memory limit."""
    arena.attack("memory")
    graded, before = arena.grade()
    assert graded.status == "error"
    assert graded.result["limit"] == "memory"
    assert graded.reason == "memory limit of 256 MiB exceeded"
    contained(arena, graded, before)


def test_allocating_10_gib_without_sandbox_is_stopped_per_process(arena: Arena) -> None:
    """Under none RLIMIT_AS refuses the allocation; grade learns of it from the relayed MemoryError."""
    arena.attack("memory")
    graded, before = arena.grade("--sandbox", "none")
    unsandboxed(graded)
    assert graded.status == "error"
    assert graded.result["limit"] == "memory"
    assert arena.digests() == before


@pytest.mark.parametrize("sandbox", ["auto", "none"])
def test_writing_5_gib_stops_at_the_file_size_limit(arena: Arena, sandbox: str) -> None:
    """The write stops at 8 MiB (RLIMIT_FSIZE, under none too); an error naming the file-size limit."""
    arena.attack("bigfile")
    graded, before = arena.grade("--sandbox", sandbox)
    assert graded.status == "error"
    assert graded.result["limit"] == "file-size"
    assert graded.reason == "file-size limit of 8 MiB exceeded"
    if sandbox == "auto":
        contained(arena, graded, before)
    else:
        assert arena.digests() == before


# -- the harness itself -----------------------------------------------------------------------


def test_kill_minus_one_reaches_only_the_run(arena: Arena, sentinel: int) -> None:
    """kill(-1, SIGKILL) kills the rubric, not the harness or its user's other processes: an error."""
    arena.attack("killall")
    graded, before = arena.grade()
    assert graded.returncode == 1
    assert graded.status == "error"
    assert graded.reason == "the rubric was killed by SIGKILL"
    assert os.waitid(os.P_PID, sentinel, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    contained(arena, graded, before)


def test_ptrace_of_the_harness_fails(arena: Arena) -> None:
    """ptrace is denied to every process of a run (the seccomp filter), the harness's pid aside.

    The harness's pid does not exist in the run's PID namespace either.
    """

    def aim(pid: int) -> None:
        arena.attack("ptrace", pid)

    graded, before = arena.grade(aim=aim)
    assert graded.status == "failed"
    assert graded.reason == "solve.py: 0: contained | ptrace: EPERM"
    contained(arena, graded, before)


def test_ptrace_of_the_harness_succeeds_without_sandbox(arena: Arena) -> None:
    """Under none the candidate attaches to the grade process itself."""

    def aim(pid: int) -> None:
        arena.attack("ptrace", pid)

    graded, _ = arena.grade("--sandbox", "none", aim=aim)
    unsandboxed(graded)
    assert graded.status == "passed"
    assert graded.reason.startswith("solve.py: 0: ok | attached to ")


# -- links into the answer key ------------------------------------------------------------------

LINKS: dict[str, Callable[[Arena], tuple[str, str]]] = {
    # solve.py is the answer key's own: an absolute link into the bench.
    "absolute": lambda a: ("solve.py", str(a.package / "cases" / CASE / "expected" / "solve.py")),
    # The same through the documented copy layout, to the case's copy beside the candidate's.
    "relative": lambda a: ("solve.py", f"../../case/{CASE}/expected/solve.py"),
    # A file the rubric writes (output.txt), linked to the bench's known-good one.
    "write-through": lambda a: (
        "output.txt",
        str(a.package / "cases" / CASE / "expected" / "output.txt"),
    ),
}


@pytest.mark.parametrize("sandbox", ["auto", "none"])
@pytest.mark.parametrize("link", sorted(LINKS))
def test_a_candidate_linking_into_the_answer_key_is_an_error(
    arena: Arena, link: str, sandbox: str
) -> None:
    """Links to the bench's expected/ (absolute, or relative through the copy layout) and a link
    the rubric would write through: the case is an error naming the link, under either mode."""
    name, target = LINKS[link](arena)
    for entry in arena.candidate.iterdir():
        entry.unlink()
    if name != "solve.py":
        (arena.candidate / "solve.py").write_text("print('ok')\n")
    (arena.candidate / name).symlink_to(target)
    graded, before = arena.grade("--sandbox", sandbox)
    assert graded.status == "error"
    assert graded.reason == (
        f"cannot copy {arena.candidate / name}: it is a symbolic link to {target!r}, "
        "which leads outside the candidate"
    )
    if sandbox == "auto":
        contained(arena, graded, before)
    else:
        assert arena.digests() == before
