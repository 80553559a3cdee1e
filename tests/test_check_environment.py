"""check's environment-invalid and python-unavailable, through the installed console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from codegenie.eval.check.environment import REQUIREMENTS_SIZE_LIMIT
from codegenie.eval.check.static import check_static

from .factory import Bench, make_bench
from .test_settings import run

#: The running interpreter's "X.Y": the harness's own, which every machine running it has.
OWN_PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
#: A version no machine has.
NO_PYTHON = "3.99"


@pytest.fixture
def bench(tmp_path: Path) -> Bench:
    """A bench of two complete task classes, 'np-task' and 'bb', that check passes as it is."""
    return make_bench(tmp_path / "repo", "np-task", "bb", parts=True)


def declare(bench: Bench, slug: str = "np-task", **keys: str | list[str]) -> int:
    """Add ``keys`` to the entry of ``slug``; return the line of the first one added."""
    lines = bench.manifest.read_text(encoding="utf-8").splitlines()
    at = lines.index(f"[task-classes.{slug}]") + 3
    added = [
        f"{key} = {json.dumps(value)}" if isinstance(value, list) else f'{key} = "{value}"'
        for key, value in keys.items()
    ]
    lines[at:at] = added
    bench.manifest.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return at + 1


def requirements(bench: Bench, text: bytes | str, name: str = "envs/np-task.txt") -> Path:
    """Write the requirements file ``name`` (relative to the manifest's directory)."""
    path = bench.base / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        text = text.encode("utf-8")
    path.write_bytes(text)
    return path


def diagnostics(bench: Bench, *args: str) -> list[dict[str, Any]]:
    """Run `check --format json` in the bench; return its diagnostics."""
    done = run("check", "--format", "json", *args, cwd=bench.base)
    assert done.returncode in {0, 1}, done.stderr
    found: list[dict[str, Any]] = json.loads(done.stdout)["diagnostics"]
    return found


def where(found: list[dict[str, Any]]) -> list[tuple[str, str, int, int, str]]:
    """Return (code, file, line, column, slug) of each diagnostic."""
    return [(d["code"], d["file"], d["line"], d["column"], d["slug"]) for d in found]


# -- environment-invalid ---------------------------------------------------------------------


def test_a_usable_requirements_file_and_the_harness_s_python_pass(bench: Bench) -> None:
    """A good file and the running interpreter's own version: no diagnostic, exit 0."""
    requirements(
        bench,
        "# pinned\n--index-url https://pypi.org/simple\nnumpy==2.1.3 \\\n"
        "    --hash=sha256:abcdef0123456789\npackaging>=23; python_version >= '3.8'\n",
    )
    declare(bench, environment="envs/np-task.txt", python=OWN_PYTHON)
    done = run("check", "--strict", cwd=bench.base)
    assert (done.returncode, done.stdout) == (0, ""), done.stdout


def test_a_missing_file_is_reported_at_the_environment_value(bench: Bench) -> None:
    line = declare(bench, environment="envs/np-task.txt")
    found = diagnostics(bench)
    assert where(found) == [("environment-invalid", "bench.toml", line, 15, "np-task")]
    assert "does not exist (envs/np-task.txt)" in found[0]["message"]
    assert "create envs/np-task.txt" in found[0]["hint"]


def test_a_directory_is_reported_at_the_environment_value(bench: Bench) -> None:
    (bench.base / "envs" / "np-task.txt").mkdir(parents=True)
    line = declare(bench, environment="envs/np-task.txt")
    found = diagnostics(bench)
    assert where(found) == [("environment-invalid", "bench.toml", line, 15, "np-task")]
    assert "is a directory, not a regular file" in found[0]["message"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_reported_without_being_opened(bench: Bench) -> None:
    """A FIFO without a writer would block a reader forever: it is looked at, never read."""
    (bench.base / "envs").mkdir()
    os.mkfifo(bench.base / "envs" / "np-task.txt")
    line = declare(bench, environment="envs/np-task.txt")
    found = diagnostics(bench)
    assert where(found) == [("environment-invalid", "bench.toml", line, 15, "np-task")]
    assert "is a FIFO (named pipe), not a regular file" in found[0]["message"]


def test_a_file_over_one_mib_is_not_read(bench: Bench) -> None:
    requirements(bench, b"# padding\n" * (REQUIREMENTS_SIZE_LIMIT // 10 + 1))
    line = declare(bench, environment="envs/np-task.txt")
    found = diagnostics(bench)
    assert where(found) == [("environment-invalid", "bench.toml", line, 15, "np-task")]
    assert "files over 1 MiB are not read" in found[0]["message"]


def test_a_file_of_exactly_one_mib_is_read(bench: Bench) -> None:
    line_bytes = b"# padding\n"
    body = line_bytes * (REQUIREMENTS_SIZE_LIMIT // len(line_bytes))
    requirements(bench, body + b"#" * (REQUIREMENTS_SIZE_LIMIT - len(body)))
    declare(bench, environment="envs/np-task.txt")
    assert diagnostics(bench) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_reported_at_the_environment_value(bench: Bench) -> None:
    path = requirements(bench, "numpy\n")
    path.chmod(0)
    line = declare(bench, environment="envs/np-task.txt")
    found = diagnostics(bench)
    assert where(found) == [("environment-invalid", "bench.toml", line, 15, "np-task")]
    assert "cannot be read" in found[0]["message"]


def test_a_path_through_a_file_cannot_be_read(bench: Bench) -> None:
    """`envs` a regular file: the system refuses to look inside it (any user, root too)."""
    (bench.base / "envs").write_text("not a directory\n", encoding="utf-8")
    line = declare(bench, environment="envs/np-task.txt")
    found = diagnostics(bench)
    assert where(found) == [("environment-invalid", "bench.toml", line, 15, "np-task")]
    assert "cannot be read (envs/np-task.txt): Not a directory" in found[0]["message"]


def test_non_utf8_bytes_are_reported_at_their_line(bench: Bench) -> None:
    requirements(bench, b"numpy\n\xff\xfe\n")
    declare(bench, environment="envs/np-task.txt")
    found = diagnostics(bench)
    assert where(found) == [("environment-invalid", "envs/np-task.txt", 2, 1, "np-task")]
    assert "the file is not UTF-8 text" in found[0]["message"]


def test_each_bad_line_is_one_diagnostic_at_its_line(bench: Bench) -> None:
    """Every problem of the file, each at its own line: a bad requirement, an include, an option."""
    requirements(bench, "numpy==2.1\nnot a req!!\n# fine\n-r base.txt\n--trusted-host x\n")
    declare(bench, environment="envs/np-task.txt")
    found = diagnostics(bench)
    assert where(found) == [
        ("environment-invalid", "envs/np-task.txt", 2, 1, "np-task"),
        ("environment-invalid", "envs/np-task.txt", 4, 1, "np-task"),
        ("environment-invalid", "envs/np-task.txt", 5, 1, "np-task"),
    ]
    assert "cannot read 'not a req!!' as a requirement" in found[0]["message"]
    assert "-r is not allowed" in found[1]["message"]
    assert "unknown option '--trusted-host'" in found[2]["message"]


def test_an_include_is_refused_in_text_output(bench: Bench) -> None:
    """The text output names the requirements file and line, the code and the slug's problem."""
    requirements(bench, "numpy\n-r other.txt\n")
    declare(bench, environment="envs/np-task.txt")
    done = run("check", cwd=bench.base)
    assert done.returncode == 1
    assert done.stdout.startswith(
        "envs/np-task.txt:2:1: error[environment-invalid]: requirements of 'np-task': "
        "-r is not allowed"
    )


def test_a_link_resolving_outside_the_manifest_directory_is_refused(
    bench: Bench, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("numpy\n", encoding="utf-8")
    (bench.base / "envs").mkdir()
    (bench.base / "envs" / "np-task.txt").symlink_to(outside)
    line = declare(bench, environment="envs/np-task.txt")
    found = diagnostics(bench)
    assert where(found) == [("environment-invalid", "bench.toml", line, 15, "np-task")]
    assert "outside the manifest's directory" in found[0]["message"]


def test_a_link_inside_the_manifest_directory_is_followed(bench: Bench) -> None:
    requirements(bench, "numpy\n", name="envs/base.txt")
    (bench.base / "envs" / "np-task.txt").symlink_to("base.txt")
    declare(bench, environment="envs/np-task.txt")
    assert diagnostics(bench) == []


def test_a_file_shared_by_two_entries_is_each_entry_s_problem(bench: Bench) -> None:
    """One diagnostic per entry naming the file: accepting it for one leaves the other's."""
    requirements(bench, "numpy\n-c constraints.txt\n", name="envs/shared.txt")
    declare(bench, "np-task", environment="envs/shared.txt")
    declare(bench, "bb", environment="envs/shared.txt")
    assert sorted(where(diagnostics(bench))) == [
        ("environment-invalid", "envs/shared.txt", 2, 1, "bb"),
        ("environment-invalid", "envs/shared.txt", 2, 1, "np-task"),
    ]


# -- python-unavailable ----------------------------------------------------------------------


def test_a_python_the_machine_lacks_is_reported_at_the_python_value(bench: Bench) -> None:
    line = declare(bench, python=NO_PYTHON)
    found = diagnostics(bench)
    assert where(found) == [("python-unavailable", "bench.toml", line, 10, "np-task")]
    assert f"asks for Python {NO_PYTHON}" in found[0]["message"]
    assert f"uv python install {NO_PYTHON}" in found[0]["hint"]


def test_the_harness_s_own_python_is_available(bench: Bench) -> None:
    """Nothing mocked: the interpreter running check is one of the machine's."""
    declare(bench, python=OWN_PYTHON)
    declare(bench, "bb", python=".".join(map(str, sys.version_info[:3])))
    assert diagnostics(bench) == []


def test_both_codes_for_one_entry(bench: Bench) -> None:
    line = declare(bench, environment="envs/none.txt", python=NO_PYTHON)
    assert where(diagnostics(bench)) == [
        ("environment-invalid", "bench.toml", line, 15, "np-task"),
        ("python-unavailable", "bench.toml", line + 1, 10, "np-task"),
    ]


# -- accept, select, and the rest of the check -----------------------------------------------


def test_accept_suppresses_both_codes_for_its_task_class_only(bench: Bench) -> None:
    declare(
        bench,
        environment="envs/none.txt",
        python=NO_PYTHON,
        accept=["environment-invalid", "python-unavailable"],
    )
    line = declare(bench, "bb", python=NO_PYTHON)
    assert where(diagnostics(bench)) == [("python-unavailable", "bench.toml", line, 10, "bb")]


def test_an_accepted_code_that_no_longer_occurs_is_unused(bench: Bench) -> None:
    declare(bench, python=OWN_PYTHON, accept=["python-unavailable"])
    assert [d["code"] for d in diagnostics(bench, "--strict")] == ["unused-ignore"]


def test_ignore_drops_the_codes(bench: Bench) -> None:
    declare(bench, environment="envs/none.txt", python=NO_PYTHON)
    assert diagnostics(bench, "--ignore", "environment-invalid,python-unavailable") == []


def test_an_environment_problem_does_not_stop_the_import(bench: Bench) -> None:
    """The registration runs in the harness's environment: its problems are still found."""
    bench.add("np-task", register="other-name")
    declare(bench, python=NO_PYTHON)
    codes = [d["code"] for d in diagnostics(bench)]
    assert "python-unavailable" in codes
    assert "not-registered" in codes, codes


def test_the_static_pass_reports_the_codes_in_process(
    bench: Bench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """check_static, the library's static pass, says the same as the command line."""
    monkeypatch.chdir(bench.base)  # paths are shown relative to the working directory
    requirements(bench, "numpy\n-e .\n")
    line = declare(bench, environment="envs/np-task.txt", python=NO_PYTHON)
    result = check_static(bench.manifest, lambda _slug: True)
    found = sorted((d.code, d.file, d.line) for d in result.diagnostics)
    assert found == [
        ("environment-invalid", "envs/np-task.txt", 2),
        ("python-unavailable", "bench.toml", line + 1),
    ]
    assert {target.slug for target in result.targets} == {"np-task", "bb"}


def test_explain_documents_both_codes(bench: Bench) -> None:
    for code in ("environment-invalid", "python-unavailable"):
        done = run("explain", code, cwd=bench.base)
        assert done.returncode == 0
        assert done.stdout.startswith(f"# `{code}`\n\nSeverity: error.")


def test_check_never_blocks_on_a_fifo_even_through_a_link(bench: Bench) -> None:
    """A link to a FIFO inside the directory is a FIFO: refused, the check finishes."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    (bench.base / "envs").mkdir()
    os.mkfifo(bench.base / "envs" / "pipe")
    (bench.base / "envs" / "np-task.txt").symlink_to("pipe")
    declare(bench, environment="envs/np-task.txt")
    done = subprocess.run(
        [sys.executable, "-m", "codegenie.eval", "check", "--format", "json"],
        cwd=bench.base,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1
    found = json.loads(done.stdout)["diagnostics"]
    assert [d["code"] for d in found] == ["environment-invalid"]
    assert "FIFO" in found[0]["message"]


# -- environment-build-failed (check --rubrics) -------------------------------------------------


def _two_environments(tmp_path: Path) -> Bench:
    """A bench whose 'tiny-task' builds from a wheel directory and whose 'broken-task' cannot."""
    from .test_grade_environment import declare as declare_keys
    from .test_grade_environment import task_class
    from .wheels import make_wheel, offline_requirements

    made = make_bench(tmp_path / "repo")
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "tinypkg", "1.0", "VERSION = '1.0'\n")
    offline_requirements(made.base / "envs" / "tiny.txt", wheels, "tinypkg==1.0")
    # No wheel of this version anywhere, and no index: uv's install fails.
    offline_requirements(made.base / "envs" / "broken.txt", wheels, "tinypkg==9.9")
    task_class(made, "broken-task")
    task_class(made, "tiny-task")  # (the bench writes its manifest anew for each task class)
    declare_keys(made, "broken-task", environment="envs/broken.txt")
    declare_keys(made, "tiny-task", environment="envs/tiny.txt")
    return made


def test_a_failed_build_is_that_task_class_s_diagnostic_and_the_rest_is_checked(
    tmp_path: Path, env_dir: Path
) -> None:
    """uv failing for one task class is environment-build-failed at its environment value (exit 1).

    The other task class's environment is built and its rubric runs, both
    sides; nothing of the broken environment is left to be used.
    """
    bench = _two_environments(tmp_path)
    done = run("check", "--rubrics", "--sandbox", "none", "--format", "json", cwd=bench.base)
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    text = bench.manifest.read_text(encoding="utf-8").splitlines()
    line = text.index('environment = "envs/broken.txt"') + 1
    [found] = report["diagnostics"]
    assert (found["code"], found["file"], found["line"], found["column"], found["slug"]) == (
        "environment-build-failed",
        "bench.toml",
        line,
        len("environment = ") + 1,
        "broken-task",
    )
    assert "(install failed)" in found["message"]
    assert "tinypkg" in found["traceback"]  # what uv said
    assert "env build broken-task" in found["hint"]
    ran = {
        (c["slug"], c["side"]): c["statuses"]
        for c in report["rubrics"]["cases"]
        if c["side"] != "exploit"
    }
    assert ran == {("tiny-task", "expected"): ["passed"], ("tiny-task", "input"): ["failed"]}
    # The broken task class's rubric never ran, its exploits neither.
    assert {c["slug"] for c in report["rubrics"]["cases"]} == {"tiny-task"}
    assert "Traceback" not in done.stderr


def test_a_failed_build_in_text_output_shows_uv_s_output_with_v(
    tmp_path: Path, env_dir: Path
) -> None:
    """Text: one located diagnostic and the summary; -v adds what uv said under it."""
    bench = _two_environments(tmp_path)
    done = run("check", "--rubrics", "--sandbox", "none", "broken-task", cwd=bench.base)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "error[environment-build-failed]: the environment of 'broken-task'" in done.stdout
    assert "1 error" in done.stderr
    verbose = run("-v", "check", "--rubrics", "--sandbox", "none", "broken-task", cwd=bench.base)
    assert verbose.returncode == 1
    assert "tinypkg==9.9" in verbose.stdout + verbose.stderr
    accepted = run(
        "--format",
        "json",
        "check",
        "--rubrics",
        "--sandbox",
        "none",
        "--ignore",
        "environment-build-failed",
        cwd=bench.base,
    )
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
