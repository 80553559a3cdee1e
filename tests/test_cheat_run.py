"""The cheat run of ``check --rubrics``, through the installed console script on real benches.

Each exploit family flags a rubric vulnerable to it and no exploit flags a
hardened one (the rubrics of ``tests/exploit_rubrics/``); the answer key is
not in ``CASE_DIR`` (a rubric that lists its directory says so), unless the
task class declares ``reads_expected``; a task class's own exploits that
fork, hang or flood end as non-passes and leave the other runs alone; the
ledger and ``--repeat`` hold for exploit runs; what runs is selected on the
command line and in ``[tool.codegenie-bench]``; ``codegenie-bench
exploits`` lists the catalogue; every report format carries each exploit's
verdicts; and a property holds :func:`codegenie.eval.check.cheat.plan` to
its module's contract.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codegenie.eval import rubrics
from codegenie.eval._sandbox.limits import Limits
from codegenie.eval.cases import Case
from codegenie.eval.check._sides import CaseRun
from codegenie.eval.check.cheat import plan
from codegenie.eval.check.exploit_choice import OWN, ExploitSelection
from codegenie.eval.exploits import CATALOGUE, CATALOGUE_VERSION, exploit, exploit_tree

from .exploit_rubrics.bench import CALLS, REFERENCE, RESULTS, RUBRICS, STUB, TEST
from .factory import Bench, make_bench, write_case

OUTPUT_SCHEMA = json.loads(
    (Path(__file__).resolve().parent.parent / "docs" / "cli-output.schema.json").read_text()
)
FAMILIES = tuple(dict.fromkeys(item.family for item in CATALOGUE))
NAMES = tuple(item.name for item in CATALOGUE)
CASE_ID = "c1"


def script() -> str:
    found = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert found is not None
    return found


def cli(
    base: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the console script in ``base``, its store of results in ``base/cache``."""
    return subprocess.run(
        [script(), *args],
        cwd=base,
        env={**os.environ, "XDG_CACHE_HOME": str(base / "cache"), **(env or {})},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def check_json(base: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, Any]:
    """Run ``check --rubrics ARGS --format json``; return its exit status and its document."""
    done = cli(base, "--format", "json", "check", "--rubrics", *args, env=env)
    assert done.returncode in {0, 1}, done.stdout + done.stderr
    document = json.loads(done.stdout)
    schema = {**OUTPUT_SCHEMA, "$ref": "#/$defs/check"}
    jsonschema.Draft202012Validator(schema).validate(document)
    return done.returncode, document


def bwrap_or_skip() -> None:
    """Skip the test where bubblewrap cannot start."""
    try:
        rubrics.choose_sandbox("bwrap")
    except Exception as exc:
        pytest.skip(f"no sandbox here: {exc}")


def registration(slug: str, *, reads_expected: bool = False) -> str:
    flag = ", reads_expected=True" if reads_expected else ""
    return (
        "from codegenie.eval.registry import register_task_class\n\n\n"
        f"@register_task_class({slug!r}{flag})\n"
        "class TaskClassImpl:\n"
        '    """A task class of the cheat run\'s tests."""\n'
    )


def add_python_class(
    bench: Bench,
    slug: str,
    rubric: str,
    *,
    timeout: float,
    reads_expected: bool = False,
    own: dict[str, dict[str, str]] | None = None,
) -> Path:
    """Add ``slug`` whose rubric is ``tests/exploit_rubrics/<rubric>.py``, with the case ``c1``.

    The case asks for ``combine`` of a module named for this task class
    (``{module}`` in ``own``'s file names and texts), its ``input/`` a stub
    and a test, its ``expected/`` the reference (kept also in
    ``reference/c1/`` beside the rubric). ``own`` maps the names of the
    case's own exploits to their files.
    """
    bench.add(slug, source=registration(slug, reads_expected=reads_expected))
    package = bench.root / slug.replace("-", "_")
    shutil.copyfile(RUBRICS / f"{rubric}.py", package / "rubric.py")
    shutil.copyfile(RUBRICS / "_common.py", package / "_common.py")
    module = f"kernel_{uuid.uuid4().hex[:12]}"
    (package / "reference" / CASE_ID).mkdir(parents=True)
    (package / "reference" / CASE_ID / f"{module}.py").write_text(REFERENCE, encoding="utf-8")
    case = write_case(
        package / "cases",
        CASE_ID,
        f"timeout = {timeout}\nmemory = 1024\n",
        input_files={f"{module}.py": STUB, f"test_{module}.py": TEST.format(module=module)},
        expected_files={f"{module}.py": REFERENCE, f"test_{module}.py": TEST.format(module=module)},
    )
    spec = {"module": module, "function": "combine", "calls": CALLS, "results": RESULTS}
    (case / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    for name, files in (own or {}).items():
        for relative, text in files.items():
            target = case / "exploits" / name / relative.format(module=module)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text.format(module=module), encoding="utf-8")
    return package


def only(slug: str, *families: str) -> list[str]:
    """Return the selectors that ignore, for ``slug``, every family but ``families``."""
    return [f"{slug}:{family}" for family in FAMILIES if family not in families]


def found(document: Any, slug: str, code: str = "rubric-exploitable") -> list[dict[str, Any]]:
    return [d for d in document["diagnostics"] if d["slug"] == slug and d["code"] == code]


def named(diagnostic: dict[str, Any]) -> str:
    """Return the exploit a ``rubric-exploitable`` or ``answer-key-readable`` message names."""
    message: str = diagnostic["message"]
    return message.split("exploit '", 1)[1].split("'", 1)[0]


def sides(document: Any, slug: str) -> dict[str, list[str]]:
    """Return the statuses of each side of ``slug``'s case: ``expected``, ``input``, each exploit."""
    return {
        envelope["exploit"] or envelope["side"]: envelope["statuses"]
        for envelope in document["rubrics"]["cases"]
        if envelope["slug"] == slug
    }


# -- 1. each family against a rubric vulnerable to it, and a hardened rubric ----------------

#: Per family: the task class, its rubric, and the exploits of the family that pass it.
VULNERABLE: dict[str, tuple[str, str, frozenset[str]]] = {
    "empty": ("v-empty", "vulnerable_empty", frozenset({"empty"})),
    "universal-value": ("v-universal", "vulnerable_universal", frozenset({"universal-value"})),
    "verdict-forgery": (
        "v-forgery",
        "vulnerable_forgery",
        frozenset(
            {
                "forge-stdout-sys-exit",
                "forge-dunder-stdout-raise",
                "forge-fd1-os-exit",
                "forge-proc-fd1-os-exit",
            }
        ),
    ),
    "early-exit": (
        "v-exit",
        "vulnerable_exit_status",
        frozenset({"exit-at-import", "atexit-forged-verdict"}),
    ),
    "answer-key": ("v-answer", "vulnerable_answer_key", frozenset({"answer-key-search"})),
    "test-tampering": (
        "v-tests",
        "vulnerable_candidate_tests",
        frozenset({"skip-tests", "conftest-passes-everything"}),
    ),
    "resources": ("v-timeout", "vulnerable_timeout_5s", frozenset({"sleep-forever"})),
}
#: The families whose every passing exploit is known (the memory exploit may outlast a second).
EXACT = frozenset(VULNERABLE) - {"resources"}
#: Short timeouts only where a run is meant to reach one: the hardened rubric's, and the
#: resources' vulnerable rubric's, past the five seconds it takes for a pass.
SHORT = 5.0
LONG = 30.0


def run_family_bench(base: Path) -> tuple[int, Any]:
    """One bench, a task class per family plus hardened ones, checked once under bubblewrap.

    Each vulnerable task class runs its own family only (a rubric fooled by
    one family is often fooled by another: the empty rubric trusts an exit
    status too). ``hardened`` runs the whole catalogue but the resources
    (its timeout is long), ``hardened-short`` the resources (timeout
    ``SHORT``); ``kit`` and ``kit-short`` the same with the rubric written
    with ``codegenie_rubric``. Three declare ``reads_expected`` or leak the reference, and
    run the answer-key family: ``reads-cwd`` runs candidate code in
    ``CASE_DIR``; ``reads-hardened`` is the hardened rubric; ``reads-removed``
    removes its copy of ``expected/`` before candidate code runs;
    ``bench-path`` reads the reference from the bench's ``cases/``.
    """
    bench = make_bench(base)
    ignore: list[str] = []
    for family, (slug, rubric, _) in VULNERABLE.items():
        add_python_class(bench, slug, rubric, timeout=2 * SHORT if family == "resources" else LONG)
        ignore += only(slug, family)
    add_python_class(bench, "hardened", "hardened", timeout=LONG)
    ignore.append("hardened:resources")
    add_python_class(bench, "hardened-short", "hardened", timeout=SHORT)
    ignore += only("hardened-short", "resources")
    add_python_class(bench, "kit", "kit", timeout=LONG)
    ignore.append("kit:resources")
    add_python_class(bench, "kit-short", "kit", timeout=SHORT)
    ignore += only("kit-short", "resources")
    for slug, rubric, reads in (
        ("reads-cwd", "reads_expected_case_cwd", True),
        ("reads-hardened", "hardened", True),
        ("reads-removed", "reads_expected_hardened", True),
        ("bench-path", "bench_path_reference", False),
    ):
        add_python_class(bench, slug, rubric, timeout=LONG, reads_expected=reads)
        ignore += only(slug, "answer-key")
    return check_json(
        base, "--sandbox", "bwrap", "--jobs", "2", "--ignore-exploits", ",".join(ignore)
    )


def test_each_family_flags_the_rubric_it_fools_and_none_a_hardened_one(tmp_path: Path) -> None:
    """One check --rubrics of a bench of every family's vulnerable rubric and the hardened ones.

    A vulnerable rubric: rubric-exploitable at its file, naming exactly its
    family's exploits that fool it, expected/ passing and input/ failing. A
    hardened one: no exploit passes, no diagnostic. The answer key: a
    declared reference that candidate code reads is answer-key-readable (a
    warning), even from the hardened rubric, whose CASE_DIR copy sits beside
    the candidate's; a rubric that removes it first is clean; one that reads
    the bench's own cases/ finds nothing under bubblewrap.
    """
    bwrap_or_skip()
    status, document = run_family_bench(tmp_path)
    assert status == 1
    cheat = document["rubrics"]["exploits"]
    assert cheat["catalogue"] == CATALOGUE_VERSION
    assert cheat["select"] is None
    assert "v-empty:verdict-forgery" in cheat["ignore"]
    runs = [e for e in document["rubrics"]["cases"] if e["side"] == "exploit"]
    assert cheat["runs"] == len(runs)
    assert cheat["passed"] == sum(e["statuses"].count("passed") for e in runs)
    assert cheat["reads_expected"] == ["reads-cwd", "reads-hardened", "reads-removed"]
    assert all(e["exploit"] is not None for e in runs)
    assert all(e["exploit"] is None for e in document["rubrics"]["cases"] if e["side"] != "exploit")
    for family, (slug, _, fooling) in VULNERABLE.items():
        each = sides(document, slug)
        assert (each.pop("expected"), each.pop("input")) == (["passed"], ["failed"]), slug
        assert {exploit(name).family for name in each} == {family}
        flagged = found(document, slug)
        for diagnostic in flagged:
            assert diagnostic["severity"] == "error"
            assert diagnostic["file"] == f"bench/{slug.replace('-', '_')}/rubric.py"
            assert exploit(named(diagnostic)).does in diagnostic["message"]
            assert "explain rubric-exploitable" in diagnostic["hint"]
        names = {named(d) for d in flagged}
        assert names == {e for e, statuses in each.items() if "passed" in statuses}
        if family in EXACT:
            assert names == fooling, (slug, each)
        else:
            assert fooling <= names, (slug, each)
        others = [d["code"] for d in document["diagnostics"] if d["slug"] == slug]
        assert set(others) == {"rubric-exploitable"}, (slug, others)
    wanted = {
        "hardened": {n for n in NAMES if exploit(n).family != "resources"},
        "hardened-short": {n for n in NAMES if exploit(n).family == "resources"},
        "kit": {n for n in NAMES if exploit(n).family != "resources"},
        "kit-short": {n for n in NAMES if exploit(n).family == "resources"},
        "reads-removed": {n for n in NAMES if exploit(n).family == "answer-key"},
    }
    for slug, names in wanted.items():
        each = sides(document, slug)
        assert (each.pop("expected"), each.pop("input")) == (["passed"], ["failed"]), slug
        assert set(each) == names
        assert all("passed" not in statuses for statuses in each.values()), (slug, each)
        assert [d for d in document["diagnostics"] if d["slug"] == slug] == []
    # The resource exploits end at a limit, never a pass, on a case of a few seconds.
    assert sides(document, "hardened-short")["sleep-forever"] == ["timeout"]
    assert sides(document, "kit-short")["sleep-forever"] == ["failed"]  # the kit's own timeout
    # A declared reference that candidate code reads: a warning at the rubric, not an error.
    for slug in ("reads-cwd", "reads-hardened"):
        assert found(document, slug) == []
        (warning,) = found(document, slug, "answer-key-readable")
        assert warning["severity"] == "warning"
        assert warning["file"] == f"bench/{slug.replace('-', '_')}/rubric.py"
        assert named(warning) == "answer-key-search"
        assert "reads_expected" in warning["message"]
        assert sides(document, slug)["answer-key-search"] == ["passed"]
    # The bench's cases/ is hidden from a run under bubblewrap: that rubric raises, on every run.
    assert found(document, "bench-path") == []
    (error,) = found(document, "bench-path", "rubric-error")
    assert "FileNotFoundError" in error["message"]
    assert all(statuses == ["error"] for statuses in sides(document, "bench-path").values())


# -- 2. the answer key is not in CASE_DIR ---------------------------------------------------

#: Lists its CASE_DIR into its verdict (and into $CHEAT_LISTINGS, with the candidate's names).
LISTING = """\
import json, os, sys
from pathlib import Path

case, candidate = Path(sys.argv[1]), Path(sys.argv[2])
listing = sorted(os.listdir(case))
log = os.environ.get("CHEAT_LISTINGS")
if log:  # outside the run: only under --sandbox none
    with open(log, "a", encoding="utf-8") as out:
        out.write(json.dumps({"candidate": sorted(os.listdir(candidate)), "listing": listing}))
        out.write("\\n")
answer = candidate / "answer.txt"
passed = answer.is_file() and answer.read_text(encoding="utf-8").strip() == "solved"
print(json.dumps({"passed": passed, "listing": listing}))
sys.exit(0 if passed else 1)
"""


def listing_bench(base: Path) -> Bench:
    """``lists`` and ``lists-reads`` (``reads_expected``): the LISTING rubric, the case ``one``.

    The case holds ``case.toml``, a data file, ``input/``, ``expected/`` and
    an exploit of its own (``exploits/own-x/own.txt``); ``candidates/<slug>/one``
    is a solution to grade.
    """
    bench = make_bench(base)
    for slug, reads in (("lists", False), ("lists-reads", True)):
        bench.add(slug, source=registration(slug, reads_expected=reads))
        package = bench.root / slug.replace("-", "_")
        (package / "rubric.py").write_text(LISTING, encoding="utf-8")
        case = write_case(
            package / "cases",
            "one",
            'description = "lists its directory"\n',
            input_files={"README.txt": "nothing yet\n"},
            expected_files={"answer.txt": "solved\n"},
        )
        (case / "data.txt").write_text("the case's own data\n", encoding="utf-8")
        (case / "exploits" / "own-x").mkdir(parents=True)
        (case / "exploits" / "own-x" / "own.txt").write_text("no answer\n", encoding="utf-8")
        solution = base / "candidates" / slug / "one"
        solution.mkdir(parents=True)
        (solution / "answer.txt").write_text("solved\n", encoding="utf-8")
    return bench


def test_case_dir_holds_no_answer_key_unless_the_task_class_reads_it(tmp_path: Path) -> None:
    """grade and check --rubrics (expected/, input/, exploits): CASE_DIR without expected/ or exploits/.

    With reads_expected, CASE_DIR holds expected/ (never exploits/); show
    and grade say reads_expected.
    """
    listing_bench(tmp_path)
    case = ["case.toml", "data.txt", "input"]
    for slug, listed in (("lists", case), ("lists-reads", sorted([*case, "expected"]))):
        graded = cli(
            tmp_path,
            "--format",
            "json",
            "grade",
            slug,
            str(tmp_path / "candidates" / slug),
            "--sandbox",
            "auto",
        )
        assert graded.returncode == 0, graded.stdout + graded.stderr
        document = json.loads(graded.stdout)
        assert document["reads_expected"] is (slug == "lists-reads")
        (result,) = document["results"]
        assert result["status"] == "passed"
        assert result["verdict"]["listing"] == listed
        shown = cli(tmp_path, "--format", "json", "show", slug)
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["reads_expected"] is (slug == "lists-reads")
    log = tmp_path / "listings.jsonl"
    status, document = check_json(
        tmp_path,
        "--sandbox",
        "none",
        "--exploits",
        "empty,own",
        env={"CHEAT_LISTINGS": str(log)},
    )
    assert status == 0, document["diagnostics"]
    for slug in ("lists", "lists-reads"):
        assert set(sides(document, slug)) == {"expected", "input", "empty", "exploits/own-x"}
    seen = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    by_candidate: dict[tuple[str, ...], list[list[str]]] = {}
    for entry in seen:
        by_candidate.setdefault(tuple(entry["candidate"]), []).append(entry["listing"])
    # expected/, input/, the empty exploit and the case's own exploit, of each task class.
    assert sorted(by_candidate) == [(), ("README.txt",), ("answer.txt",), ("own.txt",)]
    for listings in by_candidate.values():
        assert sorted(map(tuple, listings)) == sorted(
            [tuple(case), (*case[:2], "expected", "input")]
        )


# -- 3. a task class's own exploits that fork, hang or flood --------------------------------

#: Each of the case's own exploits: a module the rubric imports in its own process.
UNRULY = {
    # A child that outlives the module, holding the rubric's stdout and stderr open.
    "fork-outlives": {
        "{module}.py": (
            "import os, time\n\n"
            "if os.fork() == 0:\n"
            "    time.sleep(3600)\n"
            "    os._exit(0)\n\n\n"
            "def combine(a, b):\n"
            "    return 0\n"
        )
    },
    "hangs": {"{module}.py": "import time\n\nwhile True:\n    time.sleep(1)\n"},
    # 300 MiB on each of stdout and stderr, then a wrong answer.
    "floods": {
        "{module}.py": (
            "import os\n\n"
            "_chunk = b'x' * (1 << 20)\n"
            "for _ in range(300):\n"
            "    os.write(1, _chunk)\n"
            "    os.write(2, _chunk)\n\n\n"
            "def combine(a, b):\n"
            "    return 0\n"
        )
    },
}


def processes_naming(text: str) -> list[int]:
    """Return the pids of this machine's processes whose command line holds ``text``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                command = Path("/proc", entry, "cmdline").read_bytes()
            except OSError:
                continue
            if text.encode() in command:
                found.append(int(entry))
    return found


def test_own_exploits_that_fork_hang_or_flood_end_as_non_passes(tmp_path: Path) -> None:
    """Each ends as a non-pass, reported by name; expected/, input/ and other exploits are unharmed.

    The rubric imports the candidate in its own process (it is vulnerable to
    verdict forgery, which is not selected here), so the fork, the endless
    loop and the flood are the rubric's own; nothing of the run is left
    once check ends.
    """
    bench = make_bench(tmp_path)
    add_python_class(bench, "own", "vulnerable_forgery", timeout=5, own=UNRULY)
    status, document = check_json(
        tmp_path, "--sandbox", "none", "--jobs", "2", "--exploits", "own,empty,universal-value"
    )
    assert status == 0, document["diagnostics"]
    each = sides(document, "own")
    assert each.pop("expected") == ["passed"]
    assert each.pop("input") == ["failed"]
    assert each.pop("empty") == ["failed"]
    assert each.pop("universal-value") == ["failed"]
    assert set(each) == {f"exploits/{name}" for name in UNRULY}
    assert all("passed" not in statuses for statuses in each.values()), each
    assert each["exploits/hangs"] == ["timeout"]
    # The rubric's verdict, read once it exited: its child holding the pipes is no timeout.
    assert each["exploits/fork-outlives"] == ["failed"]
    assert document["rubrics"]["exploits"]["runs"] == 5
    assert document["rubrics"]["exploits"]["passed"] == 0
    codes = {d["code"] for d in document["diagnostics"]}
    assert not codes & {"rubric-exploitable", "golden-fails", "input-passes", "rubric-timeout"}
    assert processes_naming(str(tmp_path)) == []


# -- 4. the ledger and --repeat; 7. the reports ---------------------------------------------


def answer_bench(base: Path) -> Bench:
    """``ledgered``: the factory's rubric (passes a candidate holding answer.txt), case ``one``.

    Its own exploit ``exploits/cheat/`` holds an answer.txt that answers
    nothing, which that rubric passes: the cheat run finds it.
    """
    bench = make_bench(base, "ledgered", parts=True)
    case = bench.root / "ledgered" / "cases" / "example"
    (case / "exploits" / "cheat").mkdir(parents=True)
    (case / "exploits" / "cheat" / "answer.txt").write_text("anything\n", encoding="utf-8")
    return bench


def test_exploit_runs_are_reused_and_repeated_as_the_other_sides_are(tmp_path: Path) -> None:
    """A second check reuses every exploit run graded passed or failed; --repeat 2 runs each twice."""
    answer_bench(tmp_path)
    checking = ("--sandbox", "none", "--jobs", "2")
    status, first = check_json(tmp_path, *checking)
    assert status == 1
    verdicts = sides(first, "ledgered")
    assert verdicts == {
        "expected": ["passed"],
        "input": ["failed"],
        "empty": ["failed"],
        "answer-key-links": ["error"],
        # the hooks added to input/ apply to a case in any language
        "conftest-passes-everything": ["failed"],
        "startup-hooks-exit": ["failed"],
        "exploits/cheat": ["passed"],
    }
    (flagged,) = found(first, "ledgered")
    assert named(flagged) == "exploits/cheat"
    assert "the case's own exploit exploits/cheat/" in flagged["message"]
    assert flagged["file"] == "bench/ledgered/rubric.py"
    assert (first["rubrics"]["ran"], first["rubrics"]["reused"]) == (7, 0)
    status, second = check_json(tmp_path, *checking)
    assert status == 1
    # An error is never stored: the link exploit (refused as the run's copy is made) runs again.
    assert (second["rubrics"]["ran"], second["rubrics"]["reused"]) == (1, 6)
    reused = {e["exploit"] or e["side"]: e["reused"] for e in second["rubrics"]["cases"]}
    assert reused == {**dict.fromkeys(verdicts, True), "answer-key-links": False}
    assert second["diagnostics"] == first["diagnostics"]
    assert sides(second, "ledgered") == verdicts
    status, repeated = check_json(tmp_path, "--no-cache", "--repeat", "2", *checking)
    assert status == 1
    assert repeated["rubrics"]["ran"] == 14
    assert {k: len(v) for k, v in sides(repeated, "ledgered").items()} == dict.fromkeys(verdicts, 2)
    assert repeated["rubrics"]["exploits"]["runs"] == 10
    assert repeated["rubrics"]["exploits"]["passed"] == 2
    (flagged,) = found(repeated, "ledgered")
    assert named(flagged) == "exploits/cheat"


def test_every_report_format_carries_each_exploits_verdicts(tmp_path: Path) -> None:
    """JSON, JUnit, SARIF and HTML: the cheat run, its selection and each exploit's verdicts per case."""
    answer_bench(tmp_path)
    checking = ("check", "--rubrics", "--sandbox", "none", "--ignore-exploits", "test-tampering")
    status, document = check_json(tmp_path, *checking[2:])
    assert status == 1
    exploits = [e for e in document["rubrics"]["cases"] if e["side"] == "exploit"]
    assert {e["exploit"]: e["statuses"] for e in exploits} == {
        "empty": ["failed"],
        "answer-key-links": ["error"],
        "exploits/cheat": ["passed"],
    }
    assert document["rubrics"]["exploits"] == {
        "catalogue": CATALOGUE_VERSION,
        "select": None,
        "ignore": ["test-tampering"],
        "runs": 3,
        "passed": 1,
        "skipped": sum(item.family == "test-tampering" for item in CATALOGUE),
        "reads_expected": [],
    }
    junit = cli(tmp_path, "--format", "junit", *checking)
    assert junit.returncode == 1, junit.stderr
    (cheat,) = [
        c
        for c in ET.fromstring(junit.stdout).iter("testcase")
        if "cheat-run" in c.get("classname", "")
    ]
    assert cheat.get("name") == "ledgered/example"
    (failure,) = cheat.findall("failure")
    assert failure.get("type") == "rubric-exploitable"
    assert "exploits/cheat" in failure.get("message", "")
    body = failure.text or ""
    assert "empty: failed" in body
    assert "exploits/cheat: passed" in body
    sarif = cli(tmp_path, "--format", "sarif", *checking)
    assert sarif.returncode == 1, sarif.stderr
    properties = json.loads(sarif.stdout)["runs"][0]["properties"]["exploits"]
    assert properties["ignore"] == ["test-tampering"]
    assert {(v["case"], v["exploit"]): v["statuses"] for v in properties["verdicts"]} == {
        ("example", "empty"): ["failed"],
        ("example", "answer-key-links"): ["error"],
        ("example", "exploits/cheat"): ["passed"],
    }
    html = cli(tmp_path, "--format", "html", *checking)
    assert html.returncode == 1, html.stderr
    assert "cheat run" in html.stdout
    assert "test-tampering" in html.stdout
    for name in ("empty", "answer-key-links", "exploits/cheat"):
        assert f"<td>{name}</td>" in html.stdout
    text = cli(tmp_path, *checking)
    assert text.returncode == 1
    assert "ignored: test-tampering" in text.stderr
    assert "3 exploit runs, 1 graded passed" in text.stderr


# -- 5. selection, on the command line and in [tool.codegenie-bench] ------------------------

NOOP = {"noop": {"{module}.py": "def combine(a, b):\n    return 0\n"}}


def ran(document: Any) -> dict[str, set[str]]:
    """Return the exploits each task class's cheat run ran."""
    found: dict[str, set[str]] = {}
    for envelope in document["rubrics"]["cases"]:
        found.setdefault(envelope["slug"], set())
        if envelope["side"] == "exploit":
            found[envelope["slug"]].add(envelope["exploit"])
    return found


def family(name: str) -> set[str]:
    return {item.name for item in CATALOGUE if item.family == name}


def test_selectors_choose_which_exploit_runs_happen(tmp_path: Path) -> None:
    """--exploits and --ignore-exploits by name, family, SLUG:NAME, SLUG:*, * and own."""
    bench = make_bench(tmp_path)
    for slug in ("sel", "other"):
        add_python_class(bench, slug, "hardened", timeout=LONG, own=NOOP)
    checking = ("--sandbox", "none", "--jobs", "2")
    forgeries = family("verdict-forgery")
    cases: list[tuple[list[str], dict[str, set[str]], dict[str, Any]]] = [
        (
            ["--exploits", "forge-fd1-os-exit"],
            {"sel": {"forge-fd1-os-exit"}, "other": {"forge-fd1-os-exit"}},
            {"select": ["forge-fd1-os-exit"], "ignore": []},
        ),
        (
            ["--exploits", "verdict-forgery", "--ignore-exploits", "forge-dev-stdout-killpg"],
            {
                "sel": forgeries - {"forge-dev-stdout-killpg"},
                "other": forgeries - {"forge-dev-stdout-killpg"},
            },
            {"select": ["verdict-forgery"], "ignore": ["forge-dev-stdout-killpg"]},
        ),
        (
            ["--exploits", "sel:empty,own", "--ignore-exploits", "sel:own"],
            {"sel": {"empty"}, "other": {"exploits/noop"}},
            {"select": ["sel:empty", "own"], "ignore": ["sel:own"]},
        ),
        (
            [
                "--exploits",
                "sel:*",
                "--ignore-exploits",
                "resources,test-tampering,early-exit,verdict-forgery,answer-key",
            ],
            {"sel": {"empty", "universal-value", "exploits/noop"}, "other": set()},
            {
                "select": ["sel:*"],
                "ignore": [
                    "resources",
                    "test-tampering",
                    "early-exit",
                    "verdict-forgery",
                    "answer-key",
                ],
            },
        ),
        (
            ["--ignore-exploits", "*"],
            {"sel": set(), "other": set()},
            {"select": None, "ignore": ["*"], "skipped": 2 * len(CATALOGUE), "runs": 0},
        ),
    ]
    for options, wanted, summary in cases:
        status, document = check_json(tmp_path, *checking, *options)
        assert status == 0, (options, document["diagnostics"])
        assert ran(document) == wanted, options
        cheat = document["rubrics"]["exploits"]
        assert {key: cheat[key] for key in summary} == summary, options
        assert cheat["runs"] == sum(map(len, wanted.values())), options
    text = cli(
        tmp_path,
        "check",
        "--rubrics",
        *checking,
        "--exploits",
        "own",
        "--ignore-exploits",
        "sel:*,resources",
    )
    assert text.returncode == 0, text.stderr
    assert "only own selected; ignored: sel:*, resources" in text.stderr
    # The same from [tool.codegenie-bench], shown with its lines; the command line wins.
    (tmp_path / "pyproject.toml").write_text(
        '[tool.codegenie-bench]\nexploits = ["empty", "own"]\nignore-exploits = ["other:*"]\n',
        encoding="utf-8",
    )
    status, document = check_json(tmp_path, *checking)
    assert status == 0, document["diagnostics"]
    assert ran(document) == {"sel": {"empty", "exploits/noop"}, "other": set()}
    cheat = document["rubrics"]["exploits"]
    assert (cheat["select"], cheat["ignore"]) == (["empty", "own"], ["other:*"])
    status, document = check_json(tmp_path, *checking, "--exploits", "universal-value")
    assert ran(document) == {"sel": {"universal-value"}, "other": set()}
    shown = cli(tmp_path, "--format", "json", "check", "--show-settings")
    assert shown.returncode == 0, shown.stderr
    settings_in_force = json.loads(shown.stdout)["settings"]
    assert settings_in_force["exploits"] == {
        "value": ["empty", "own"],
        "source": "pyproject.toml",
        "line": 2,
    }
    assert settings_in_force["ignore-exploits"] == {
        "value": ["other:*"],
        "source": "pyproject.toml",
        "line": 3,
    }
    shown = cli(tmp_path, "check", "--show-settings")
    assert 'ignore-exploits = ["other:*"]  # pyproject.toml:3' in shown.stdout
    text = cli(tmp_path, "check", "--rubrics", *checking)
    assert text.returncode == 0, text.stderr
    assert "only empty, own selected; ignored: other:*" in text.stderr


def test_an_unknown_selector_is_refused_where_it_is_written(tmp_path: Path) -> None:
    """On the command line: usage error naming the closest; in the file: settings-invalid at the key."""
    make_bench(tmp_path, "ledgered", parts=True)
    typo = cli(tmp_path, "check", "--rubrics", "--exploits", "forge-fd1-os-exti")
    assert typo.returncode == 2
    assert "unknown exploit 'forge-fd1-os-exti'; did you mean 'forge-fd1-os-exit'?" in typo.stderr
    slug = cli(tmp_path, "check", "--rubrics", "--ignore-exploits", "Bad Slug:empty")
    assert slug.returncode == 2
    assert "is not a task class's slug" in slug.stderr
    alone = cli(tmp_path, "check", "--exploits", "empty")
    assert alone.returncode == 2
    assert "--exploits is for check --rubrics" in alone.stderr
    alone = cli(tmp_path, "check", "--ignore-exploits", "empty")
    assert alone.returncode == 2
    assert "--ignore-exploits is for check --rubrics" in alone.stderr
    (tmp_path / "pyproject.toml").write_text(
        '[tool.codegenie-bench]\nstrict = true\nignore-exploits = ["empty", "univeral-value"]\n',
        encoding="utf-8",
    )
    for args in (("check", "--rubrics"), ("check",)):
        done = cli(tmp_path, "--format", "json", *args)
        assert done.returncode == 2, done.stdout
        error = json.loads(done.stdout)["error"]
        assert (error["type"], error["code"]) == ("SettingsInvalid", "settings-invalid")
        (problem,) = error["attributes"]["problems"]
        assert (problem["line"], problem["key"]) == (3, "tool.codegenie-bench.ignore-exploits")
        assert "did you mean 'universal-value'?" in problem["message"]


# -- 6. codegenie-bench exploits ------------------------------------------------------------


def test_the_exploits_command_lists_the_catalogue(tmp_path: Path) -> None:
    """Every exploit, one, or a family's, in text and JSON; an unknown name: exit 2, the closest."""
    listed = cli(tmp_path, "exploits")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert (
        lines[0]
        == f"# the cheat run's catalogue, version {CATALOGUE_VERSION}: {len(CATALOGUE)} exploits"
    )
    assert [line.split()[:2] for line in lines[1:]] == [[e.name, e.family] for e in CATALOGUE]
    document = json.loads(cli(tmp_path, "--format", "json", "exploits").stdout)
    assert document == {
        "catalogue": CATALOGUE_VERSION,
        "exploits": [
            {
                "name": e.name,
                "family": e.family,
                "reach": e.reach,
                "does": e.does,
                "harden": e.harden,
            }
            for e in CATALOGUE
        ],
    }
    one = json.loads(cli(tmp_path, "--format", "json", "exploits", "sleep-forever").stdout)
    assert [e["name"] for e in one["exploits"]] == ["sleep-forever"]
    forgeries = json.loads(cli(tmp_path, "--format", "json", "exploits", "verdict-forgery").stdout)
    assert {e["name"] for e in forgeries["exploits"]} == family("verdict-forgery")
    described = cli(tmp_path, "exploits", "answer-key-links")
    assert described.returncode == 0
    assert "answer-key-links (answer-key, runs on some cases)" in described.stdout
    assert "harden: Never hand candidate code the case directory" in described.stdout
    for typo, closest in (
        ("forge-fd1", "forge-fd1-os-exit"),
        ("verdict-forgeries", "verdict-forgery"),
    ):
        wrong = cli(tmp_path, "exploits", typo)
        assert wrong.returncode == 2
        assert f"unknown exploit {typo!r}; did you mean {closest!r}?" in wrong.stderr
    unknown = cli(tmp_path, "exploits", "zzz")
    assert unknown.returncode == 2
    assert "`codegenie-bench exploits` lists every one" in unknown.stderr


# -- 8. the plan of the cheat run -----------------------------------------------------------

_WORDS = (*NAMES, *FAMILIES, OWN, "*")
_SELECTORS = st.builds(
    lambda slug, what: f"{slug}:{what}" if slug else what,
    st.sampled_from(["", "alpha", "beta"]),
    st.sampled_from(_WORDS),
)
_KINDS = st.sampled_from(["python", "text", "python-own", "text-own"])


def _case(top: Path, slug: str, index: int, kind: str) -> CaseRun:
    directory = top / slug / f"case-{index:02d}"
    if kind.startswith("python"):
        inputs = {
            "mod.py": "def f(x):\n    raise NotImplementedError\n",
            "test_mod.py": "def test(): pass\n",
        }
        expected = {
            "mod.py": "def f(x):\n    return x\n",
            "util/helpers.py": "class A:\n    def m(self): pass\n",
        }
    else:
        inputs, expected = {"README.txt": "todo\n"}, {"answer.txt": "solved\n"}
    write_case(top / slug, directory.name, "", input_files=inputs, expected_files=expected)
    if kind.endswith("own"):
        (directory / "exploits" / "mine").mkdir(parents=True)
        (directory / "exploits" / "mine" / "answer.txt").write_text("no\n", encoding="utf-8")
    case = Case(task_class=slug, id=directory.name, directory=directory, timeout=5, limits=Limits())
    return CaseRun(slug, top / slug / "rubric.py", case, "expected")


def _applies(run: CaseRun, name: str) -> bool:
    return (
        exploit_tree(exploit(name), run.directory / "expected", run.directory / "input") is not None
    )


@settings(max_examples=25)
@given(
    kinds=st.lists(st.tuples(st.sampled_from(["alpha", "beta"]), _KINDS), min_size=1, max_size=30),
    select=st.none() | st.lists(_SELECTORS, max_size=4),
    ignore=st.lists(_SELECTORS, max_size=3),
)
def test_the_plan_runs_what_is_selected_where_it_applies(
    kinds: list[tuple[str, str]], select: list[str] | None, ignore: list[str]
) -> None:
    """Any cases and selection: each chosen exploit where the plan promises, nothing unchosen, trees removed.

    A chosen exploit of reach "rubric" that applies to some case of a task
    class runs on at least one of them; universal-value on every case it
    applies to; a resource exploit on exactly one; a case's own exploits on
    that case; no exploit the selection leaves out. Catalogue trees are
    written under the plan's scratch directory, named by case id, and gone
    once it exits.
    """
    selection = ExploitSelection(
        select=None if select is None else tuple(select), ignore=tuple(ignore)
    )
    with tempfile.TemporaryDirectory() as top:
        runs = [_case(Path(top), slug, index, kind) for index, (slug, kind) in enumerate(kinds)]
        inputs = [*runs, *(CaseRun(r.slug, r.rubric, r.case, "input") for r in runs)]
        with plan(inputs, selection) as cheat:
            made = list(cheat.runs)
            catalogue = [r for r in made if r.family != OWN]
            for run in catalogue:
                assert run.candidate is not None
                assert run.candidate.is_dir()
                assert run.candidate.name == run.case_id
        assert not any(r.candidate is not None and r.candidate.exists() for r in catalogue)
        # The cases of one kind hold the same trees: what applies is read once per kind.
        first = {kind: run for run, (_, kind) in reversed(list(zip(runs, kinds, strict=True)))}
        applies = {kind: {n for n in NAMES if _applies(run, n)} for kind, run in first.items()}
        where = {run.case_id: applies[kind] for run, (_, kind) in zip(runs, kinds, strict=True)}
        _holds_its_promises(runs, made, selection, where)


def _holds_its_promises(
    runs: list[CaseRun],
    made: list[CaseRun],
    selection: ExploitSelection,
    applying: dict[str, set[str]],
) -> None:
    """Assert what the plan promises of the runs it made for ``runs`` (``applying``: by case id)."""
    for run in made:
        assert run.side == "exploit"
        assert run.exploit is not None
        assert run.family is not None
        name = "" if run.family == OWN else run.exploit
        assert selection.chosen(run.slug, name, run.family), run.exploit
    for slug in {run.slug for run in runs}:
        cases = [r for r in runs if r.slug == slug]
        for item in CATALOGUE:
            on = [r.case_id for r in made if r.slug == slug and r.exploit == item.name]
            assert len(on) == len(set(on))
            where = [r.case_id for r in cases if item.name in applying[r.case_id]]
            if not selection.chosen(slug, item.name, item.family) or not where:
                assert on == [], (slug, item.name)
            elif item.family == "resources":
                assert len(on) == 1, (slug, item.name, on)
                assert on[0] in where, (slug, item.name, on)
            elif item.reach == "case":
                assert sorted(on) == sorted(where), (slug, item.name)
            else:
                assert on, (slug, item.name)
                assert set(on) <= set(where), (slug, item.name)
        own = sorted(r.case_id for r in made if r.slug == slug and r.family == OWN)
        wanted = sorted(r.case_id for r in cases if (r.directory / "exploits").is_dir())
        assert own == (wanted if selection.chosen(slug, "", OWN) else [])
        assert all(r.exploit == "exploits/mine" for r in made if r.slug == slug and r.family == OWN)


def test_check_says_reads_expected_with_the_cheat_run_ignored(tmp_path: Path) -> None:
    """--ignore-exploits '*': rubrics.exploits.reads_expected still names the task class."""
    listing_bench(tmp_path)
    status, document = check_json(tmp_path, "--sandbox", "none", "--ignore-exploits", "*")
    assert status == 0, document["diagnostics"]
    assert document["rubrics"]["exploits"]["runs"] == 0
    assert document["rubrics"]["exploits"]["reads_expected"] == ["lists-reads"]
