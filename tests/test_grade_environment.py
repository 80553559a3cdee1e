"""Task classes in environments of their own: graded and checked in them, contained, keyed by them.

Every environment here is built from wheels the test makes itself (no
index), except in the one test that uses the package index
(``test_a_real_package_from_the_index``); the installed console script runs
in a subprocess, with the sandbox the machine gives (``--sandbox auto``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from codegenie.eval._env.python import find_python
from codegenie.eval._env.store import open_environment

from .factory import Bench, make_bench, write_case
from .wheels import make_wheel, offline_requirements

REPO = Path(__file__).resolve().parent.parent
OUTPUT_SCHEMA = json.loads((REPO / "docs" / "cli-output.schema.json").read_text())

# Passes when the candidate's answer.txt holds what tinypkg says; reports what it ran in.
RUBRIC = """\
import importlib.util, json, sys
from pathlib import Path
import tinypkg

answer = Path(sys.argv[2]) / "answer.txt"
passed = answer.is_file() and answer.read_text().strip() == tinypkg.VERSION
print(json.dumps({
    "passed": passed,
    "reason": f"tinypkg {tinypkg.VERSION}",
    "executable": sys.executable,
    "prefix": sys.prefix,
    "version": list(sys.version_info[:2]),
    "harness": [m for m in ("pydantic", "codegenie", "structlog")
                if importlib.util.find_spec(m) is not None],
}))
sys.exit(0 if passed else 1)
"""


def script() -> str:
    found = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert found, "the codegenie-bench console script is not installed"
    return found


def cli(bench: Bench, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [script(), *args],
        cwd=bench.base,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def declare(bench: Bench, slug: str, **keys: str) -> None:
    """Add ``keys`` (environment, python) to ``slug``'s entry of the bench's manifest."""
    text = bench.manifest.read_text()
    header = f"[task-classes.{slug}]\n"
    start = text.index(header)
    end = text.index('root = "bench"\n', start) + len('root = "bench"\n')
    added = "".join(f'{key} = "{value}"\n' for key, value in keys.items())
    bench.manifest.write_text(text[:end] + added + text[end:])


def task_class(bench: Bench, slug: str, rubric: str = RUBRIC, *, answer: str = "1.0") -> Path:
    bench.add(slug, parts=True)
    directory = bench.root / slug.replace("-", "_")
    (directory / "rubric.py").write_text(rubric)
    shutil.rmtree(directory / "cases")
    write_case(
        directory / "cases",
        "example",
        'description = "An example case."\n',
        input_files={"answer.txt": "wrong\n"},
        expected_files={"answer.txt": f"{answer}\n"},
    )
    return directory


@pytest.fixture
def bench(tmp_path: Path) -> Bench:
    made = make_bench(tmp_path / "repo")
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "tinypkg", "1.0", "VERSION = '1.0'\n")
    make_wheel(wheels, "tinypkg", "2.0", "VERSION = '2.0'\n")
    offline_requirements(made.base / "envs" / "tiny.txt", wheels, "tinypkg==1.0")
    return made


def candidates(base: Path, answers: dict[str, str]) -> Path:
    for case, answer in answers.items():
        (base / case).mkdir(parents=True, exist_ok=True)
        (base / case / "answer.txt").write_text(answer)
    return base


def assert_shape(document: Any, shape: str) -> None:
    schema = {**OUTPUT_SCHEMA, "$ref": f"#/$defs/{shape}"}
    jsonschema.Draft202012Validator(schema).validate(document)


def test_a_rubric_runs_in_its_own_environment_not_the_harness(
    bench: Bench, env_dir: Path, tmp_path: Path
) -> None:
    task_class(bench, "tiny-task")
    declare(bench, "tiny-task", environment="envs/tiny.txt")
    given = candidates(tmp_path / "cands", {"example": "1.0"})
    done = cli(bench, "grade", "tiny-task", str(given), "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert "building the environment of tiny-task" in done.stderr
    environment = report["environment"]
    assert environment["digest"].startswith("blake2b-256:")
    assert environment["requirements"] == str(bench.base / "envs" / "tiny.txt")
    own = find_python(None)
    assert own is not None
    assert environment["python"] == own.version
    assert report["run"]["python"].startswith(own.version)
    verdict = report["results"][0]["verdict"]
    built = open_environment(environment["digest"])
    assert built is not None
    assert verdict["prefix"] == str(built.path)
    assert verdict["harness"] == []  # none of the harness's packages
    assert report["results"][0]["status"] == "passed"


def test_no_build_refuses_with_the_command_to_run(
    bench: Bench, env_dir: Path, tmp_path: Path
) -> None:
    task_class(bench, "tiny-task")
    declare(bench, "tiny-task", environment="envs/tiny.txt")
    given = candidates(tmp_path / "cands", {"example": "1.0"})
    refused = cli(bench, "grade", "tiny-task", str(given), "--no-build")
    assert refused.returncode == 4
    assert "environment-not-built" in refused.stderr
    assert "codegenie-bench env build tiny-task" in refused.stderr
    assert not env_dir.exists() or not [p for p in env_dir.iterdir() if p.name != ".locks"]
    built = cli(bench, "env", "build", "tiny-task")
    assert built.returncode == 0, built.stderr
    assert cli(bench, "grade", "tiny-task", str(given), "--no-build").returncode == 0


def test_changing_a_pin_reruns_that_task_class_and_no_other(
    bench: Bench, env_dir: Path, tmp_path: Path
) -> None:
    task_class(bench, "tiny-task")
    bench.add("plain-task", parts=True)  # rewrites the manifest: before declare
    declare(bench, "tiny-task", environment="envs/tiny.txt")
    given = tmp_path / "all"
    candidates(given / "tiny-task", {"example": "1.0"})
    candidates(given / "plain-task", {"example": "solved"})

    def reused() -> dict[str, int]:
        done = cli(bench, "grade", "--all", str(given), "--format", "json")
        assert done.returncode in (0, 1), done.stderr
        suite = json.loads(done.stdout)
        return {doc["task_class"]: doc["reused"] for doc in suite["task_classes"]}

    assert reused() == {"plain-task": 0, "tiny-task": 0}
    assert reused() == {"plain-task": 1, "tiny-task": 1}
    requirements = bench.base / "envs" / "tiny.txt"
    requirements.write_text(requirements.read_text().replace("tinypkg==1.0", "tinypkg==2.0"))
    assert reused() == {"plain-task": 1, "tiny-task": 0}


# What a candidate runs, through the rubric, against its own environment.
ATTACK_RUBRIC = """\
import json, os, subprocess, sys, sysconfig
from pathlib import Path

site = Path(sysconfig.get_paths()["purelib"])
tried = {}
for name, action in {
    "write": lambda: (site / "evil.pth").write_text("import os\\n"),
    "overwrite": lambda: (site / "tinypkg" / "__init__.py").write_text("VERSION = 'x'\\n"),
    "remove": lambda: (site / "tinypkg" / "__init__.py").unlink(),
    "mkdir": lambda: (Path(sys.prefix) / "new").mkdir(),
    "chmod": lambda: os.chmod(site, 0o777),
}.items():
    try:
        action()
        tried[name] = "done"
    except OSError as exc:
        tried[name] = type(exc).__name__
for name, command in {
    "pip": [sys.executable, "-m", "pip", "install", "tinypkg"],
    "ensurepip": [sys.executable, "-m", "ensurepip"],
    "uv": ["uv", "pip", "install", "--python", sys.executable, "tinypkg"],
}.items():
    try:
        done = subprocess.run(command, capture_output=True, timeout=120)
        tried[name] = done.returncode
    except (OSError, subprocess.TimeoutExpired) as exc:
        tried[name] = type(exc).__name__
print(json.dumps({"passed": False, "reason": "attacked", "tried": tried}))
sys.exit(1)
"""


def test_a_candidate_cannot_write_or_install_into_its_environment(
    bench: Bench, env_dir: Path, tmp_path: Path
) -> None:
    task_class(bench, "tiny-task", ATTACK_RUBRIC)
    declare(bench, "tiny-task", environment="envs/tiny.txt")
    given = candidates(tmp_path / "cands", {"example": "1.0"})
    done = cli(bench, "grade", "tiny-task", str(given), "--format", "json", "--sandbox", "bwrap")
    if done.returncode == 4 and "sandbox-unavailable" in done.stderr:
        pytest.skip("bubblewrap cannot start here")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    result = report["results"][0]
    verdict = result["verdict"]
    tried = verdict["tried"]
    assert all(tried[name] != "done" for name in ("write", "overwrite", "remove", "mkdir", "chmod"))
    assert all(tried[name] != 0 for name in ("pip", "ensurepip", "uv")), tried
    built = open_environment(report["environment"]["digest"])
    assert built is not None  # whole: nothing of it changed
    assert not (built.path / "new").exists()


def test_check_rubrics_runs_each_rubric_in_its_environment(bench: Bench, env_dir: Path) -> None:
    task_class(bench, "tiny-task")
    declare(bench, "tiny-task", environment="envs/tiny.txt")
    refused = cli(bench, "check", "--rubrics", "--no-build")
    assert refused.returncode == 4
    assert "codegenie-bench env build tiny-task" in refused.stderr
    done = cli(bench, "check", "--rubrics")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "building the environment of tiny-task" in done.stderr


def test_env_list_build_prune(bench: Bench, env_dir: Path) -> None:
    task_class(bench, "tiny-task")
    bench.add("plain-task", parts=True)  # rewrites the manifest: before declare
    declare(bench, "tiny-task", environment="envs/tiny.txt")
    listed = json.loads(cli(bench, "env", "list", "--format", "json").stdout)
    assert [row["task_class"] for row in listed["environments"]] == ["tiny-task"]
    assert listed["environments"][0]["built"] is False
    assert listed["directory"] == str(env_dir)
    assert cli(bench, "env", "build", "tiny-tsk").returncode == 3
    built = cli(bench, "env", "build", "--format", "json")
    assert built.returncode == 0, built.stderr
    rows = json.loads(built.stdout)["environments"]
    assert [(row["task_class"], row["state"]) for row in rows] == [("tiny-task", "built")]
    again = json.loads(cli(bench, "env", "build", "--format", "json").stdout)["environments"]
    assert again[0]["state"] == "kept"
    listed = json.loads(cli(bench, "env", "list", "--format", "json").stdout)
    assert listed["environments"][0]["built"] is True
    stray = env_dir / ("f" * 64)
    stray.mkdir()
    pruned = json.loads(cli(bench, "env", "prune", "--format", "json").stdout)
    assert pruned["removed"] == [str(stray)]
    assert pruned["kept"] == [rows[0]["digest"]]
    assert Path(rows[0]["path"]).is_dir()
    assert cli(bench, "env", "prune", "tiny-task").returncode == 2


VERSION_RUBRIC = """\
import json, sys
print(json.dumps({"passed": sys.version_info[:2] == (3, 12), "reason": sys.version}))
sys.exit(0 if sys.version_info[:2] == (3, 12) else 1)
"""


def test_a_task_class_on_another_python(bench: Bench, env_dir: Path, tmp_path: Path) -> None:
    other = find_python("3.12")
    if other is None:
        if os.environ.get("CI"):
            pytest.fail("CI machines have Python 3.12; none was found")
        pytest.skip("this machine has no Python 3.12")
    task_class(bench, "old-task", VERSION_RUBRIC)
    declare(bench, "old-task", python="3.12")
    given = candidates(tmp_path / "cands", {"example": "anything"})
    done = cli(bench, "grade", "old-task", str(given), "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["environment"]["python"].startswith("3.12.")
    assert report["environment"]["requirements"] is None
    assert "3.12." in report["results"][0]["reason"]


def test_a_python_the_machine_lacks_stops_grading_before_anything_runs(
    bench: Bench, env_dir: Path, tmp_path: Path
) -> None:
    task_class(bench, "future-task")
    declare(bench, "future-task", python="3.99")
    given = candidates(tmp_path / "cands", {"example": "1.0"})
    done = cli(bench, "grade", "future-task", str(given))
    assert done.returncode == 4
    assert "python-unavailable" in done.stderr
    assert "3.99" in done.stderr
    assert not env_dir.exists()


def _index_reachable() -> bool:
    try:
        with urllib.request.urlopen("https://pypi.org/simple/iniconfig/", timeout=20):
            return True
    except OSError:
        return False


def test_a_real_package_from_the_index(bench: Bench, env_dir: Path, tmp_path: Path) -> None:
    if not _index_reachable():
        if os.environ.get("CI"):
            pytest.fail("CI reaches the package index; pypi.org did not answer")
        pytest.skip("the package index is not reachable from here")
    rubric = textwrap.dedent(
        """\
        import json, sys
        import iniconfig
        print(json.dumps({"passed": True, "reason": iniconfig.__name__}))
        """
    )
    task_class(bench, "index-task", rubric)
    (bench.base / "envs" / "index.txt").write_text("iniconfig==2.0.0\n")
    declare(bench, "index-task", environment="envs/index.txt")
    given = candidates(tmp_path / "cands", {"example": "x"})
    done = cli(bench, "grade", "index-task", str(given), "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["results"][0]["status"] == "passed"


def test_sandbox_none_uses_the_same_interpreter(
    bench: Bench, env_dir: Path, tmp_path: Path
) -> None:
    task_class(bench, "tiny-task")
    declare(bench, "tiny-task", environment="envs/tiny.txt")
    given = candidates(tmp_path / "cands", {"example": "1.0"})
    done = cli(bench, "grade", "tiny-task", str(given), "--format", "json", "--sandbox", "none")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    built = open_environment(report["environment"]["digest"])
    assert built is not None
    assert report["results"][0]["verdict"]["prefix"] == str(built.path)
    assert report["sandbox"] == "none"


def test_merge_keeps_the_environment_and_refuses_shards_that_differ(
    bench: Bench, env_dir: Path, tmp_path: Path
) -> None:
    task_class(bench, "tiny-task")
    declare(bench, "tiny-task", environment="envs/tiny.txt")
    given = candidates(tmp_path / "cands", {"example": "1.0"})
    shards = []
    for index in (1, 2):
        done = cli(
            bench, "grade", "tiny-task", str(given), "--format", "json", "--shard", f"{index}/2"
        )
        assert done.returncode in (0, 1), done.stderr
        shard = tmp_path / f"shard{index}.json"
        shard.write_text(done.stdout)
        shards.append(shard)
    merged = cli(bench, "merge", *map(str, shards), "--format", "json")
    assert merged.returncode == 0, merged.stderr
    assert (
        json.loads(merged.stdout)["environment"] == json.loads(shards[0].read_text())["environment"]
    )
    other = json.loads(shards[1].read_text())
    other["environment"] = None  # graded in the harness's own interpreter
    shards[1].write_text(json.dumps(other))
    refused = cli(bench, "merge", *map(str, shards))
    assert refused.returncode == 1
    assert "different environments" in refused.stderr


def test_check_rubrics_reports_an_unusable_environment_and_runs_none_of_its_rubrics(
    bench: Bench, env_dir: Path
) -> None:
    task_class(bench, "tiny-task")
    task_class(bench, "future-task")
    declare(bench, "tiny-task", environment="envs/missing.txt")
    declare(bench, "future-task", python="3.99")
    done = cli(bench, "check", "--rubrics", "--format", "json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    codes = sorted((d["slug"], d["code"]) for d in report["diagnostics"])
    assert codes == [
        ("future-task", "python-unavailable"),
        ("tiny-task", "environment-invalid"),
    ]
    assert not env_dir.exists() or not [p for p in env_dir.iterdir() if p.name != ".locks"]
