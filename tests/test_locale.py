"""Every command, every format, under an ASCII locale, on a bench whose paths and strings are not ASCII.

``LC_ALL=C`` with ``PYTHONCOERCECLOCALE=0`` and ``PYTHONUTF8=0`` (and no
``LANG``) is the setting where Python decodes file names and the command line
as ASCII, keeping each other byte as a lone surrogate, and writes ASCII to
stdout and stderr: without ``PYTHONUTF8=0`` its UTF-8 mode hides all of it.
Each test runs the installed console script there, on a bench built under a
non-ASCII directory, with a non-ASCII root, description, case description,
tag, candidates directory and rubric reason, and pins the exit code, that
nothing crashed, and what was written: escaped on the ASCII streams, exact in
JSON, XML and the files written in UTF-8 (docs/cli.md, "Any locale works").
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from codegenie.eval._output import READABLE, readable, readable_data
from codegenie.eval._paths import fs_path
from codegenie.eval.cli._base import command_line_text

from .factory import Bench, registration_source, write_case
from .test_cli import script
from .test_html_report import Page

#: The locale of the bug: ASCII everywhere, Python's UTF-8 mode and locale coercion off.
ASCII_LOCALE = {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}

DESCRIPTION = "Résumé ✓ 日本"
REASON = "é ✓ 日本"
ROOT = "données/bench"

# Prints its verdict in raw UTF-8, not as JSON escapes: the reason reaches the
# command as the bytes a rubric that does not care about locales writes.
RUBRIC = """\
import json
import sys
from pathlib import Path

solved = (Path(sys.argv[2]) / "answer.txt").is_file()
verdict = {"passed": solved, "reason": "é ✓ 日本"}
sys.stdout.buffer.write(json.dumps(verdict, ensure_ascii=False).encode("utf-8") + b"\\n")
sys.exit(0 if solved else 1)
"""


def shown(text: str) -> str:
    r"""``text`` as an ASCII stream shows it: ``é`` is ``\xe9``, ``日`` is ``\u65e5``."""
    return text.encode("ascii", "backslashreplace").decode("ascii")


def _environment(
    extra: dict[str, str] | None = None, locale: dict[str, str] = ASCII_LOCALE
) -> dict[str, str]:
    """This process's environment with ``locale``, ``LANG`` and every ``LC_*`` unset."""
    kept = {
        name: value
        for name, value in os.environ.items()
        if name not in {"LANG", "LANGUAGE", "PYTHONIOENCODING"} and not name.startswith("LC_")
    }
    return {**kept, **locale, **(extra or {})}


@dataclass(frozen=True)
class Ran:
    """What the command did: its exit code and what it wrote (ASCII, as the locale is)."""

    code: int
    stdout: str
    stderr: str


def run_c(
    *args: str | bytes,
    cwd: Path,
    env: dict[str, str] | None = None,
    locale: dict[str, str] = ASCII_LOCALE,
) -> Ran:
    """Run the installed console script under the ASCII locale; check that it did not crash.

    ``args`` are passed as the bytes a UTF-8 terminal would pass (or as the
    bytes given). Under an ASCII locale every byte the command writes is
    ASCII; no traceback and no internal error, whatever the exit code.
    """
    done = subprocess.run(
        [script(), *args],
        cwd=cwd,
        capture_output=True,
        timeout=300,
        check=False,
        env=_environment(env, locale),
    )
    assert done.stdout.isascii(), done.stdout
    assert done.stderr.isascii(), done.stderr
    stdout, stderr = done.stdout.decode("ascii"), done.stderr.decode("ascii")
    assert "Traceback" not in stderr, stderr
    assert "internal error" not in stdout + stderr, stdout + stderr
    assert "\\udc" not in stdout + stderr, stdout + stderr  # no undecoded byte shown as such
    return Ran(done.returncode, stdout, stderr)


def _base(tmp: Path) -> Path:
    base = tmp / "dépôt-x" / "repo"
    base.mkdir(parents=True)
    return base


def _good_bench(base: Path) -> Bench:
    """``uni`` under ``données/bench``: two cases graded (one passes), one without a candidate."""
    bench = Bench(base, root_name=ROOT)
    bench.write_manifest()
    package = bench.add("uni", source=registration_source("uni", description=DESCRIPTION)).parent
    (package / "rubric.py").write_text(RUBRIC, encoding="utf-8")
    cases = package / "cases"
    solved = {"answer.txt": "résolu\n"}
    write_case(
        cases,
        "deux",
        'description = "Cas é ✓ 日本"\ntags = ["étiquette"]\n',
        input_files={"LISEZ-MOI.txt": "à faire\n"},
        expected_files=solved,
    )
    write_case(cases, "example", 'description = "Un cas."\n', expected_files=solved)
    write_case(cases, "trois", "", expected_files=solved)
    candidates = _candidates(base)
    (candidates / "deux").mkdir(parents=True)
    (candidates / "example").mkdir()
    (candidates / "example" / "answer.txt").write_text("oui\n", encoding="utf-8")
    return bench


def _candidates(base: Path) -> Path:
    return base / "candidâts" / "réponses"


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Bench:
    """A bench every command reads and none changes (tests that write build their own)."""
    return _good_bench(_base(tmp_path_factory.mktemp("locale")))


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Bench:
    """A bench with problems whose messages and places are not ASCII.

    ``échoue`` raises ``échec ✓ 日本`` when imported; ``faux``'s rubric fails
    its known-good solution with the reason ``é ✓ 日本``; ``perdu``'s root,
    ``rácine/bench``, does not exist.
    """
    bench = Bench(_base(tmp_path_factory.mktemp("locale")), root_name=ROOT)
    bench.write_manifest()
    bench.add("echoue", before="raise RuntimeError('échec ✓ 日本')", parts=True)
    package = bench.add("faux", parts=True).parent
    failing = RUBRIC.replace("solved = (", "solved = False and (")
    (package / "rubric.py").write_text(failing, encoding="utf-8")
    bench.entries["perdu"] = ("bench.perdu.registration", "rácine/bench")
    bench.write_manifest()
    return bench


def test_the_environment_is_the_one_of_the_bug(tmp_path: Path) -> None:
    """Under these settings Python itself decodes names and writes its streams as ASCII."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sys; print(sys.getfilesystemencoding(), sys.stdout.encoding,"
            " ascii(os.getcwd()))",
        ],
        cwd=_base(tmp_path),
        capture_output=True,
        text=True,
        check=True,
        env=_environment(),
    )
    encoding, stdout, cwd = done.stdout.split()
    assert (encoding, stdout) == ("ascii", "ascii")
    assert "\\udcc3\\udca9p\\udcc3\\udcb4t-x" in cwd


# -- list, show, plan -------------------------------------------------------------------------


def test_list_in_text_and_json(good: Bench) -> None:
    """`list` (validated, then from the cache) escapes the root; JSON has the paths exact."""
    for _ in range(2):  # the second is answered from the cache
        text = run_c("list", cwd=good.base)
        assert text.code == 0
        assert text.stdout == f"uni  bench.uni.registration  {shown(ROOT)}\n"
        as_json = run_c("list", "--format", "json", cwd=good.base)
        assert as_json.code == 0
        document = json.loads(as_json.stdout)
        assert document["manifest"] == str(good.manifest)
        assert document["task_classes"] == [
            {"slug": "uni", "module": "bench.uni.registration", "root": ROOT}
        ]


def test_show_in_text_and_json(good: Bench) -> None:
    """`show uni` prints its description and paths escaped; JSON has them exact."""
    text = run_c("show", "uni", cwd=good.base)
    assert text.code == 0
    assert text.stdout.splitlines() == [
        "slug:        uni",
        "module:      bench.uni.registration",
        f"source:      {shown(ROOT)}/uni/registration.py",
        f"description: {shown(DESCRIPTION)}",
        f"rubric:      {shown(ROOT)}/uni/rubric.py",
        f"cases:       {shown(ROOT)}/uni/cases",
        "reference:   expected/ is hidden from every run",
        "case_ids:    deux, example, trois",
    ]
    assert text.stderr == ""
    document = json.loads(run_c("show", "uni", "--format", "json", cwd=good.base).stdout)
    assert document["description"] == DESCRIPTION
    assert document["source"] == str(good.root / "uni" / "registration.py")
    assert document["cases"] == str(good.root / "uni" / "cases")


def test_a_manifest_named_by_a_non_ascii_path(good: Bench, tmp_path: Path) -> None:
    """`--manifest` with a non-ASCII path, from elsewhere, reads that manifest."""
    ran = run_c("--manifest", str(good.manifest), "show", "uni", "--format", "json", cwd=tmp_path)
    assert ran.code == 0
    assert json.loads(ran.stdout)["description"] == DESCRIPTION
    missing = good.base / "nöpe" / "bench.toml"
    text = run_c("--manifest", str(missing), "show", "uni", cwd=good.base)
    assert text.code == 4
    assert text.stderr.splitlines()[0] == (
        f"codegenie-bench: error[manifest-not-found]: no bench manifest at "
        f"{shown('nöpe')}/bench.toml: there is no such file"
    )
    error = json.loads(
        run_c("--manifest", str(missing), "list", "--format", "json", cwd=good.base).stdout
    )
    assert error["error"]["attributes"]["path"] == str(missing)


def test_plan_in_text_and_json(good: Bench) -> None:
    """`plan` prints each registration file escaped; JSON has the manifest and files exact."""
    text = run_c("plan", cwd=good.base)
    assert text.code == 0
    assert text.stdout == f"uni  bench.uni.registration  {shown(ROOT)}/uni/registration.py\n"
    document = json.loads(run_c("plan", "--format", "json", cwd=good.base).stdout)
    assert document["manifest"] == str(good.manifest)
    assert [tc["description"] for tc in document["task_classes"]] == [DESCRIPTION]


def test_logs_in_console_and_json(good: Bench) -> None:
    """-v logs a load's bench root: escaped on the console, exact in JSON lines."""
    console = run_c("-v", "show", "uni", cwd=good.base)
    assert console.code == 0
    assert f"bench_root={shown(str(good.root))}" in console.stderr
    lines = run_c("-v", "--log-format", "json", "show", "uni", cwd=good.base).stderr
    events = [json.loads(line) for line in lines.splitlines() if line.startswith("{")]
    loaded = [e for e in events if e["event"] == "loader.task_class_loaded"]
    assert [e["bench_root"] for e in loaded] == [str(good.root)]


def test_output_file_is_utf8(good: Bench) -> None:
    """--output-file (a non-ASCII name) holds the text output in UTF-8, exact."""
    target = good.base / "sortie-é.txt"
    try:
        ran = run_c("show", "uni", "--output-file", str(target), cwd=good.base)
        assert (ran.code, ran.stdout) == (0, "")
        lines = target.read_text(encoding="utf-8").splitlines()
        assert f"description: {DESCRIPTION}" in lines
        assert f"source:      {ROOT}/uni/registration.py" in lines
    finally:
        target.unlink(missing_ok=True)


# -- check ----------------------------------------------------------------------------------


@pytest.mark.parametrize("rubrics", [[], ["--rubrics"]], ids=["imports", "rubrics"])
def test_check_passes_in_every_format(good: Bench, rubrics: list[str]) -> None:
    """A healthy bench checks clean in every format, its paths exact where the format keeps them."""
    text = run_c("check", *rubrics, cwd=good.base)
    assert (text.code, text.stdout) == (0, "")
    assert text.stderr.endswith("checked 1 task class in bench.toml: 0 errors, 0 warnings\n")
    document = json.loads(run_c("check", *rubrics, "--format", "json", cwd=good.base).stdout)
    assert (document["ok"], document["manifest"]) == (True, str(good.manifest))
    assert run_c("check", *rubrics, "--format", "github", cwd=good.base).code == 0
    junit = run_c("check", *rubrics, "--format", "junit", cwd=good.base)
    assert junit.code == 0
    cases = list(ET.fromstring(junit.stdout).iter("testcase"))
    assert [c.get("name") for c in cases if c.get("classname") == "check"] == ["uni"]
    # With --rubrics, the cheat run's: one test case per case it ran exploits on, none failed.
    cheats = [c for c in cases if c.get("classname") == "cheat-run"]
    assert all(c.get("name", "").startswith("uni/") for c in cheats)
    assert bool(cheats) == bool(rubrics)
    assert not [c for c in cheats if c.find("failure") is not None]
    sarif = json.loads(run_c("check", *rubrics, "--format", "sarif", cwd=good.base).stdout)
    base_uri = sarif["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert base_uri == good.base.as_uri() + "/"
    assert "d%C3%A9p%C3%B4t-x" in base_uri


def test_check_workers_decode_names_as_the_command_does(good: Bench) -> None:
    """`LANG=C` without `LC_ALL`: the workers, run isolated, would be coerced to UTF-8; they are not.

    A path a worker answers with must name the same file in the command, or
    `check --rubrics` cannot hash or copy the case it names.
    """
    legacy = {"LANG": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}
    ran = run_c("check", "--rubrics", "--sandbox", "none", cwd=good.base, locale=legacy)
    assert ran.code == 0, ran.stdout + ran.stderr
    assert ran.stderr.endswith("checked 1 task class in bench.toml: 0 errors, 0 warnings\n")


def test_check_reports_non_ascii_problems_in_every_format(broken: Bench) -> None:
    """A registration's message, a rubric's reason and a root: escaped in text, exact in reports."""
    text = run_c("check", "--rubrics", "--sandbox", "none", cwd=broken.base)
    assert text.code == 1
    assert text.stdout.splitlines()[::2] == [
        f"bench.toml:14:8: error[root-missing]: root '{shown('rácine/bench')}' of 'perdu' is "
        f"not a directory ({shown('rácine/bench')})",
        f"{shown(ROOT)}/echoue/registration.py:2:1: error[import-failed]: importing "
        f"bench.echoue.registration for 'echoue' raised RuntimeError: {shown('échec ✓ 日本')}",
        f"{shown(ROOT)}/faux/cases/example/case.toml:1:1: error[golden-fails]: the known-good "
        f"solution (expected/) of case 'example' of 'faux' fails: {shown(REASON)}",
    ]
    as_json = run_c("check", "--rubrics", "--sandbox", "none", "--format", "json", cwd=broken.base)
    document = json.loads(as_json.stdout)
    messages = {d["code"]: d["message"] for d in document["diagnostics"]}
    assert messages["import-failed"].endswith("RuntimeError: échec ✓ 日本")
    assert messages["golden-fails"].endswith(f"fails: {REASON}")
    files = {d["code"]: d["file"] for d in document["diagnostics"]}
    assert files["golden-fails"] == f"{ROOT}/faux/cases/example/case.toml"
    github = run_c("check", "--format", "github", cwd=broken.base)
    assert github.code == 1
    assert f"::error file={shown(ROOT)}/echoue/registration.py,line=2," in github.stdout
    junit = ET.fromstring(run_c("check", "--format", "junit", cwd=broken.base).stdout)
    failures = [f.text or "" for f in junit.iter("failure")]
    assert any("RuntimeError: échec ✓ 日本" in failure for failure in failures)
    sarif = json.loads(run_c("check", "--format", "sarif", cwd=broken.base).stdout)
    results = sarif["runs"][0]["results"]
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results]
    assert f"{ROOT}/echoue/registration.py" in uris


def test_merge_of_shards_in_every_format(broken: Bench) -> None:
    """The shards' reports (non-ASCII names) merge into the report one run gives, in every format."""
    shards = [broken.base / f"shärd-{k}.json" for k in (1, 2)]
    try:
        for k, shard in enumerate(shards, 1):
            ran = run_c(
                "check",
                "--shard",
                f"{k}/2",
                "--format",
                "json",
                "--output-file",
                str(shard),
                cwd=broken.base,
            )
            assert ran.code in {0, 1}
        names = [str(shard) for shard in shards]
        whole = json.loads(run_c("check", "--format", "json", cwd=broken.base).stdout)
        merged = run_c("merge", *names, "--format", "json", cwd=broken.base)
        assert merged.code == 1
        document = json.loads(merged.stdout)
        assert document["manifest"] == str(broken.manifest)
        assert document["diagnostics"] == whole["diagnostics"]
        text = run_c("merge", *names, cwd=broken.base)
        assert text.code == 1
        assert shown("échec ✓ 日本") in text.stdout
        github = run_c("merge", *names, "--format", "github", cwd=broken.base)
        assert f"::error file={shown(ROOT)}/echoue/registration.py," in github.stdout
        junit = ET.fromstring(run_c("merge", *names, "--format", "junit", cwd=broken.base).stdout)
        assert any("échec ✓ 日本" in (f.text or "") for f in junit.iter("failure"))
        sarif = json.loads(run_c("merge", *names, "--format", "sarif", cwd=broken.base).stdout)
        base_uri = sarif["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"]
        assert base_uri == broken.base.as_uri() + "/"
    finally:
        for shard in shards:
            shard.unlink(missing_ok=True)


# -- grade -------------------------------------------------------------------------------------


def test_grade_in_the_sandbox(good: Bench) -> None:
    """The default sandbox grades candidates under a non-ASCII path; the reason comes out escaped."""
    ran = run_c("grade", "uni", str(_candidates(good.base)), cwd=good.base)
    assert ran.code == 1
    lines = ran.stdout.splitlines()
    assert [line.split()[:2] for line in lines[:3]] == [
        ["failed", "deux"],
        ["passed", "example"],
        ["missing", "trois"],
    ]
    assert lines[0].endswith(f"  {shown(REASON)}")
    assert lines[2].endswith(f"no candidate directory {shown('candidâts/réponses/trois')}")
    assert lines[3] == "1/3 passed (1 failed, 1 missing)"


@pytest.mark.parametrize("fmt", ["text", "json", "github", "junit", "html"])
def test_grade_in_every_format(good: Bench, fmt: str) -> None:
    """Each format says the same grades, the reason escaped in text and exact in JSON and XML."""
    candidates = str(_candidates(good.base))
    ran = run_c("grade", "uni", candidates, "--sandbox", "none", "--format", fmt, cwd=good.base)
    assert ran.code == 1
    assert "warning: --sandbox none" in ran.stderr
    if fmt == "text":
        assert ran.stdout.splitlines()[0].endswith(f"  {shown(REASON)}")
    elif fmt == "json":
        results = {r["case"]: r for r in json.loads(ran.stdout)["results"]}
        assert results["deux"]["reason"] == REASON
        assert (
            results["trois"]["reason"]
            == f"no candidate directory {_candidates(good.base) / 'trois'}"
        )
    elif fmt == "github":
        assert ran.stdout.splitlines()[0] == (
            f"::error file={shown(ROOT)}/uni/cases/deux/case.toml,line=1,title=failed (deux)::"
            f"{shown(REASON)}"
        )
    elif fmt == "html":  # ASCII, the strings exact in the data the page's script reads
        assert ran.stdout.isascii()
        rows = {row["cells"][0]: row for row in Page(ran.stdout).data()["rows"]}
        assert rows["deux"]["cells"][-1] == REASON
        assert rows["trois"]["cells"][-1] == (
            f"no candidate directory {_candidates(good.base) / 'trois'}"
        )
    else:
        failures = list(ET.fromstring(ran.stdout).iter("failure"))
        assert [(f.get("message"), f.text) for f in failures] == [(REASON, REASON)]
        assert "&#233; &#10003; &#26085;&#26412;" in ran.stdout


def test_grade_selects_by_a_non_ascii_tag_and_writes_the_step_summary(
    good: Bench, tmp_path: Path
) -> None:
    """`--tag étiquette` typed under ASCII selects the case tagged so; the job summary is UTF-8."""
    summary = tmp_path / "résumé.md"
    ran = run_c(
        "grade",
        "uni",
        str(_candidates(good.base)),
        "--tag",
        "étiquette",
        "--sandbox",
        "none",
        cwd=good.base,
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert ran.code == 1
    assert [line.split()[1] for line in ran.stdout.splitlines()[:-1]] == ["deux"]
    assert f"| failed | `deux` | {REASON} |" in summary.read_text(encoding="utf-8")


# -- commands that write: init, new ------------------------------------------------------------


def test_init_in_a_non_ascii_directory(tmp_path: Path) -> None:
    """`init` starts a bench under a non-ASCII path; a second one names it, exact in JSON."""
    base = _base(tmp_path)
    ran = run_c("init", cwd=base)
    assert ran.code == 0
    assert ran.stdout == "bench.toml\nbench/\ndocs/bench.schema.json\n.gitignore\n"
    again = run_c("init", "--format", "json", cwd=base)
    assert again.code == 1
    assert json.loads(again.stdout)["error"]["attributes"]["path"] == str(base / "bench.toml")


def test_new_writes_the_text_that_was_typed(tmp_path: Path) -> None:
    """`new --root données/bench --description ünï`: bench.toml and the package hold that text."""
    base = _base(tmp_path)
    assert run_c("init", cwd=base).code == 0
    ran = run_c("new", "fresh", "--root", ROOT, "--description", "ünï ✓", cwd=base)
    assert ran.code == 0
    assert ran.stdout.splitlines()[-1] == f"{shown(ROOT)}/fresh/rubric.py"
    manifest = (base / "bench.toml").read_text(encoding="utf-8")
    assert manifest.endswith(
        f'[task-classes.fresh]\nmodule = "bench.fresh.registration"\nroot = "{ROOT}"\n'
    )
    source = (base / ROOT / "fresh" / "registration.py").read_text(encoding="utf-8")
    assert 'DESCRIPTION = "ünï \\u2713"' in source  # letters as they are, a symbol escaped
    shown_json = json.loads(run_c("show", "fresh", "--format", "json", cwd=base).stdout)
    assert shown_json["description"] == "ünï ✓"
    assert run_c("check", cwd=base).code == 0
    document = json.loads(
        run_c("new", "other", "--description", DESCRIPTION, "--format", "json", cwd=base).stdout
    )
    assert document["manifest"] == str(base / "bench.toml")


@pytest.mark.parametrize(
    ("args", "argument", "value"),
    [
        ([b"new", b"fresh", b"--description", b"caf\xff"], "--description", "caf\\xff"),
        ([b"new", b"fresh", b"--root", b"donn\xe9es/bench"], "--root", "donn\\xe9es/bench"),
        ([b"new", b"fr\xffsh"], "slug", "fr\\xffsh"),
    ],
)
def test_new_refuses_bytes_that_are_not_utf8(
    tmp_path: Path, args: list[bytes], argument: str, value: str
) -> None:
    """An argument whose bytes are not UTF-8 is a usage error naming it (2); nothing is written."""
    base = _base(tmp_path)
    assert run_c("init", cwd=base).code == 0
    before = (base / "bench.toml").read_bytes()
    ran = run_c(*args, cwd=base)
    assert ran.code == 2
    assert ran.stderr.splitlines()[-1] == (
        f"codegenie-bench: error: argument {argument}: not UTF-8 text: '{value}' "
        "(\\xNN: a byte that is not UTF-8)"
    )
    error = json.loads(run_c(*args, b"--format", b"json", cwd=base).stdout)["error"]
    assert (error["type"], error["exit_code"]) == ("UsageError", 2)
    assert error["attributes"]["detail"].startswith(f"argument {argument}: not UTF-8 text: ")
    assert (base / "bench.toml").read_bytes() == before
    assert sorted(p.name for p in (base / "bench").iterdir()) == []


def test_an_invalid_slug_exits_1_under_any_locale(good: Bench) -> None:
    """A slug that breaks the rules, with non-ASCII in it, is InvalidTaskClassName (1), escaped."""
    for command in (["show", "unié"], ["plan", "unié"], ["check", "unié"], ["new", "unié"]):
        ran = run_c(*command, cwd=good.base)
        assert ran.code == 1, command
        assert ran.stderr.startswith(
            "codegenie-bench: error[invalid-task-class-name]: invalid task-class name "
            f"'{shown('unié')}': non-slug character"
        )
        error = json.loads(run_c(*command, "--format", "json", cwd=good.base).stdout)["error"]
        # plan: a RunPlanError, exiting with its one failure's code.
        own = error["attributes"]["errors"]["unié"] if command[0] == "plan" else error
        assert (error["exit_code"], own["exit_code"]) == (1, 1)
        assert (own["type"], own["attributes"]["name"]) == ("InvalidTaskClassName", "unié")


# -- explain, schema -------------------------------------------------------------------------


def test_explain_and_schema(good: Bench) -> None:
    """`explain` prints its reference in ASCII, `schema` valid JSON; a non-ASCII code is named."""
    explained = run_c("explain", "module-missing", cwd=good.base)
    assert explained.code == 0
    assert explained.stdout.startswith("# `module-missing`\n")
    assert run_c("explain", "--all", "--format", "json", cwd=good.base).code == 0
    assert json.loads(run_c("schema", cwd=good.base).stdout)["title"]
    unknown = run_c("explain", "modulé-missing", cwd=good.base)
    assert unknown.code == 2
    assert f"unknown check code '{shown('modulé-missing')}'" in unknown.stderr


# -- the pieces: readable text, the stream handler, arguments, paths -----------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", "plain"),
        ("déjà 日本", "déjà 日本"),
        ("d\udcc3\udca9p\udcc3\udcb4t/donn\u00e9es", "dépôt/données"),
        ("caf\udcff", "caf\\xff"),
        ("lone \ud800 high", "lone \\ud800 high"),
    ],
)
def test_readable_recovers_what_surrogateescape_hid(text: str, expected: str) -> None:
    """Surrogate-escaped UTF-8 becomes its text; an undecodable byte and a stray surrogate, escapes."""
    assert readable(text) == expected
    assert readable(expected) == expected
    assert readable_data({text: [text, (text,), 1]}) == {expected: [expected, [expected], 1]}


@pytest.mark.parametrize(
    ("encoding", "written"),
    [
        ("ascii", "d\\xe9p\\xf4t \\u65e5 \\x9b \\xff\n"),
        ("utf-8", "dépôt 日 \\x9b \\xff\n"),
        ("latin-1", "dépôt \\u65e5 \\x9b \\xff\n"),
        ("cp1252", "d\\xe9pôt \\u65e5 \\x9b \\xff\n"),  # a code page: ASCII escapes
    ],
)
def test_the_stream_handler_writes_any_string(encoding: str, written: str) -> None:
    """Any string reaches any stream: recovered, its controls escaped, the rest as the stream can."""
    buffer = io.BytesIO()
    stream = io.TextIOWrapper(buffer, encoding=encoding, errors=READABLE)
    stream.write("d\udcc3\udca9p\u00f4t \u65e5 \udcc2\udc9b \udcff\n")
    stream.flush()
    assert buffer.getvalue().decode(encoding) == written


def test_a_command_line_argument_is_text_or_refused() -> None:
    """An argument decoded with surrogateescape is decoded again as UTF-8, else refused."""
    assert command_line_text("new") == "new"
    assert command_line_text("ünï") == "ünï"
    assert command_line_text(os.fsdecode("ünï".encode())) == "ünï"
    with pytest.raises(argparse.ArgumentTypeError, match=r"not UTF-8 text: 'caf\\xff'"):
        command_line_text(os.fsdecode(b"caf\xff"))


def test_fs_path_gives_the_form_the_file_system_takes(tmp_path: Path) -> None:
    """Under an ASCII file system a manifest's `données` becomes the name `os` can take."""
    (tmp_path / "données").mkdir()
    # The source in ASCII: the child decodes its command line as ASCII too.
    code = (
        "from codegenie.eval._paths import fs_path; import os; "
        "print(os.listdir(fs_path('donn\\u00e9es')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        env=_environment(),
    )
    assert done.stdout == "[]\n"
    assert fs_path("données") == "données"  # this process's file system is UTF-8
