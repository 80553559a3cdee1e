"""docs/ci.md, followed as written in a bench repository of one's own.

Such a repository holds ``bench.toml``, ``bench/`` and a ``requirements.txt``
that pins codegenie-eval; it is not a Python project. This module builds the
project's sdist and wheel as a release does (``python -m build``), makes that
repository in ``tmp_path``: the document's committed-wheel ``requirements.txt``
as written, beside the built wheel where it says, installed into a fresh
virtual environment in the repository (``.venv``) with the recipes' own
install command, then the bench made with the installed CLI (``init``,
``new``) and committed. Then it runs every command of every GitHub Actions
workflow and GitLab CI file in docs/ci.md, and the pre-commit hooks through
``pre-commit try-repo``. The YAML and the pins are read from the document
itself, so a recipe that changes is the recipe that is run; one of a shape
this module does not know fails.

The other pins are resolved with ``pip download``, their placeholders filled
in: the wheel URL with the built wheel's ``file:`` URL, the git commit with
this checkout and its ``HEAD`` (committed code, not the working tree), and the
pin a release will have with the built wheel served as an index would serve
it (``PIP_FIND_LINKS``).

Only the runner's own set-up is not run: ``uses:`` steps (the checkout is the
repository, ``setup-python`` is the fresh environment, artifacts stay in the
working directory) and ``sudo`` steps (the machine's packages).

It needs ``git`` and the package index the project installs from (for
``build``'s back end and the pin's dependencies), as ``.ci/run`` does.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from codegenie.eval import __version__

from .test_reports import JUNIT_SCHEMA, validate_sarif

REPO = Path(__file__).resolve().parent.parent
CI_DOC = REPO / "docs" / "ci.md"
SLUGS = ("alpha-one", "beta-two", "gamma-three", "delta-four")
INSTALL = "python -m pip install -r requirements.txt"
WHEEL = f"codegenie_eval-{__version__}-py3-none-any.whl"
#: Each shape of pin the document may give, by name. A ``<…>`` is a placeholder it explains.
PIN_SHAPES = {
    "wheel-file": re.compile(r"\./wheels/(?P<wheel>codegenie_eval-\S+\.whl)"),
    "wheel-url": re.compile(
        r"codegenie-eval @ (?P<where>https://<[a-z-]+>/)(?P<wheel>codegenie_eval-\S+\.whl)"
    ),
    "git-commit": re.compile(
        r"codegenie-eval @ git\+(?P<repository>https://<[a-z-]+>)@(?P<commit><commit-sha>)"
    ),
}
_KNOWN_ACTIONS = (
    "actions/checkout@",
    "actions/setup-python@",
    "actions/upload-artifact@",
    "actions/download-artifact@",
    "github/codeql-action/upload-sarif@",
)
_EXPRESSION = re.compile(r"\$\{\{\s*matrix\.(\w+)\s*\}\}")

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
    # One worker builds the release and the machine once for the whole module.
    pytest.mark.xdist_group("ci-recipes"),
]


def _documents() -> list[Any]:
    """Every ```yaml block of docs/ci.md, parsed (a block that is not YAML fails here)."""
    blocks = re.findall(r"^```yaml\n(.*?)^```", CI_DOC.read_text(encoding="utf-8"), re.M | re.S)
    return [yaml.safe_load(block) for block in blocks]


def _github_workflows() -> list[dict[str, Any]]:
    return [doc for doc in _documents() if isinstance(doc, dict) and "jobs" in doc]


def _gitlab_files() -> list[dict[str, Any]]:
    return [
        doc
        for doc in _documents()
        if isinstance(doc, dict)
        and "jobs" not in doc
        and any(isinstance(job, dict) and "script" in job for job in doc.values())
    ]


def _pre_commit_configs() -> list[dict[str, Any]]:
    return [doc for doc in _documents() if isinstance(doc, dict) and "repos" in doc]


def _requirements_files() -> list[str]:
    """Every ```text block of docs/ci.md that is a ``requirements.txt`` (its first line says so)."""
    blocks = re.findall(r"^```text\n(.*?)^```", CI_DOC.read_text(encoding="utf-8"), re.M | re.S)
    return [block for block in blocks if block.startswith("# requirements.txt\n")]


def _pins() -> dict[str, tuple[str, re.Match[str]]]:
    """Each pin of codegenie-eval the document gives, by shape: its requirements file and its match.

    A line of a shape no ``PIN_SHAPES`` entry knows, or a second pin of one
    shape, fails here: this module would not run it.
    """
    found: dict[str, tuple[str, re.Match[str]]] = {}
    for text in _requirements_files():
        for line in text.splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            shapes = [(name, shape.fullmatch(line)) for name, shape in PIN_SHAPES.items()]
            known = [(name, match) for name, match in shapes if match is not None]
            assert known, f"a pin this module does not know how to run: {line!r}"
            ((name, match),) = known
            assert name not in found, f"two pins of the shape {name}: {line!r}"
            found[name] = (text, match)
    return found


def _release_pin() -> str:
    """The version the document says a published release will be pinned at."""
    (version,) = set(re.findall(r"`codegenie-eval==([^`]+)`", CI_DOC.read_text(encoding="utf-8")))
    return str(version)


# --- the release and the repository ------------------------------------------------------------


def _run(
    command: list[str], *, cwd: Path, env: Mapping[str, str], timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, f"{result.args}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist and the wheel (built from the sdist), as ``python -m build`` makes a release."""
    out = tmp_path_factory.mktemp("dist")
    _ok(
        _run(
            [sys.executable, "-m", "build", "--outdir", str(out), str(REPO)],
            cwd=REPO,
            env=os.environ,
        )
    )
    assert len(list(out.glob(f"codegenie_eval-{__version__}.tar.gz"))) == 1
    assert len(list(out.glob(f"codegenie_eval-{__version__}-py3-none-any.whl"))) == 1
    return out


@dataclass
class Machine:
    """A CI machine after ``setup-python`` and the recipe's install: a fresh venv on PATH.

    The venv is the curator's ``.venv`` in the bench repository, ``home / "my-bench"``.
    """

    env: dict[str, str]
    home: Path
    log: list[tuple[str, int, str]] = field(default_factory=list)

    def bash(self, script: str, *, cwd: Path, extra: Mapping[str, str] | None = None) -> int:
        """Run ``script`` as a runner runs a step (``bash -e``); log it; return its exit status."""
        result = _run(["bash", "-e", "-c", script], cwd=cwd, env={**self.env, **(extra or {})})
        self.log.append((script, result.returncode, result.stdout + result.stderr))
        return result.returncode


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Machine:
    """A fresh virtual environment, first on PATH, with nothing of this checkout in sight."""
    home = tmp_path_factory.mktemp("machine")
    venv = home / "my-bench" / ".venv"
    _ok(_run([sys.executable, "-m", "venv", str(venv)], cwd=home, env=os.environ))
    gitconfig = home / "gitconfig"
    gitconfig.write_text("[user]\n\tname = Curator\n\temail = curator@example.com\n")
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP"}
        and not name.startswith(("GITHUB_", "CI_", "PIP_"))
    }
    env.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PRE_COMMIT_HOME=str(home / "pre-commit-home"),
        GIT_CONFIG_GLOBAL=str(gitconfig),
        GIT_CONFIG_NOSYSTEM="1",
    )
    return Machine(env=env, home=home)


@pytest.fixture(scope="module")
def bench_repo(machine: Machine, dist: Path) -> Path:
    """A repository of bench.toml, bench/ and requirements.txt, made as docs/ci.md says."""
    repo = machine.home / "my-bench"
    requirements, pin = _pins()["wheel-file"]
    assert pin["wheel"] == WHEEL, "the pin names another wheel than this version builds"
    (repo / "wheels").mkdir()
    shutil.copy2(dist / WHEEL, repo / "wheels" / WHEEL)
    (repo / "requirements.txt").write_text(requirements, encoding="utf-8")
    assert machine.bash(INSTALL, cwd=repo) == 0, machine.log[-1]
    for command in [
        "git init -q",
        "codegenie-bench init",
        *(f"codegenie-bench new {s}" for s in SLUGS),
    ]:
        assert machine.bash(command, cwd=repo) == 0, machine.log[-1]
    for command in ["git add -A", "git commit -q -m 'a bench'"]:
        assert machine.bash(command, cwd=repo) == 0, machine.log[-1]
    # The .gitignore init wrote keeps the curator's .venv out: nothing is left untracked.
    assert machine.bash("git status --porcelain --untracked-files=all", cwd=repo) == 0
    assert machine.log[-1][2] == "", machine.log[-1]
    assert machine.bash("git ls-files", cwd=repo) == 0
    tracked = machine.log[-1][2].splitlines()
    assert f"wheels/{WHEEL}" in tracked
    assert not [path for path in tracked if path.startswith(".venv/")]
    installed = _run(
        [
            str(repo / ".venv" / "bin" / "python"),
            "-c",
            "import codegenie.eval as m; print(m.__file__)",
        ],
        cwd=repo,
        env=machine.env,
    )
    assert str(repo / ".venv") in _ok(installed).stdout  # the wheel, not this checkout
    assert not (repo / "pyproject.toml").exists()
    return repo


def _copy(repo: Path, name: str) -> Path:
    """A checkout of its own for one pipeline, so that no report of another reaches its merge.

    As a CI checkout, it has what git tracks: not the curator's ``.venv``.
    """
    target = repo.parent / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(repo, target, symlinks=True, ignore=shutil.ignore_patterns(".venv"))
    return target


# --- running GitHub Actions workflows and GitLab CI files ----------------------------------------


@dataclass
class Pipeline:
    """What ran: each job's runs, each run's steps as (command, exit status, output)."""

    jobs: dict[str, list[list[tuple[str, int, str]]]] = field(default_factory=dict)

    def failed(self, job: str) -> bool:
        return any(status != 0 for run in self.jobs.get(job, []) for _, status, _ in run)

    def steps(self) -> Iterator[tuple[str, str, int, str]]:
        for job, runs in self.jobs.items():
            for run in runs:
                for command, status, output in run:
                    yield job, command, status, output


def _ordered(jobs: Mapping[str, Any]) -> list[str]:
    """The jobs in an order their ``needs`` allow (both dialects write ``needs`` as names)."""
    order: list[str] = []
    pending = dict(jobs)
    while pending:
        ready = [
            name for name, job in pending.items() if all(need in order for need in _needs(job))
        ]
        assert ready, f"needs that cannot be met: {sorted(pending)}"
        order += ready
        for name in ready:
            del pending[name]
    return order


def _needs(job: Mapping[str, Any]) -> list[str]:
    needs = job.get("needs", [])
    return [needs] if isinstance(needs, str) else list(needs)


def _matrix(job: Mapping[str, Any]) -> list[dict[str, str]]:
    matrix = job.get("strategy", {}).get("matrix", {})
    names = sorted(matrix)
    return [
        dict(zip(names, map(str, values), strict=True))
        for values in itertools.product(*(matrix[n] for n in names))
    ] or [{}]


def _substitute(command: str, values: Mapping[str, str]) -> str:
    """Replace ``${{ matrix.NAME }}`` with the value of this run of the matrix."""
    return _EXPRESSION.sub(lambda match: values[match.group(1)], command)


def run_workflow(workflow: Mapping[str, Any], machine: Machine, checkout: Path) -> Pipeline:
    """Run a GitHub Actions workflow's ``run:`` steps in order, with GitHub's failure rules."""
    pipeline = Pipeline()
    summary = checkout.parent / f"{checkout.name}.summary.md"
    env = {
        "GITHUB_ACTIONS": "true",
        "CI": "true",
        "GITHUB_WORKSPACE": str(checkout),
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    for name in _ordered(workflow["jobs"]):
        job = workflow["jobs"][name]
        if any(pipeline.failed(need) for need in _needs(job)) and "always()" not in str(
            job.get("if", "")
        ):
            continue
        pipeline.jobs[name] = []
        for values in _matrix(job):
            before = len(machine.log)
            failed = False
            for step in job["steps"]:
                if failed and "always()" not in str(step.get("if", "")):
                    continue  # a failed step skips the rest, but for ``if: always()``
                if "uses" in step:
                    assert step["uses"].startswith(_KNOWN_ACTIONS), step
                    continue
                command = _substitute(step["run"], values)
                assert "${{" not in command, command
                if command.startswith("sudo "):
                    continue  # the runner's packages, not the bench's commands
                failed |= machine.bash(command, cwd=checkout, extra=env) != 0
            pipeline.jobs[name].append(machine.log[before:])
    return pipeline


def run_gitlab(config: Mapping[str, Any], machine: Machine, checkout: Path) -> Pipeline:
    """Run a ``.gitlab-ci.yml``'s jobs: ``before_script`` and ``script``, ``parallel`` and ``needs``."""
    pipeline = Pipeline()
    default = config.get("default", {})
    jobs = {name: job for name, job in config.items() if isinstance(job, dict) and "script" in job}
    for name in _ordered(jobs):
        job = jobs[name]
        if any(pipeline.failed(need) for need in _needs(job)) and job.get("when") != "always":
            continue
        pipeline.jobs[name] = []
        total = int(job.get("parallel", 1))
        for index in range(1, total + 1):
            before = len(machine.log)
            env = {"GITLAB_CI": "true", "CI": "true"}
            if "parallel" in job:
                env.update(CI_NODE_INDEX=str(index), CI_NODE_TOTAL=str(total))
            for line in [
                *job.get("before_script", default.get("before_script", [])),
                *job["script"],
            ]:
                if machine.bash(line, cwd=checkout, extra=env) != 0:
                    break
            pipeline.jobs[name].append(machine.log[before:])
    return pipeline


def _break_a_case(checkout: Path) -> None:
    """Make one task class's rubric fail every candidate, its known-good one too (``golden-fails``)."""
    rubric = checkout / "bench" / SLUGS[0].replace("-", "_") / "rubric.py"
    text = rubric.read_text(encoding="utf-8")
    failing = text.replace('"passed": True', '"passed": False')
    assert failing != text, "the scaffolded rubric changed: update this test's way of breaking it"
    rubric.write_text(failing, encoding="utf-8")


# --- the tests --------------------------------------------------------------------------------------


def test_the_document_has_the_recipes_this_module_runs() -> None:
    """A recipe this module would not recognise fails here rather than go unrun."""
    workflows, gitlab, configs = _github_workflows(), _gitlab_files(), _pre_commit_configs()
    assert len(workflows) >= 4
    assert len(gitlab) == 1
    assert len(configs) == 1
    commands = [
        step.get("run", "")
        for wf in workflows
        for job in wf["jobs"].values()
        for step in job["steps"]
    ]
    assert commands.count(INSTALL) == sum(len(wf["jobs"]) for wf in workflows)
    assert "pip install ." not in "\n".join(commands)
    assert gitlab[0]["default"]["before_script"] == [INSTALL]
    assert set(_pins()) == set(PIN_SHAPES)  # every shape is given, and no other (see _pins)


def test_a_pin_of_a_shape_this_module_does_not_know_fails() -> None:
    """What ``_pins`` does with a line it cannot run: the version pin no index serves yet, say."""
    for line in (f"codegenie-eval=={__version__}", "codegenie-eval @ git+https://x.org/y.git@main"):
        assert not any(shape.fullmatch(line) for shape in PIN_SHAPES.values()), line


def test_the_pre_commit_config_names_a_commit_and_hooks_that_exist() -> None:
    """``rev:`` and ``repo:`` are the git pin's placeholders; every hook id is one that exists.

    The document also says how a release will be pinned (its version, its ``v`` tag),
    and CHANGELOG.md has that version, marked unreleased until it is published.
    """
    hooks = {hook["id"] for hook in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}
    (config,) = _pre_commit_configs()
    (entry,) = config["repos"]
    _, git = _pins()["git-commit"]
    assert entry["rev"] == git["commit"]
    assert entry["repo"] == git["repository"]
    assert {hook["id"] for hook in entry["hooks"]} <= hooks
    assert _release_pin() == __version__
    assert f"`v{__version__}`" in CI_DOC.read_text(encoding="utf-8")
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## {re.escape(__version__)}( \(unreleased\))?$", changelog, re.M)


def _download(machine: Machine, requirement: str, out: Path, **extra: str) -> list[Path]:
    """``pip download --no-deps`` one requirement line with the machine's pip; what it saved."""
    result = _run(
        ["python", "-m", "pip", "download", "--no-deps", "--dest", str(out), requirement],
        cwd=machine.home,
        env={**machine.env, **extra},
    )
    assert result.returncode == 0, f"{requirement}\n{result.stdout}\n{result.stderr}"
    return sorted(out.iterdir())


def test_the_wheel_url_pin_fetches_the_built_wheel(
    machine: Machine, dist: Path, tmp_path: Path
) -> None:
    """The wheel URL, its placeholder host made a ``file:`` URL of the built wheel's directory."""
    _requirements, pin = _pins()["wheel-url"]
    assert pin["wheel"] == WHEEL
    line = pin.group(0).replace(pin["where"], f"file://localhost{dist.as_posix()}/")
    saved = _download(machine, line, tmp_path / "out")
    assert [path.name for path in saved] == [WHEEL]
    assert saved[0].read_bytes() == (dist / WHEEL).read_bytes()


def test_the_git_commit_pin_builds_this_project(machine: Machine, tmp_path: Path) -> None:
    """The git pin, its placeholders this checkout and its HEAD: pip clones, checks out, builds."""
    if not (REPO / ".git").exists():
        pytest.skip("the git pin needs this project as a git checkout")
    head = _ok(_run(["git", "rev-parse", "HEAD"], cwd=REPO, env=os.environ)).stdout.strip()
    assert re.fullmatch(r"[0-9a-f]{40}", head)
    _, pin = _pins()["git-commit"]
    line = (
        pin.group(0)
        .replace(pin["repository"], f"file://localhost{REPO.as_posix()}")
        .replace(pin["commit"], head)
    )
    saved = _download(machine, line, tmp_path / "out")
    assert [path.name for path in saved] == [f"codegenie-eval-{__version__}.zip"]


def test_the_release_pin_is_what_the_built_release_satisfies(
    machine: Machine, dist: Path, tmp_path: Path
) -> None:
    """``codegenie-eval==VERSION``, with the built sdist and wheel served as an index serves them."""
    line = f"codegenie-eval=={_release_pin()}"
    saved = _download(machine, line, tmp_path / "out", PIP_FIND_LINKS=str(dist), PIP_NO_INDEX="1")
    assert [path.name for path in saved] == [WHEEL]


def test_every_github_workflow_passes_on_a_clean_bench(bench_repo: Path, machine: Machine) -> None:
    """Every ``run:`` of every workflow exits 0; the summary reaches the job page; reports are written."""
    for number, workflow in enumerate(_github_workflows()):
        checkout = _copy(bench_repo, f"github-{number}")
        pipeline = run_workflow(workflow, machine, checkout)
        failures = [
            (job, command, output) for job, command, status, output in pipeline.steps() if status
        ]
        assert not failures, failures
        ran = [command for _, command, _, _ in pipeline.steps()]
        assert any(command.startswith("codegenie-bench ") for command in ran)
        summary = checkout.parent / f"{checkout.name}.summary.md"
        assert summary.read_text(encoding="utf-8").strip(), "no step summary was appended"
        for produced in re.findall(r"--output-file (\S+)", "\n".join(ran)):
            assert (checkout / produced).stat().st_size > 0, produced
            if produced.endswith(".sarif"):  # what code scanning is sent
                validate_sarif(json.loads((checkout / produced).read_text(encoding="utf-8")))


def test_the_github_merge_job_fails_when_a_shard_finds_a_problem(
    bench_repo: Path, machine: Machine
) -> None:
    """A case whose known-good solution fails: its shard fails, and ``merge`` (always run) fails too."""
    (workflow,) = [wf for wf in _github_workflows() if "merge" in wf["jobs"]]
    checkout = _copy(bench_repo, "github-broken")
    _break_a_case(checkout)
    pipeline = run_workflow(workflow, machine, checkout)
    shards = [job for job in workflow["jobs"] if job != "merge"]
    assert any(pipeline.failed(job) for job in shards)
    assert pipeline.failed("merge")
    merged = [
        output
        for job, command, _, output in pipeline.steps()
        if job == "merge" and "--format github" in command
    ]
    assert merged
    assert "golden-fails" in merged[-1], merged


def test_the_gitlab_pipeline_passes_and_reports_junit(bench_repo: Path, machine: Machine) -> None:
    """The GitLab file's jobs run as written: parallel shards, merged; JUnit reports are written."""
    (config,) = _gitlab_files()
    checkout = _copy(bench_repo, "gitlab")
    pipeline = run_gitlab(config, machine, checkout)
    failures = [
        (job, command, output) for job, command, status, output in pipeline.steps() if status
    ]
    assert not failures, failures
    assert len(pipeline.jobs["rubrics"]) == config["rubrics"]["parallel"]
    reports = [
        job["artifacts"]["reports"]["junit"]
        for job in config.values()
        if isinstance(job, dict) and "reports" in job.get("artifacts", {})
    ]
    assert reports
    for report in reports:  # what GitLab's test tab reads
        JUNIT_SCHEMA.validate((checkout / report).read_text(encoding="utf-8"))


def test_the_gitlab_merge_fails_when_a_shard_report_is_lost(
    bench_repo: Path, machine: Machine
) -> None:
    """A lost artifact is a missing shard: ``merge`` fails, never a silent pass."""
    (config,) = _gitlab_files()
    checkout = _copy(bench_repo, "gitlab-lost")
    rubrics = {"rubrics": config["rubrics"]}
    assert not run_gitlab(rubrics, machine, checkout).failed("rubrics")
    sorted(checkout.glob("check-*.json"))[0].unlink()
    merge = {"merge": {key: value for key, value in config["merge"].items() if key != "needs"}}
    pipeline = run_gitlab(merge, machine, checkout)
    assert pipeline.failed("merge")


def _try_repo(machine: Machine, repo: Path, hook: str) -> subprocess.CompletedProcess[str]:
    """``pre-commit try-repo`` this checkout's hooks (its working tree) on ``repo``."""
    if not (REPO / ".git").exists():
        pytest.skip("pre-commit try-repo needs this project as a git checkout")
    return _run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(REPO), hook, "--all-files"],
        cwd=repo,
        env=machine.env,
        timeout=900,
    )


@pytest.mark.parametrize("hook", ["codegenie-bench-check", "codegenie-bench-check-system"])
def test_the_pre_commit_hooks_pass_a_clean_bench_and_fail_a_broken_one(
    bench_repo: Path, machine: Machine, hook: str
) -> None:
    """Both hooks, pre-commit's own environment and the installed one, judge the bench."""
    checkout = _copy(bench_repo, f"pre-commit-{hook}")
    clean = _try_repo(machine, checkout, hook)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "Passed" in clean.stdout
    assert (
        machine.bash(f"git rm -q bench/{SLUGS[1].replace('-', '_')}/registration.py", cwd=checkout)
        == 0
    )
    broken = _try_repo(machine, checkout, hook)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "error[module-missing]" in broken.stdout
