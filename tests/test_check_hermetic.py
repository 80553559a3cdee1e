"""check is hermetic: one verdict per slug, whatever ran before it, and nothing outlives it."""

from __future__ import annotations

import errno
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegenie.eval.check import CheckReport, Shard, workers
from codegenie.eval.cli import main as cli_main

from .checking import check, codes, make_bench
from .factory import Bench
from .observe import running as wait_gone


def cli(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    script = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert script is not None
    return subprocess.run(
        [script, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


def rendered(report: CheckReport) -> str:
    return json.dumps([d.to_json() for d in report.diagnostics], sort_keys=True)


@pytest.fixture(autouse=True)
def _run_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Diagnostics show paths relative to the working directory: work in the bench."""
    monkeypatch.chdir(tmp_path)


# -- 1. hermetic per slug ---------------------------------------------------------------

# Registrations that change process-wide state at import time, and registrations
# that fail if they see that state. Every one of them is clean when imported
# alone, as `codegenie-bench show SLUG` in a fresh process would import it.
POLLUTERS = {
    "pol-warnings": "import warnings\nwarnings.simplefilter('error')",
    "pol-environ": "import os\nos.environ['CODEGENIE_POLLUTED'] = '1'",
    "pol-chdir": "import os\nos.chdir('/')",
    "pol-recursion": "import sys\nsys.setrecursionlimit(60)",
    "pol-monkeypatch": "import json\njson.dumps = lambda *a, **k: 'patched'",
    "pol-modules": ("import sys, types\nsys.modules['colorsys'] = types.ModuleType('colorsys')"),
    "pol-signal": "import signal\nsignal.signal(signal.SIGUSR1, signal.SIG_IGN)",
    "pol-fds": "import os\nfor fd in (0, 1, 2):\n    os.close(fd)",
}
VICTIMS = {
    "vic-warnings": "import warnings\nwarnings.warn('old', DeprecationWarning, stacklevel=1)",
    "vic-environ": "import os\nassert 'CODEGENIE_POLLUTED' not in os.environ",
    "vic-chdir": "import os, pathlib\nassert pathlib.Path('bench.toml').is_file(), os.getcwd()",
    "vic-recursion": (
        "def deep(n):\n    return n if n == 0 else deep(n - 1)\nassert deep(100) == 0"
    ),
    "vic-monkeypatch": "import json\nassert json.dumps(1) == '1'",
    "vic-modules": "import colorsys\nassert hasattr(colorsys, 'rgb_to_hsv')",
    "vic-signal": "import signal\nassert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL",
    "vic-fds": "import os\nprint('hello')\nos.write(1, b'x')\nos.write(2, b'y')\nos.fstat(0)",
}
FAILING = {"fails": "raise ValueError('always')"}


def polluted_bench(base: Path, order: list[str]) -> Bench:
    bench = Bench(base, parts=True)
    bench.write_manifest()
    sources = {**POLLUTERS, **VICTIMS, **FAILING}
    for slug in order:
        bench.add(slug, before=sources[slug])
    return bench


ALL_SLUGS = sorted({**POLLUTERS, **VICTIMS, **FAILING})
EXPECTED = [("import-failed", "fails")]


@settings(
    max_examples=5,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    order=st.permutations(ALL_SLUGS),
    jobs=st.sampled_from([1, 2, 5]),
    count=st.integers(1, 3),
)
def test_verdicts_do_not_depend_on_jobs_order_or_shards(
    tmp_path_factory: pytest.TempPathFactory, order: list[str], jobs: int, count: int
) -> None:
    """Polluting registrations never change another slug's verdict, in any order, jobs or split."""
    base = tmp_path_factory.mktemp("polluted")
    os.chdir(base)
    bench = polluted_bench(base, list(order))
    report = check(bench, jobs=jobs)
    assert codes(report) == EXPECTED
    # The one failure is located in its own file, so any order renders the same bytes.
    reference = rendered(report)
    shards = [check(bench, jobs=jobs, shard=Shard(k, count)) for k in range(1, count + 1)]
    union = sorted((d for shard in shards for d in shard.diagnostics), key=lambda d: d.sort_key())
    assert json.dumps([d.to_json() for d in union], sort_keys=True) == reference
    assert sum(shard.checked for shard in shards) == len(ALL_SLUGS)


def test_a_polluter_alone_and_a_victim_alone_are_clean(tmp_path: Path) -> None:
    """Each polluter and victim is clean in isolation: the property above tests isolation only."""
    bench = polluted_bench(tmp_path, [*POLLUTERS, *VICTIMS])
    report = check(bench, jobs=1)
    assert codes(report) == []


def test_verdict_equals_show_in_a_fresh_process(tmp_path: Path) -> None:
    """A slug check calls clean is one `show` resolves, and a failing one fails both ways."""
    bench = polluted_bench(tmp_path, ["pol-warnings", "vic-warnings", "fails"])
    report = check(bench, jobs=1)
    assert codes(report) == EXPECTED
    assert cli("show", "vic-warnings", cwd=tmp_path).returncode == 0
    assert cli("show", "fails", cwd=tmp_path).returncode == 1


# -- 2. nothing from the repository runs in a worker --------------------------------------


SHADOWS = ("json", "traceback", "contextvars", "linecache", "tokenize", "select", "threading")


def test_modules_at_the_repository_root_never_run_in_a_worker(tmp_path: Path) -> None:
    """json.py, traceback.py and friends beside bench.toml are not imported by the check."""
    bench = make_bench(tmp_path, "good")
    bench.add("raises", before="raise RuntimeError('boom')")
    bench.add("exits", before="import sys\nsys.exit(3)")
    for name in SHADOWS:
        marker = tmp_path / f"{name}.ran"
        (tmp_path / f"{name}.py").write_text(
            f"open({str(marker)!r}, 'w').close()\nraise SystemExit('shadow {name} ran')\n"
        )
    result = cli("check", "--format", "json", cwd=tmp_path)
    assert "internal error" not in result.stderr
    document = json.loads(result.stdout)
    assert {(d["code"], d["slug"]) for d in document["diagnostics"]} == {
        ("import-failed", "raises"),
        ("import-failed", "exits"),
    }
    assert not list(tmp_path.glob("*.ran"))


# -- 3. nothing outlives the check, nothing fools it ----------------------------------------


@pytest.mark.parametrize(
    ("source", "what"),
    [
        (
            "import threading, time\n"
            "threading.Thread(target=time.sleep, args=(30,), name='poller').start()",
            "1 thread (poller)",
        ),
        (
            "import threading, time\n"
            "threading.Thread(target=time.sleep, args=(30,), name='bg', daemon=True).start()",
            "1 thread (bg)",
        ),
        ("import subprocess\nsubprocess.Popen(['sleep', '30'])", "1 child process"),
        ("import os\nos.fork()", "1 child process"),
    ],
    ids=["thread", "daemon-thread", "subprocess", "fork-without-exit"],
)
def test_import_left_running_is_a_warning(tmp_path: Path, source: str, what: str) -> None:
    """Threads and processes still running after the import are import-left-running."""
    bench = make_bench(tmp_path, "aa")
    bench.add("leaves", before=source)
    bench.add("zz")
    report = check(bench, jobs=1)
    assert codes(report) == [("import-left-running", "leaves")]
    [diagnostic] = report.diagnostics
    assert diagnostic.severity == "warning"
    assert f"left {what} running" in diagnostic.message
    assert not report.ok(strict=True)


def test_processes_a_registration_starts_die_with_its_check(tmp_path: Path) -> None:
    """A child, a detached grandchild (new session) and a thread are all gone after check."""
    pids = tmp_path / "pids"
    bench = make_bench(tmp_path, "aa")
    bench.add(
        "spawns",
        before=(
            "import os, subprocess, time\n"
            f"log = open({str(pids)!r}, 'a')\n"
            "child = subprocess.Popen(['sleep', '300'])\n"
            "detached = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
            "log.write(f'{child.pid}\\n{detached.pid}\\n'); log.close()\n"
        ),
    )
    check(bench, jobs=1)
    started = [int(line) for line in pids.read_text().split()]
    assert len(started) == 2
    assert wait_gone(started) == []


# A chain of processes, each in a session of its own and the parent of the next, as deep
# as asked; the deepest writes READY. Every one carries the marker in its command line.
CHAIN = """\
import os, sys, time
depth, marker, ready = int(sys.argv[1]), sys.argv[2], sys.argv[3]
for _ in range(depth):
    os.setsid()
    if os.fork():
        break
else:
    open(ready, 'w').close()
while True:
    time.sleep(1)
"""


def _marked(marker: str) -> list[int]:
    """Return the processes whose command line holds ``marker`` and that still run."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as file:
                cmdline = file.read()
            with open(f"/proc/{name}/stat", "rb") as file:
                state = file.read().rpartition(b")")[2].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state not in {b"Z", b"X"}:
            found.append(int(name))
    return found


@pytest.mark.parametrize("depth", [2, 30])
def test_no_process_a_registration_starts_outlives_check(tmp_path: Path, depth: int) -> None:
    """A chain of setsid processes under the worker's last slug, however deep, dies with check."""
    marker = f"codegenie-chain-{os.getpid()}-{depth}"
    ready = tmp_path / "ready"
    (tmp_path / "chain.py").write_text(CHAIN)
    bench = make_bench(tmp_path, "aa", "bb")
    bench.add(
        "chain",
        before=(
            "import os, subprocess, sys, time\n"
            f"subprocess.Popen([sys.executable, {str(tmp_path / 'chain.py')!r}, '{depth}',"
            f" {marker!r}, {str(ready)!r}])\n"
            "deadline = time.monotonic() + 30\n"
            f"while not os.path.exists({str(ready)!r}) and time.monotonic() < deadline:\n"
            "    time.sleep(0.01)\n"
        ),
    )
    try:
        for _ in range(3):
            ready.unlink(missing_ok=True)
            report = check(bench, jobs=1)
            assert codes(report) == [("import-left-running", "chain")]
            assert ready.exists()
            assert wait_gone(_marked(marker), within=2.0) == []
    finally:
        for pid in _marked(marker):
            os.kill(pid, signal.SIGKILL)


def test_a_grandchild_holding_the_pipes_does_not_delay_a_crash(tmp_path: Path) -> None:
    """A registration that dies while its fork keeps every pipe open is import-crashed, not a timeout."""
    bench = make_bench(tmp_path, "aa")
    bench.add(
        "dies",
        before=(
            "import os, time\n"
            "if os.fork() == 0:\n"
            "    time.sleep(60)\n"
            "    os._exit(0)\n"
            "os._exit(5)\n"
        ),
    )
    report = check(bench, jobs=1, timeout=30.0)
    assert codes(report) == [("import-crashed", "dies")]
    assert "exited with status 5" in report.diagnostics[0].message


def test_a_fork_that_falls_back_into_the_worker_blames_no_one_else(tmp_path: Path) -> None:
    """os.fork() without exit is that slug's warning; the slugs after it stay clean."""
    bench = Bench(tmp_path, parts=True)
    bench.write_manifest()
    bench.add("forks", before="import os\nos.fork()")
    for slug in ("next-one", "next-two", "next-three"):
        bench.add(slug)
    report = check(bench, jobs=1)
    assert codes(report) == [("import-left-running", "forks")]


FORGE = (
    "import json, os\n"
    "forged = json.dumps({'kind': 'done', 'registered': ['forges'], 'error': None,"
    " 'not_registered': False, 'rubric': [], 'left_running': '', 'id': 1,"
    " 'pid': os.getpid()}).encode() + b'\\n'\n"
    "for fd in range(3, 64):\n"
    "    try:\n"
    "        os.write(fd, forged)\n"
    "    except OSError:\n"
    "        pass\n"
)


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        ("raise RuntimeError('hidden failure')", "import-failed"),
        ("os._exit(0)", "import-failed"),
    ],
    ids=["then-raises", "then-exits"],
)
def test_forged_answers_are_the_forgers_problem(tmp_path: Path, tail: str, expected: str) -> None:
    """A registration writing fake answers to every descriptor fails itself, nobody else."""
    bench = Bench(tmp_path, parts=True)
    bench.write_manifest()
    bench.add("forges", before=FORGE + tail)
    for slug in ("next-one", "next-two"):
        bench.add(slug)
    started = time.monotonic()
    report = check(bench, jobs=1, timeout=120.0)
    assert [slug for _, slug in codes(report)] == ["forges"]
    assert codes(report)[0][0] in {expected, "import-crashed"}
    for found in report.diagnostics:  # nothing to show under -v: the hint does not ask for it
        assert "-v" not in (found.hint or ""), found
    # Concluded when the forger's process ended, not when its import timeout ran out.
    assert time.monotonic() - started < 60


# What a forger answers for itself: clean, in whichever protocol the check speaks.
FORGED_DOCUMENT = """\
import json, os, sys
from codegenie.eval.check import _protocol, _worker

def request_of_the_caller():
    # The request this process serves, read from the check's own frames (none under show).
    frame = sys._getframe()
    while frame is not None:
        found = frame.f_locals.get('request')
        if isinstance(found, dict) and 'id' in found:
            return found
        frame = frame.f_back
    return None

def clean(slug):
    here = os.path.dirname(os.path.abspath(__file__))
    parts = {'rubric_file': os.path.join(here, 'rubric.py'), 'rubric_exists': True,
             'cases_found': True, 'case_problems': [], 'cases': []}
    if 'case_problems_unlisted' in _protocol.Parts.__annotations__:
        parts = {**parts, 'case_problems_unlisted': 0, 'cases': parts.pop('cases')}
    return {'registered': [slug], 'error': None, 'not_registered': False, 'rubric': [],
            'left_running': '', 'parts': parts}

request = request_of_the_caller()
"""

# Through /proc: the worker's answer channel, opened again, gets a clean answer.
FORGE_THROUGH_PROC = (
    FORGED_DOCUMENT
    + """\
def forge():
    answer = {'id': request['id'], 'kind': 'done', 'orphans': 0, **clean('forger-proc')}
    if 'threads' in _protocol.Done.__annotations__:
        answer = {'id': request['id'], 'kind': 'done', 'orphans': 0, 'threads': 0,
                  **clean('forger-proc')}
    line = (json.dumps(answer) + '\\n').encode()
    worker = os.getppid()
    for name in os.listdir(f'/proc/{worker}/fd'):
        try:
            fd = os.open(f'/proc/{worker}/fd/{name}', os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            os.write(fd, line)
        except OSError:
            pass
        os.close(fd)

if request is not None:
    forge()
raise RuntimeError('broken for real')
"""
)

# On its own result channel: a clean document, then an exit before the probe's code runs.
FORGE_AND_EXIT = (
    FORGED_DOCUMENT
    + """\
if request is not None:
    head = {'id': request['id'], 'pid': os.getpid()}
    if hasattr(_worker, '_Result'):
        head['cases'] = 0
    line = (json.dumps({**head, **clean('forger-exit')}) + '\\n').encode()
    for fd in range(3, 256):
        try:
            os.write(fd, line)
        except OSError:
            pass
    os._exit(0)
"""
)


def test_forged_answers_fool_neither_their_own_verdict_nor_anothers(tmp_path: Path) -> None:
    """Answers forged via /proc/<worker>/fd, or on the result channel then os._exit, fool nobody."""
    bench = Bench(tmp_path, parts=True)
    bench.write_manifest()
    bench.add("forger-proc", before=FORGE_THROUGH_PROC)
    bench.add("innocent-one")
    # Registers nothing, and its one case is invalid: show fails on it twice over.
    bench.add("forger-exit", register=None, before=FORGE_AND_EXIT)
    (bench.root / "forger_exit" / "cases" / "example" / "case.toml").write_text("timeout = -1\n")
    bench.add("innocent-two")
    shown = {
        slug
        for slug in ("forger-proc", "innocent-one", "forger-exit", "innocent-two")
        if cli("show", slug, cwd=tmp_path).returncode != 0
    }
    assert shown == {"forger-proc", "forger-exit"}
    for _ in range(2):
        report = check(bench, jobs=1)
        assert {slug: code for code, slug in codes(report)} == {
            "forger-proc": "import-failed",
            "forger-exit": "import-failed",
        }


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_interrupting_check_leaves_no_process_behind(tmp_path: Path, signum: int) -> None:
    """SIGINT, SIGTERM or SIGHUP ends check (128 + the signal), its workers and their children."""
    pids = tmp_path / "pids"
    bench = make_bench(tmp_path, "aa")
    bench.add(
        "hangs",
        before=(
            "import os, subprocess, time\n"
            "child = subprocess.Popen(['sleep', '300'])\n"
            f"with open({str(pids)!r}, 'w') as log:\n"
            "    log.write(f'{os.getppid()} {os.getpid()} {child.pid}')\n"
            "while True:\n"
            "    time.sleep(1)\n"
        ),
    )
    script = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert script is not None
    process = subprocess.Popen(
        [script, "check", "--jobs", "2", "--timeout", "120"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    end = time.monotonic() + 60
    while not (pids.exists() and len(pids.read_text().split()) == 3):
        assert time.monotonic() < end, "the hanging registration never started"
        time.sleep(0.05)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 128 + signum
    assert b"Traceback" not in stderr
    assert b"internal error" not in stderr
    assert wait_gone([int(pid) for pid in pids.read_text().split()]) == []


def _open_files(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))


def test_check_fits_its_workers_in_the_open_file_limit(tmp_path: Path) -> None:
    """Under ulimit -n 256, check --jobs 128 on 130 task classes checks them all, with no error."""
    slugs = [f"t{index:03d}" for index in range(130)]
    bench = make_bench(tmp_path, *slugs)
    bench.add("broken", before="raise ValueError('broken')")
    script = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert script is not None
    result = subprocess.run(
        [script, "check", "--jobs", "128", "--format", "json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        preexec_fn=lambda: _open_files(256),
    )
    assert "internal error" not in result.stderr
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    assert document["checked"] == 131
    assert [(d["code"], d["slug"]) for d in document["diagnostics"]] == [
        ("import-failed", "broken")
    ]


def test_the_open_file_limit_caps_the_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """As many workers as ulimit -n leaves room for, at least one; no cap without a limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        for limit, most in ((256, 24), (1024, 120), (16, 1)):
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
            assert workers.most_workers() == most
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    monkeypatch.setattr(resource, "getrlimit", lambda _: (resource.RLIM_INFINITY,) * 2)
    assert workers.most_workers() is None


def test_no_descriptor_for_a_worker_is_check_unavailable_not_a_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """When the system gives check no worker at all, it exits 4 (check-unavailable), blaming no slug."""

    def refused() -> tuple[int, int]:
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    make_bench(tmp_path, "aa", "bb")
    monkeypatch.setattr(workers, "_socket_pair", refused)
    assert cli_main(["check", "--format", "json"]) == 4
    error = json.loads(capsys.readouterr().out)["error"]
    assert (error["type"], error["code"]) == ("CheckUnavailable", "check-unavailable")
    assert error["attributes"] == {"cause": "cannot start a worker process: Too many open files"}
    assert error["diagnostics"][0]["slug"] is None


def test_the_death_of_check_leaves_no_process_behind(tmp_path: Path) -> None:
    """When check itself is killed outright, its workers and their children die too."""
    pids = tmp_path / "pids"
    bench = make_bench(tmp_path, "aa")
    bench.add(
        "hangs",
        before=(
            "import os, subprocess, time\n"
            "child = subprocess.Popen(['sleep', '300'])\n"
            f"with open({str(pids)!r}, 'w') as log:\n"
            "    log.write(f'{os.getppid()} {os.getpid()} {child.pid}')\n"
            "while True:\n"
            "    time.sleep(1)\n"
        ),
    )
    script = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert script is not None
    process = subprocess.Popen(
        [script, "check", "--timeout", "120"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    end = time.monotonic() + 60
    while not (pids.exists() and len(pids.read_text().split()) == 3):
        assert time.monotonic() < end, "the hanging registration never started"
        time.sleep(0.05)
    process.kill()
    process.wait(timeout=30)
    assert wait_gone([int(pid) for pid in pids.read_text().split()]) == []


def test_a_stderr_flood_does_not_grow_checks_memory(tmp_path: Path) -> None:
    """300 MB written to stderr leaves check's peak memory small; only the tail is kept."""
    bench = make_bench(tmp_path, "aa")
    bench.add(
        "floods",
        before=(
            "import os\n"
            "block = b'x' * (1 << 20)\n"
            "for _ in range(300):\n"
            "    os.write(2, block)\n"
            "os.write(2, b'THE-END')\n"
            "os._exit(9)\n"
        ),
    )
    code = (
        "import resource, sys\n"
        "from pathlib import Path\n"
        "from codegenie.eval.check import CheckOptions, run_check\n"
        "report = run_check(Path('bench.toml'), CheckOptions(jobs=1, timeout=120))\n"
        "print(report.diagnostics[0].message[-40:])\n"
        # ru_maxrss of this process would include the pytest process it was
        # forked from (Linux keeps it across exec): read this mm's own peak.
        "status = open('/proc/self/status').read()\n"
        "me = int(status.split('VmHWM:')[1].split()[0])\n"
        "kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
        "print(max(me, kids))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    message, peak_kib = result.stdout.splitlines()
    assert "THE-END" in message
    assert int(peak_kib) < 200 * 1024
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > 0


@pytest.mark.parametrize(
    ("source", "code"),
    [
        ("x = " + "1 + " * 200_000 + "1\n", "source-unparsable"),
        ("x = " + "[" * 3000 + "]" * 3000 + "\n", "import-failed"),
        ("x = 1\n\0\n", "import-failed"),
    ],
    ids=["200000-terms", "3000-deep", "nul-byte"],
)
def test_unparsable_source_is_its_slugs_problem(tmp_path: Path, source: str, code: str) -> None:
    """Source no parser can take is source-unparsable (a syntax error import-failed), never internal."""
    bench = make_bench(tmp_path, "aa")
    bench.add("huge", source=source)
    result = cli("check", "--format", "json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    document = json.loads(result.stdout)
    assert [(d["code"], d["slug"]) for d in document["diagnostics"]] == [(code, "huge")]


RUBRIC_ROUTES = {
    "spec-from-file-location": (
        "import importlib.util, os\n"
        "path = os.path.join(os.path.dirname(__file__), 'rub' + 'ric.py')\n"
        "spec = importlib.util.spec_from_file_location('r', path)\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
    ),
    "runpy": (
        "import os, runpy\n"
        "runpy.run_path(os.path.join(os.path.dirname(__file__), 'rub' + 'ric.py'))\n"
    ),
    "exec-open": (
        "import os\n"
        "path = os.path.join(os.path.dirname(__file__), 'rub' + 'ric.py')\n"
        "exec(open(path).read())\n"
    ),
}


@pytest.mark.parametrize("route", sorted(RUBRIC_ROUTES))
def test_every_route_to_a_rubric_is_rubric_imported(tmp_path: Path, route: str) -> None:
    """importlib, runpy and exec(open(...)) of rubric.py are caught by the audit hooks."""
    bench = make_bench(tmp_path, "aa")
    bench.add("sneaky", before=RUBRIC_ROUTES[route])
    (bench.root / "sneaky" / "rubric.py").write_text("VALUE = 1\n")
    report = check(bench)
    assert codes(report) == [("rubric-imported", "sneaky")]
    assert "rubric.py" in report.diagnostics[0].message


@pytest.mark.parametrize("value", ["inf", "1e308", "0.5"])
def test_timeout_accepts_any_positive_value(tmp_path: Path, value: str) -> None:
    """--timeout takes any positive number, inf included, without an overflow."""
    make_bench(tmp_path, "aa")
    result = cli("check", "--timeout", value, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "internal error" not in result.stderr


# -- 4. roots outside the manifest, code the manifest did not name ---------------------------


def test_root_outside_the_manifest_is_never_imported(tmp_path: Path) -> None:
    """A root linked outside the manifest's directory is root-outside, its code never run."""
    elsewhere = tmp_path / "elsewhere"
    marker = tmp_path / "ran"
    outside = Bench(elsewhere, parts=True)
    outside.add("far", before=f"open({str(marker)!r}, 'w').close()")
    repo = tmp_path / "repo"
    bench = make_bench(repo, "aa")
    (repo / "vendor").symlink_to(elsewhere)
    bench.add("far", root="vendor/bench", write=False)
    os.chdir(repo)
    report = check(bench)
    assert codes(report) == [("root-outside", "far")]
    assert report.diagnostics[0].file == "bench.toml"
    assert not marker.exists()


def test_a_module_beside_the_root_package_never_runs(tmp_path: Path) -> None:
    """A bench.py beside bench/ is found by spec lookup and reported without being executed."""
    marker = tmp_path / "ran"
    bench = make_bench(tmp_path, "aa")
    (tmp_path / "bench.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    report = check(bench)
    assert codes(report) == [("import-failed", "aa")]
    assert "found bench.py instead of bench/aa/registration.py" in report.diagnostics[0].message
    assert not marker.exists()


@pytest.mark.parametrize("kind", ["fifo", "device", "directory"])
def test_check_on_a_manifest_that_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    """check --manifest on a FIFO, a device or a directory reports it at once and exits 4, never hangs."""
    if kind == "fifo":
        target = tmp_path / "bench.toml"
        os.mkfifo(target)
    elif kind == "device":
        target = Path("/dev/zero")
    else:
        target = tmp_path / "bench.toml"
        target.mkdir()
    result = cli("--manifest", str(target), "check", "--format", "json", cwd=tmp_path, timeout=60)
    assert result.returncode == 4, result.stderr  # no manifest it can read, as in every command
    [diagnostic] = json.loads(result.stdout)["diagnostics"]
    assert diagnostic["code"] == "manifest-syntax"
    assert diagnostic["line"] == 1
