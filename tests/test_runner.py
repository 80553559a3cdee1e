"""Runner.plan: resolve slugs into a RunPlan, reporting every failing slug at once."""

from __future__ import annotations

import asyncio
import itertools
import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from codegenie.eval import BenchManifest, Runner, RunPlan, TaskClassRegistry
from codegenie.eval.errors import (
    BenchCasesInvalid,
    BenchRootNotFound,
    InvalidTaskClassName,
    RunPlanError,
    TaskClassNotFound,
    TaskClassRegistrationFailed,
    TaskClassRootConflict,
)
from codegenie.eval.loader import load_task_class

from .factory import Bench, make_bench

REPO = Path(__file__).resolve().parent.parent


def plan(runner: Runner, slugs: list[str] | None = None) -> RunPlan:
    return asyncio.run(runner.plan(slugs))


def test_default_plan_is_every_entry_in_manifest_order(tmp_path: Path) -> None:
    """Without slugs, the plan is every manifest entry, in file order."""
    bench = make_bench(tmp_path, "zeta", "alpha", "mid-one")
    runner = Runner(BenchManifest.load(bench.manifest), registry=TaskClassRegistry())
    result = plan(runner)
    assert result.slugs() == ("zeta", "alpha", "mid-one")
    assert result.manifest == bench.manifest.absolute()


def test_requested_slugs_keep_their_order_and_duplicates_resolve_once(tmp_path: Path) -> None:
    """Requested slugs come back in request order; a repeated slug appears once."""
    bench = make_bench(tmp_path, "aa", "bb", "cc")
    runner = Runner(BenchManifest.load(bench.manifest), registry=TaskClassRegistry())
    assert plan(runner, ["cc", "aa", "cc"]).slugs() == ("cc", "aa")


def test_plan_uses_the_injected_registry(
    tmp_path: Path, default_registry: TaskClassRegistry
) -> None:
    """Task classes land in the runner's registry, not the default one."""
    bench = make_bench(tmp_path, "aa")
    registry = TaskClassRegistry()
    result = plan(Runner(BenchManifest.load(bench.manifest), registry=registry))
    assert result.task_classes[0] is registry.get("aa")
    assert "aa" not in default_registry


def test_mixed_failures_are_all_reported_with_their_own_errors(tmp_path: Path) -> None:
    """Good slugs, a typo, a wrong root, a missing root and a raising registration: one RunPlanError."""
    other = make_bench(tmp_path / "other", "wrong-root")
    registry = TaskClassRegistry()
    load_task_class("wrong-root", other.root, registry=registry)

    bench = make_bench(tmp_path / "main", "good-one", "good-two", "wrong-root")
    bench.add("raises", before="raise RuntimeError('boom')")
    bench.add("far-away", root="missing/bench", write=False)
    (tmp_path / "main" / "missing" / "bench").rmdir()
    runner = Runner(BenchManifest.load(bench.manifest), registry=registry)

    with pytest.raises(RunPlanError) as exc:
        plan(
            runner, ["good-one", "good-onee", "wrong-root", "raises", "far-away", "Bad", "good-two"]
        )
    errors = exc.value.errors
    assert list(errors) == ["good-onee", "wrong-root", "raises", "far-away", "Bad"]
    assert isinstance(errors["good-onee"], TaskClassNotFound)
    assert errors["good-onee"].suggestions[0] == "good-one"
    assert isinstance(errors["wrong-root"], TaskClassRootConflict)
    assert errors["wrong-root"].first_root == other.root.resolve()
    assert isinstance(errors["raises"], TaskClassRegistrationFailed)
    assert errors["raises"].cause_message == "boom"
    assert isinstance(errors["far-away"], BenchRootNotFound)
    assert isinstance(errors["Bad"], InvalidTaskClassName)
    assert [tc.name for tc in exc.value.resolved] == ["good-one", "good-two"]
    assert exc.value.exit_code == 1
    assert "raises" not in registry


def test_only_typos_give_exit_code_3(tmp_path: Path) -> None:
    """RunPlanError's exit code is the failures' common one."""
    bench = make_bench(tmp_path, "aa")
    runner = Runner(BenchManifest.load(bench.manifest), registry=TaskClassRegistry())
    with pytest.raises(RunPlanError) as exc:
        plan(runner, ["ab", "ac"])
    assert exc.value.exit_code == 3


def test_plan_serializes_to_the_documented_shape(tmp_path: Path) -> None:
    """RunPlan.to_json() has the documented shape (docs/cli.md), case ids included, and validates against the schema."""
    bench = make_bench(tmp_path, "aa", parts=True)
    runner = Runner(BenchManifest.load(bench.manifest), registry=TaskClassRegistry())
    document = plan(runner).to_json()
    schema = json.loads((REPO / "docs" / "cli-output.schema.json").read_text())
    jsonschema.Draft202012Validator({**schema, "$ref": "#/$defs/plan"}).validate(document)
    package = (bench.root / "aa").resolve()
    assert document["task_classes"][0] == {
        "slug": "aa",
        "module": "bench.aa.registration",
        "source": str(package / "registration.py"),
        "description": "A task class built by the test factory.",
        "rubric": str(package / "rubric.py"),
        "cases": str(package / "cases"),
        "reads_expected": False,
        "case_ids": ["example"],
        "environment": None,
    }


def test_plan_fails_for_a_task_class_with_invalid_cases(tmp_path: Path) -> None:
    """A task class whose cases break their schema is that slug's BenchCasesInvalid; others resolve."""
    bench = make_bench(tmp_path, "aa", "bb", parts=True)
    (bench.root / "bb" / "cases" / "example" / "case.toml").write_text("timeout = -1\n")
    runner = Runner(BenchManifest.load(bench.manifest), registry=TaskClassRegistry())
    with pytest.raises(RunPlanError) as caught:
        plan(runner)
    assert list(caught.value.errors) == ["bb"]
    error = caught.value.errors["bb"]
    assert isinstance(error, BenchCasesInvalid)
    assert error.problems[0].line == 1
    assert [tc.name for tc in caught.value.resolved] == ["aa"]


def test_run_plan_is_frozen(tmp_path: Path) -> None:
    """A RunPlan cannot be changed."""
    bench = make_bench(tmp_path, "aa")
    result = plan(Runner(BenchManifest.load(bench.manifest), registry=TaskClassRegistry()))
    with pytest.raises(Exception, match="frozen"):
        result.task_classes = ()  # type: ignore[misc]


def test_plans_on_one_loop_do_not_interfere(tmp_path: Path) -> None:
    """Two plans gathered on one event loop both resolve (each load runs whole)."""
    bench = make_bench(tmp_path, "aa", "bb", "cc")
    manifest = BenchManifest.load(bench.manifest)
    registry = TaskClassRegistry()

    async def both() -> tuple[RunPlan, RunPlan]:
        return await asyncio.gather(
            Runner(manifest, registry=registry).plan(["aa", "bb"]),
            Runner(manifest, registry=registry).plan(["bb", "cc"]),
        )

    first, second = asyncio.run(both())
    assert first.slugs() == ("aa", "bb")
    assert second.task_classes[0] is first.task_classes[1]


def test_empty_manifest_plans_nothing(tmp_path: Path) -> None:
    """A manifest without task classes gives an empty plan."""
    bench = Bench(tmp_path)
    bench.write_manifest()
    assert plan(Runner(BenchManifest.load(bench.manifest))).task_classes == ()


def test_plan_yields_to_the_event_loop_between_slugs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under asyncio, another task makes progress between two slugs of one plan.

    ``Runner.plan`` no longer imports ``asyncio``: it yields with a bare
    ``yield``, which asyncio's ``Task`` must still take as a "sleep 0".
    """
    # Runner.plan resolves each slug through _resolve.resolve, which calls the loader.
    from codegenie.eval import _resolve as resolve_module

    bench = make_bench(tmp_path, "aa", "bb", "cc")
    manifest = BenchManifest.load(bench.manifest)
    events: list[str] = []

    def recording_load(slug: str, *args: object, **kwargs: object) -> object:
        events.append(f"load {slug}")
        return load_task_class(slug, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(resolve_module, "load_task_class", recording_load)

    async def ticker(stop: asyncio.Event) -> None:
        while not stop.is_set():
            events.append("tick")
            await asyncio.sleep(0)

    async def main() -> RunPlan:
        stop = asyncio.Event()
        ticking = asyncio.create_task(ticker(stop))
        await asyncio.sleep(0)  # let the ticker start
        try:
            return await Runner(manifest, registry=TaskClassRegistry()).plan()
        finally:
            stop.set()
            await ticking

    result = asyncio.run(main())
    assert result.slugs() == ("aa", "bb", "cc")
    loads = [i for i, event in enumerate(events) if event.startswith("load")]
    assert [events[i] for i in loads] == ["load aa", "load bb", "load cc"]
    for before, after in itertools.pairwise(loads):
        assert "tick" in events[before + 1 : after], events


def test_plan_can_be_driven_without_an_event_loop(tmp_path: Path) -> None:
    """Sending None until it returns runs the plan whole: what the command line does."""
    bench = make_bench(tmp_path, "aa", "bb")
    coroutine = Runner(BenchManifest.load(bench.manifest), registry=TaskClassRegistry()).plan()
    yielded: list[object] = []
    result: RunPlan | None = None
    while result is None:
        try:
            yielded.append(coroutine.send(None))
        except StopIteration as done:
            result = done.value
    assert yielded == [None, None]  # one turn of the loop after each slug, nothing else
    assert result.slugs() == ("aa", "bb")


# -- docs/api.md, the reference of Runner and RunPlan -----------------------------------


def _api_example() -> str:
    text = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    return text.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_api_reference_names_every_public_name() -> None:
    """docs/api.md documents each name of codegenie.eval.__all__, Runner.plan's among them."""
    import codegenie.eval

    text = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    for name in codegenie.eval.__all__:
        assert f"`{name}`" in text, name
    assert "### `await runner.plan(slugs=None) -> RunPlan`" in text


def test_the_api_example_runs_as_written(tmp_path: Path) -> None:
    """The example of docs/api.md plans a bench, and reports a failing one slug by slug."""
    import subprocess
    import sys

    bench = make_bench(tmp_path, "alpha-one", "beta-two", parts=True)
    example = tmp_path / "example.py"
    example.write_text(_api_example(), encoding="utf-8")
    ran = subprocess.run(
        [sys.executable, str(example)], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert ran.returncode == 0, ran.stderr
    assert [line.split()[0] for line in ran.stdout.splitlines()] == ["alpha-one", "beta-two"]
    assert ran.stdout.splitlines()[0].endswith("('example',)")
    bench.add("gamma-three", write=False)
    failed = subprocess.run(
        [sys.executable, str(example)], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert failed.returncode == 0, failed.stderr
    assert failed.stdout.startswith("gamma-three bench-case-load-error ")


# -- environments: what each entry declares, known without building ---------------------------


def _declaring(base: Path) -> Bench:
    """A bench whose 'aa' declares a requirements file and the harness's Python, 'bb' a Python
    no machine has, 'cc' a file that does not exist, and 'dd' nothing."""
    bench = make_bench(base, "aa", "bb", "cc", "dd", parts=True)
    (bench.base / "envs").mkdir()
    (bench.base / "envs" / "aa.txt").write_text("tinypkg==1.0\n")
    own = f"{sys.version_info.major}.{sys.version_info.minor}"
    text = bench.manifest.read_text()
    for slug, keys in (
        ("aa", f'environment = "envs/aa.txt"\npython = "{own}"\n'),
        ("bb", 'python = "3.99"\n'),
        ("cc", 'environment = "envs/missing.txt"\n'),
    ):
        header = f'[task-classes.{slug}]\nmodule = "bench.{slug}.registration"\nroot = "bench"\n'
        assert header in text
        text = text.replace(header, header + keys)
    bench.manifest.write_text(text)
    return bench


def test_the_plan_carries_each_declared_environment_and_builds_nothing(
    tmp_path: Path, env_dir: Path
) -> None:
    """Each entry's requirements file, Python and digest (None where not knowable); nothing built."""
    from codegenie.eval._env.declared import declared_spec
    from codegenie.eval._env.python import find_python
    from codegenie.eval.models import PlannedEnvironment

    bench = _declaring(tmp_path)
    own = f"{sys.version_info.major}.{sys.version_info.minor}"
    result = plan(Runner(BenchManifest.load(bench.manifest), registry=TaskClassRegistry()))
    spec = declared_spec(bench.base, "envs/aa.txt", own, task_class="aa")
    python = find_python(own)
    assert spec is not None
    assert python is not None
    requirements = (bench.base / "envs" / "aa.txt").absolute()
    assert result.environments == {
        "aa": PlannedEnvironment(requirements=requirements, python=own, digest=spec.digest(python)),
        "bb": PlannedEnvironment(requirements=None, python="3.99", digest=None),
        "cc": PlannedEnvironment(
            requirements=(bench.base / "envs" / "missing.txt").absolute(), python=None, digest=None
        ),
    }
    assert not env_dir.exists()  # looked at, never built
    document = result.to_json()
    schema = json.loads((REPO / "docs" / "cli-output.schema.json").read_text())
    jsonschema.Draft202012Validator({**schema, "$ref": "#/$defs/plan"}).validate(document)
    shown = {tc["slug"]: tc["environment"] for tc in document["task_classes"]}
    assert shown["dd"] is None
    assert shown["aa"] == {
        "requirements": str(requirements),
        "python": own,
        "digest": spec.digest(python),
    }
    assert json.loads(result.model_dump_json()) == document


def test_plan_and_check_json_carry_the_environments_through_the_console_script(
    tmp_path: Path, env_dir: Path
) -> None:
    """`plan --format json` and `check --format json` give each task class's environment alike."""
    bench = _declaring(tmp_path)
    script = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert script is not None

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [script, "--format", "json", *args],
            cwd=bench.base,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )

    planned = run("plan")
    assert planned.returncode == 0, planned.stderr
    from_plan = {tc["slug"]: tc["environment"] for tc in json.loads(planned.stdout)["task_classes"]}
    checked = run("check")
    assert checked.returncode == 1, checked.stderr  # bb's Python, cc's file: diagnostics
    report = json.loads(checked.stdout)
    schema = json.loads((REPO / "docs" / "cli-output.schema.json").read_text())
    jsonschema.Draft202012Validator({**schema, "$ref": "#/$defs/check"}).validate(report)
    assert report["environments"] == {
        slug: environment for slug, environment in from_plan.items() if environment is not None
    }
    assert set(report["environments"]) == {"aa", "bb", "cc"}
    assert report["environments"]["aa"]["digest"].startswith("blake2b-256:")
    shard = run("check", "--shard", "1/2")
    assert set(json.loads(shard.stdout)["environments"]) <= {"aa", "bb", "cc"}
    assert not env_dir.exists()
