"""codegenie-bench against hostile strings, hostile registrations and hostile stdout (docs/security.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from codegenie.eval.cli import _app, main
from codegenie.eval.diagnostics import Diagnostic, escape_control

from .factory import Bench, make_bench
from .test_cli import REPO, assert_shape, json_error, run

ESC = "\x1b"


def _script() -> str:
    return str(Path(sys.executable).parent / "codegenie-bench")


def _lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return (result.stdout + result.stderr).splitlines()


def _write_manifest(base: Path, entries: dict[str, tuple[str, str]]) -> Path:
    """Write a bench.toml with ``entries`` (slug: (module, root)) as TOML basic strings."""
    lines = ["schema-version = 1", ""]
    for slug, (module, root) in entries.items():
        lines += [f"[task-classes.{slug}]", f"module = {json.dumps(module)}"]
        lines += [f"root = {json.dumps(root)}", ""]
    manifest = base / "bench.toml"
    manifest.write_text("\n".join(lines), encoding="utf-8")
    return manifest


# -- escape_control ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("plain text, café, 日本", "plain text, café, 日本"),
        ("a\nb", "a\\nb"),
        ("a\r\nb\tc", "a\\r\\nb\\tc"),
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        ("nul\x00del\x7fcsi\x9b", "nul\\x00del\\x7fcsi\\x9b"),
        ("line\u2028sep\u202eevil", "line\\u2028sep\\u202eevil"),
        ("already \\n escaped", "already \\n escaped"),
    ],
)
def test_escape_control_makes_control_characters_visible(text: str, escaped: str) -> None:
    """escape_control writes control characters as escapes and leaves everything else alone."""
    assert escape_control(text) == escaped
    assert escape_control(escaped) == escaped


def test_github_rendering_is_one_line_whatever_the_strings() -> None:
    """A diagnostic renders as one workflow command, its properties and data escaped."""
    diagnostic = Diagnostic(
        code="import-failed",
        severity="error",
        message="boom\n::error title=INJECTED::x 100%\x1b[2J",
        file="dir,a:b\n::error title=INJECTED::/bench.toml",
        line=3,
        column=1,
        slug="foo",
        hint="fix\r\nit",
    )
    rendered = diagnostic.render_github()
    assert "\n" not in rendered
    assert "\r" not in rendered
    assert ESC not in rendered
    assert rendered.startswith("::error file=dir%2Ca%3Ab\\n%3A%3Aerror title=INJECTED%3A%3A/")
    assert "100%25" in rendered
    text = diagnostic.render_text()
    assert len(text.splitlines()) == 2
    assert ESC not in text


# -- output escaping through the console script ---------------------------------------


@pytest.mark.parametrize(
    "root",
    [
        "x\nfake-slug  bench.fake_slug.registration  bench/bench",
        "x\x1b[31m\x1b]0;title\x07/bench",
        "x\rfake-slug/bench",
    ],
)
@pytest.mark.parametrize("cache", [["--no-cache"], []])
def test_list_cannot_be_forged_by_a_root(tmp_path: Path, root: str, cache: list[str]) -> None:
    """A root holding a newline or an escape sequence forges no line and reaches no terminal raw."""
    _write_manifest(tmp_path, {"foo": ("bench.foo.registration", root)})
    for _ in range(2):  # the second run may be answered from the cache
        result = run("list", *cache, cwd=tmp_path)
        assert "Traceback" not in result.stderr
        assert not any(line.startswith("fake-slug") for line in _lines(result))
        assert ESC not in result.stdout + result.stderr
        assert "\r" not in result.stdout + result.stderr


@pytest.mark.parametrize("command", [["show", "foo"], ["plan"]])
def test_show_and_plan_escape_what_a_registration_says(tmp_path: Path, command: list[str]) -> None:
    """A description or an exception message with control characters is printed escaped."""
    bench = Bench(tmp_path, parts=True)
    bench.add("foo", source=_registration(description="nice\x1b[2J\nfake-slug  x  y"))
    result = run(*command, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert ESC not in result.stdout
    assert not any(line.startswith("fake-slug") for line in _lines(result))
    if command[0] == "show":
        assert "nice\\x1b[2J\\nfake-slug" in result.stdout
    bench.add("foo", before="raise RuntimeError('bad\\nfake.py:1:1: error[forged]: x\\x1b[2J')")
    failed = run(*command, cwd=tmp_path)
    assert failed.returncode == 1
    assert ESC not in failed.stderr
    assert not any(line.startswith("fake.py") for line in _lines(failed))
    assert "bad\\nfake.py:1:1" in failed.stderr


def _registration(description: str = "A task class.", body: str = "") -> str:
    return "\n".join(
        [
            "from codegenie.eval.registry import register_task_class",
            body,
            f"@register_task_class('foo', description={description!r})",
            "class Foo:",
            "    pass",
            "",
        ]
    )


def test_paths_with_newlines_are_escaped_in_every_text_output(tmp_path: Path) -> None:
    """A bench under a directory whose name holds a newline prints that path escaped."""
    base = tmp_path / "evil\nfake-slug  forged\x1b[31m"
    bench = make_bench(base, "foo", parts=True)
    manifest = str(bench.manifest)
    outputs = [
        run("show", "foo", "--manifest", manifest, cwd=tmp_path),
        run("plan", "--manifest", manifest, cwd=tmp_path),
        run("show", "fooo", "--manifest", manifest, cwd=tmp_path),
        run("check", "--manifest", manifest, cwd=tmp_path),
        run("new", "bar", "--manifest", manifest, cwd=tmp_path),
    ]
    for result in outputs:
        assert "Traceback" not in result.stderr
        assert ESC not in result.stdout + result.stderr
        assert not any(line.startswith("fake-slug") for line in _lines(result))
    assert "evil\\nfake-slug" in outputs[0].stdout
    assert outputs[2].returncode == 3


def test_check_github_summary_cannot_inject_a_workflow_command(tmp_path: Path) -> None:
    """A manifest path holding a newline and `::error` starts no workflow command of its own."""
    base = tmp_path / "x\n::error title=INJECTED::boom"
    bench = make_bench(base, "foo", parts=True)
    bench.add("broken", before="raise ValueError('no\\n::error title=INJECTED::x')")
    result = run("check", "--format", "github", "--manifest", str(bench.manifest), cwd=tmp_path)
    assert result.returncode == 1
    for line in _lines(result):
        assert "title=INJECTED" not in line or not line.startswith("::error title=INJECTED")
        assert not line.startswith("::error title=INJECTED")
    assert "::error" in result.stdout


# -- file descriptor 1 belongs to the results ------------------------------------------

_NOISY = """
import os, subprocess, sys, threading, time
os.write(1, b"NOISE-OSWRITE\\n")
sys.__stdout__.write("NOISE-DUNDER\\n")
sys.__stdout__.flush()
print("NOISE-PRINT")
subprocess.run([sys.executable, "-c", "print('NOISE-CHILD')"], check=True)
def _late():
    time.sleep(0.5)
    print("NOISE-THREAD", flush=True)
    os.write(1, b"NOISE-THREAD-FD\\n")
threading.Thread(target=_late).start()
"""


@pytest.mark.parametrize("command", [["show", "foo"], ["plan"], ["plan", "foo", "nope"], ["check"]])
def test_nothing_a_registration_writes_reaches_stdout(tmp_path: Path, command: list[str]) -> None:
    """os.write(1), sys.__stdout__, print, a child process and a late thread all land on stderr."""
    bench = Bench(tmp_path, parts=True)
    bench.add("foo", source=_registration(body=_NOISY))
    result = run(*command, "--format", "json", cwd=tmp_path)
    document = json.loads(result.stdout)
    assert "NOISE" not in result.stdout
    if command[0] != "check":  # check imports in workers whose output it discards
        for marker in ("OSWRITE", "DUNDER", "PRINT", "CHILD", "THREAD", "THREAD-FD"):
            assert f"NOISE-{marker}\n" in result.stderr
    if command == ["plan", "foo", "nope"]:
        assert result.returncode == 3
        assert document["error"]["type"] == "RunPlanError"
    else:
        assert result.returncode == 0, result.stderr


# -- a stdout that is closed or stops reading -------------------------------------------


def _closed_stdout(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the console script with file descriptor 1 closed (`>&-`)."""
    return subprocess.run(
        ["sh", "-c", '"$0" "$@" >&-', _script(), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["list"],
        ["list", "--no-cache"],
        ["list", "--format", "json"],
        ["show", "foo"],
        ["plan", "--format", "json"],
        ["check"],
        ["schema"],
        ["--help"],
        ["--version"],
    ],
)
def test_a_closed_stdout_ends_quietly(tmp_path: Path, args: list[str]) -> None:
    """`>&-` drops the results silently: the command's own exit status, nothing on stderr."""
    make_bench(tmp_path, "foo", parts=True)
    run("list", cwd=tmp_path)  # fill the cache: `list` takes the fast path too
    result = _closed_stdout(*args, cwd=tmp_path)
    assert result.returncode == 0
    if args[0] == "check":  # its summary goes to stderr, as always
        assert result.stderr.startswith("checked 1 task class in bench.toml: 0 errors")
    else:
        assert result.stderr == ""


def _noisy_bench(base: Path, count: int) -> Bench:
    """A bench of ``count`` entries whose registration is missing: 50 to 200 bytes of output each."""
    bench = make_bench(base, "foo", parts=True)
    for n in range(count):
        bench.entries[f"missing-{n:04d}"] = (f"bench.missing_{n:04d}.registration", "bench")
    bench.write_manifest()
    return bench


@pytest.mark.parametrize(
    ("args", "status"),
    [
        (["check"], 1),
        (["check", "--format", "github"], 1),
        (["check", "--format", "json"], 1),
        (["list", "--no-cache"], 0),
        (["list"], 0),
        (["list", "--format", "json"], 0),
        (["plan", "foo", "--format", "json"], 0),
        (["show", "foo"], 0),
    ],
)
def test_a_reader_that_stops_early_ends_the_command_quietly(
    tmp_path: Path, args: list[str], status: int
) -> None:
    """`| head -1` cuts the output: no traceback or BrokenPipeError, the command's own status."""
    bench = _noisy_bench(tmp_path, 2000)
    # More than a pipe holds, so that the writer meets the closed pipe.
    bench.add("foo", source=_registration(description="long " * 40_000))
    run("list", cwd=tmp_path)  # fill the cache: `list` takes the fast path too
    writer = subprocess.Popen(
        [_script(), *args], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert writer.stdout is not None
    assert writer.stderr is not None
    first = writer.stdout.readline()  # as `head -1` does, then stop reading
    writer.stdout.close()
    stderr = writer.stderr.read().decode()
    writer.stderr.close()
    writer.wait(timeout=120)
    assert first.endswith(b"\n")
    assert writer.returncode == status, stderr[-2000:]
    for word in ("Traceback", "BrokenPipe", "internal error", "Exception ignored", "Errno"):
        assert word not in stderr


@pytest.mark.parametrize("args", [["list", "--no-cache"], ["show", "foo"], ["check"]])
def test_a_reader_gone_before_any_output_ends_quietly(tmp_path: Path, args: list[str]) -> None:
    """A pipe whose reader has already closed it: no traceback, the command's own status."""
    make_bench(tmp_path, "foo", parts=True)
    read, write = os.pipe()
    os.close(read)
    try:
        result = subprocess.run(
            [_script(), *args],
            cwd=tmp_path,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    assert result.returncode == 0
    assert "Traceback" not in result.stderr
    assert "Broken" not in result.stderr
    assert "internal error" not in result.stderr


# -- any locale ---------------------------------------------------------------------------

C_LOCALE = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}


@pytest.mark.parametrize(
    "command", [["list", "--no-cache"], ["list"], ["show", "foo"], ["plan"], ["check"]]
)
def test_the_c_locale_prints_non_ascii_text_and_paths(tmp_path: Path, command: list[str]) -> None:
    """Under LC_ALL=C, a non-ASCII description and path print escaped; JSON stays valid."""
    base = tmp_path / "bénch-dïr"
    bench = Bench(base, parts=True)
    bench.add("foo", source=_registration(description="Répare la faille — vite"))
    run("list", cwd=base, env=C_LOCALE)
    text = run(*command, cwd=base, env=C_LOCALE)
    assert text.returncode == 0, text.stderr
    assert "Traceback" not in text.stderr
    assert "UnicodeEncodeError" not in text.stdout + text.stderr
    if command[0] == "show":
        assert "R\\xe9pare la faille \\u2014 vite" in text.stdout
    as_json = run(*command, "--format", "json", cwd=base, env=C_LOCALE)
    assert as_json.returncode == 0, as_json.stderr
    document = json.loads(as_json.stdout)
    if command[0] == "show":
        assert document["description"] == "Répare la faille — vite"
    if command[0] == "list":
        assert document["task_classes"][0]["slug"] == "foo"


def test_the_c_locale_reports_errors_with_non_ascii_messages(tmp_path: Path) -> None:
    """A registration raising a non-ASCII message under LC_ALL=C is reported, not a crash."""
    make_bench(tmp_path, "foo", before="raise RuntimeError('échec — ☠')", parts=True)
    result = run("show", "foo", cwd=tmp_path, env=C_LOCALE)
    assert result.returncode == 1
    assert "\\xe9chec" in result.stderr
    error = json_error(run("show", "foo", "--format", "json", cwd=tmp_path, env=C_LOCALE))
    assert error["attributes"]["cause_message"] == "échec — ☠"


# -- every failure under --format json is a JSON error document ----------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["bogus", "--format", "json"],
        ["--format", "json"],
        ["show", "--format", "json"],
        ["list", "--format=json", "--jobs", "2"],
        ["check", "--format", "json", "--shard", "5/4"],
        ["list", "--format", "json", "--unknown-option"],
    ],
)
def test_usage_errors_under_json_are_error_documents(args: list[str]) -> None:
    """A command-line mistake under --format json prints the error document, exit 2."""
    result = run(*args, cwd=REPO)
    assert result.returncode == 2
    error = json_error(result)
    assert error["type"] == "UsageError"
    assert error["exit_code"] == 2
    assert error["message"]
    assert "usage" in error["attributes"]
    assert result.stderr == ""


def test_usage_errors_in_text_keep_the_usage_line() -> None:
    """Without --format json, a usage error still prints argparse's usage line on stderr."""
    result = run("list", "--unknown-\x1b[2J", cwd=REPO)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("usage: codegenie-bench [-h]")
    assert result.stderr.splitlines()[1].lstrip().startswith("[")  # the usage's own lines
    assert result.stderr.splitlines()[-1] == (
        "codegenie-bench: error: unrecognized arguments: --unknown-\\x1b[2J"
    )
    assert ESC not in result.stderr


def test_an_internal_error_under_json_is_an_error_document(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bug under --format json prints an error document on stdout and exits 1."""

    def broken(*_: object) -> int:
        raise RuntimeError("a bug\nwith two lines")

    monkeypatch.setitem(_app.COMMANDS, "schema", replace(_app.COMMANDS["schema"], run=broken))
    assert main(["schema", "--format", "json"]) == 1
    captured = capsys.readouterr()
    document: dict[str, Any] = json.loads(captured.out)
    assert_shape(document, "error")
    assert document["error"]["type"] == "RuntimeError"
    assert document["error"]["code"] == "internal-error"
    assert "a bug" in document["error"]["message"]
    assert captured.err == ""


def test_an_unprintable_internal_error_is_still_reported(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bug whose __str__ raises is reported as unprintable, not with a second traceback."""

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise ValueError("no")

    def broken(*_: object) -> int:
        raise Unprintable

    monkeypatch.setitem(_app.COMMANDS, "schema", replace(_app.COMMANDS["schema"], run=broken))
    assert main(["schema"]) == 1
    assert "<unprintable Unprintable object>" in capsys.readouterr().err


# -- --version anywhere --------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [["--version"], ["list", "--version"], ["show", "foo", "--version"], ["check", "--version"]],
)
def test_version_is_accepted_before_or_after_the_subcommand(args: list[str]) -> None:
    """`--version` works on either side of the subcommand, like every global option."""
    result = run(*args, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("codegenie-bench ")
    assert result.stdout == run("--version", cwd=REPO).stdout


def test_a_bug_while_reporting_an_error_is_still_an_internal_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """When reporting an error fails too, the result is the internal-error document, not a traceback."""

    def broken_report(*_: object, **__: object) -> list[Diagnostic]:
        raise KeyError("report")

    monkeypatch.setattr("codegenie.eval.problems.error_diagnostics", broken_report)
    assert main(["show", "Bad-Slug", "--format", "json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["error"]["type"] == "KeyError"


_SLOW_REGISTRATION = """\
import os, time
with open(os.environ["MARKER"], "w") as marker:
    marker.write(str(os.getpid()))
time.sleep(float(os.environ["NAP"]))
"""


def _slow_show(
    tmp_path: Path, *, nap: float, ignore_sighup: bool
) -> tuple[subprocess.Popen[str], Path]:
    """Start `show foo` on a registration that naps; return the process once it is importing."""
    import time

    bench = make_bench(tmp_path, "foo")
    bench.add("slow", before=_SLOW_REGISTRATION)
    marker = tmp_path / "marker"
    launcher = (
        "import os, signal, sys\n"
        f"signal.signal(signal.SIGHUP, signal.SIG_IGN if {ignore_sighup} else signal.SIG_DFL)\n"
        "os.execv(sys.argv[1], sys.argv[1:])\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", launcher, _script(), "show", "slow"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MARKER": str(marker), "NAP": str(nap)},
    )
    deadline = time.monotonic() + 60
    while not (marker.exists() and marker.read_text()):
        assert time.monotonic() < deadline, "the registration never ran"
        time.sleep(0.02)
    return process, marker


@pytest.mark.parametrize("signum", [15, 1])  # SIGTERM, SIGHUP
def test_sigterm_and_sighup_end_a_command_as_ctrl_c_does(tmp_path: Path, signum: int) -> None:
    """A signal during a registration's import: exit 128 + the signal, no traceback, no output."""
    process, _ = _slow_show(tmp_path, nap=60, ignore_sighup=False)
    process.send_signal(signum)
    stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 128 + signum
    assert stdout == ""
    assert "Traceback" not in stderr


def test_a_sighup_ignored_from_the_start_stays_ignored(tmp_path: Path) -> None:
    """Under nohup (SIGHUP ignored when the process starts) a hang-up changes nothing."""
    process, _ = _slow_show(tmp_path, nap=1.5, ignore_sighup=True)
    process.send_signal(1)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert stdout.startswith("slug:        slow\n")
