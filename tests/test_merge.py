"""Shards merged with proof: bench_digest, grade --shard, and merge, through the console script."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.factory import Bench, make_bench
from tests.test_reports import junit_cases, run

SLUGS = ("alpha", "beta", "gamma", "delta")


@pytest.fixture
def bench(tmp_path: Path) -> Bench:
    """A bench of four task classes with their parts; beta registers nothing (an error)."""
    made = make_bench(tmp_path / "home", *SLUGS, parts=True)
    made.add("beta", register=None)
    return made


def shard_reports(bench: Bench, count: int, *args: str) -> list[Path]:
    """Run ``check --format json --shard K/count`` for each K; return the report files."""
    paths = []
    for index in range(1, count + 1):
        path = bench.base / f"check-{index}.json"
        result = run(
            bench.base,
            "check",
            *args,
            "--format",
            "json",
            "--shard",
            f"{index}/{count}",
            "--output-file",
            str(path),
        )
        assert result.returncode in {0, 1}, result.stderr
        paths.append(path)
    return paths


def load(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def test_every_shard_carries_the_same_digest_and_its_shard(bench: Bench) -> None:
    """Each shard's JSON report names its shard and the one bench_digest of the bench."""
    documents = [load(path) for path in shard_reports(bench, 3)]
    assert {d["bench_digest"] for d in documents} == {documents[0]["bench_digest"]}
    assert documents[0]["bench_digest"].startswith("sha256:")
    assert [d["shard"] for d in documents] == [{"index": k, "count": 3} for k in (1, 2, 3)]
    assert sorted(s for d in documents for s in d["task_classes"]) == sorted(SLUGS)


def test_merge_of_every_shard_is_the_unsharded_check(bench: Bench) -> None:
    """merge of all the shards' reports gives the diagnostics and verdict of one whole check."""
    paths = shard_reports(bench, 3)
    whole = json.loads(run(bench.base, "check", "--format", "json").stdout)
    result = run(bench.base, "merge", *map(str, paths), "--format", "json")
    assert result.returncode == 1, result.stderr  # beta's error survives the merge
    merged = json.loads(result.stdout)
    assert merged["diagnostics"] == whole["diagnostics"]
    assert merged["task_classes"] == whole["task_classes"]
    assert (merged["ok"], merged["errors"], merged["checked"]) == (False, 1, 4)
    assert merged["bench_digest"] == whole["bench_digest"]
    junit = run(bench.base, "merge", *map(str, paths), "--format", "junit")
    assert set(junit_cases(junit.stdout)) == set(SLUGS)


@pytest.mark.parametrize(
    ("case", "problem"),
    [
        ("missing", "shard 3/3 is missing"),
        ("twice", "shard 2/3 appears 2 times"),
        ("other-bench", "the shards saw different benches"),
        ("same-slug", "task class 'alpha' appears twice"),
        ("wrong-shard", "does not belong to its shard"),
    ],
)
def test_merge_refuses_reports_that_do_not_add_up(bench: Bench, case: str, problem: str) -> None:
    """merge exits 1, with the reason on stderr and nothing on stdout, when shards do not add up."""
    paths = shard_reports(bench, 3)
    if case == "missing":
        paths = paths[:2]
    elif case == "twice":
        paths = [*paths, paths[1]]
    elif case == "other-bench":
        first = paths[0].rename(bench.base / "old-1.json")
        (bench.root / "alpha" / "cases" / "example" / "case.toml").write_text(
            'description = "Changed."\n', encoding="utf-8"
        )
        paths = [first, *shard_reports(bench, 3)[1:]]
    elif case == "same-slug":
        owner = next(p for p in paths if "alpha" in load(p)["task_classes"])
        other = next(p for p in paths if p != owner)
        forged = load(other)
        forged["task_classes"].append("alpha")
        other.write_text(json.dumps(forged), encoding="utf-8")
    elif case == "wrong-shard":
        owner = next(p for p in paths if "alpha" in load(p)["task_classes"])
        other = next(p for p in paths if p != owner)
        moved, kept = load(owner), load(other)
        moved["task_classes"].remove("alpha")
        kept["task_classes"].append("alpha")
        owner.write_text(json.dumps(moved), encoding="utf-8")
        other.write_text(json.dumps(kept), encoding="utf-8")
    result = run(bench.base, "merge", *map(str, paths))
    assert result.returncode == 1
    assert result.stdout == ""
    assert problem in result.stderr


@pytest.fixture
def graded(tmp_path: Path) -> Bench:
    """A bench whose alpha has six cases, each with a solved candidate."""
    made = make_bench(tmp_path / "home", "alpha", parts=True)
    cases = made.root / "alpha" / "cases"
    for n in range(5):
        shutil.copytree(cases / "example", cases / f"case-{n}")
    for case in cases.iterdir():
        candidate = made.base / "candidates" / case.name
        candidate.mkdir(parents=True)
        (candidate / "answer.txt").write_text("solved\n", encoding="utf-8")
    return made


def test_grade_shards_split_the_cases_and_merge_back(graded: Bench) -> None:
    """grade --shard K/N grades a stable share of the cases; merge puts every case back once."""
    paths = []
    for index in (1, 2):
        path = graded.base / f"grade-{index}.json"
        result = run(
            graded.base,
            "grade",
            "alpha",
            "candidates",
            "--sandbox",
            "none",
            "--shard",
            f"{index}/2",
            "--format",
            "json",
            "--output-file",
            str(path),
        )
        assert result.returncode == 0, result.stderr
        paths.append(path)
    shares = [{r["case"] for r in load(path)["results"]} for path in paths]
    assert shares[0].isdisjoint(shares[1])
    assert shares[0]
    assert shares[1]
    merged = run(graded.base, "merge", *map(str, paths), "--format", "json")
    assert merged.returncode == 0, merged.stderr
    document = json.loads(merged.stdout)
    assert document["total"] == 6
    assert document["ok"] is True
    (graded.base / "candidates" / "case-3").rename(graded.base / "away")
    third = graded.base / "grade-3.json"
    run(
        graded.base,
        "grade",
        "alpha",
        "candidates",
        "--sandbox",
        "none",
        "--format",
        "json",
        "--output-file",
        str(third),
    )
    github = run(graded.base, "merge", str(third), "--format", "github")
    assert github.returncode == 1
    assert github.stdout == (
        "::error file=bench/alpha/cases/case-3/case.toml,line=1,title=missing (case-3)"
        "::no candidate directory candidates/case-3\n"
    )
    alone = run(graded.base, "merge", str(paths[0]))
    assert alone.returncode == 1
    assert "shard 2/2 is missing" in alone.stderr
    assert "is missing: no shard graded it" in alone.stderr


def test_merged_reports_have_the_documented_shape(bench: Bench, graded: Bench) -> None:
    """A merged check and a merged grade report validate against docs/cli-output.schema.json."""
    from tests.test_grade import assert_shape

    merged = run(bench.base, "merge", *map(str, shard_reports(bench, 2)), "--format", "json")
    assert_shape(json.loads(merged.stdout), "check")
    path = graded.base / "grade.json"
    run(
        graded.base,
        "grade",
        "alpha",
        "candidates",
        "--sandbox",
        "none",
        "--format",
        "json",
        "--output-file",
        str(path),
    )
    grade = run(graded.base, "merge", str(path), "--format", "json")
    assert grade.returncode == 0, grade.stderr
    assert_shape(json.loads(grade.stdout), "grade")


# -- hostile shards: the one reader refuses them, whatever the format -------------------------


def _shard_document() -> dict[str, Any]:
    """A grade shard's report as grade --format json writes it: a passed, b failed."""
    from codegenie.eval._reports.documents import GradeDocument, Proof
    from codegenie.eval.grading import GradeReport, GradeResult

    report = GradeReport(
        task_class="alpha",
        results=(
            GradeResult(case="a", status="passed", score=1.0, duration_s=0.5, cpu_s=0.1),
            GradeResult(
                case="b",
                status="failed",
                score=0.25,
                duration_s=0.75,
                peak_memory_mib=3.5,
                verdict={"passed": False, "detail": "HERE"},
            ),
        ),
    )
    return GradeDocument(
        report=report,
        manifest=Path("/r/bench.toml"),
        case_files={},
        cases=("a", "b"),
        proof=Proof("sha256:" + "a" * 64, (1, 1)),
    ).to_json()


HOSTILE: dict[str, tuple[str, str]] = {
    # name: (what replaces a value in the text, what stderr says)
    "nan-score": ('"score": 1.0', '"score": NaN'),
    "infinity-duration": ('"duration_s": 0.75', '"duration_s": Infinity'),
    "minus-infinity-cpu": ('"cpu_s": 0.1', '"cpu_s": -Infinity'),
    "overflow-memory": ('"peak_memory_mib": 3.5', '"peak_memory_mib": 1e309'),
    "nan-pass-at-k": ('"1": 0.5', '"1": NaN'),
    "deep-objects": ('"HERE"', '{"k":' * 900 + "0" + "}" * 900),
    "deep-arrays": ('"HERE"', "[" * 900 + "]" * 900),
    "repeated-key": ('"cpu_s": 0.1', '"cpu_s": 0.1, "cpu_s": 0.2'),
    "wrong-type": ('"score": 1.0', '"score": "1.0"'),
    "contradiction": ('"status": "failed"', '"status": "passed"'),
}
SAID = {
    "nan-score": "r.json: results[0].score: NaN is not a finite number",
    "infinity-duration": "r.json: results[1].duration_s: Infinity is not a finite number",
    "minus-infinity-cpu": "r.json: results[0].cpu_s: -Infinity is not a finite number",
    "overflow-memory": "r.json: results[1].peak_memory_mib: 1e309 is not a finite number",
    "nan-pass-at-k": 'r.json: pass_at_k["1"]: NaN is not a finite number',
    "deep-objects": "r.json is not a report this reads: the document nests more than 100 levels",
    "deep-arrays": "r.json is not a report this reads: the document nests more than 100 levels",
    "repeated-key": "r.json: results[0]: the key 'cpu_s' appears twice",
    "wrong-type": "r.json: results[0].score: Input should be a valid number",
    "contradiction": "r.json: results[1].samples_passed: says 0, but its status gives 1",
}


# Every attack as JSON; those the issue found in the format it found them in.
ATTACKS = [(attack, "json") for attack in sorted(HOSTILE)] + [
    ("nan-score", "junit"),
    ("infinity-duration", "junit"),
    ("deep-objects", "html"),
    ("deep-arrays", "html"),
    ("contradiction", "html"),
]


@pytest.mark.parametrize(("attack", "form"), ATTACKS)
def test_merge_refuses_a_hostile_shard_in_every_format(
    tmp_path: Path, attack: str, form: str
) -> None:
    """Non-finite numbers, deep nesting, a repeated key, a wrong type, a lie: exit 1, located.

    (Was: invalid JSON with NaN, a JUnit time="nan", internal error: RecursionError.)
    """
    old, new = HOSTILE[attack]
    text = json.dumps(_shard_document())
    assert old in text
    (tmp_path / "r.json").write_text(text.replace(old, new, 1), encoding="utf-8")
    result = run(tmp_path, "merge", "r.json", "--format", form)
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    assert "internal error" not in result.stderr
    assert "Traceback" not in result.stderr
    assert SAID[attack] in result.stderr


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"[]", "r.json is not a JSON report of check or grade: it holds an array"),
        (b"3.5", "r.json is not a JSON report of check or grade: it holds a single value"),
        (b'{"task_class": "\xff"}', "r.json is not UTF-8 text (byte 16 is not UTF-8)"),
        (b'{"task_class": "alpha", "results": [', "r.json is not JSON: "),
    ],
)
def test_merge_refuses_what_is_no_report(tmp_path: Path, content: bytes, said: str) -> None:
    (tmp_path / "r.json").write_bytes(content)
    result = run(tmp_path, "merge", "r.json", "--format", "json")
    assert (result.returncode, result.stdout) == (1, "")
    assert said in result.stderr


def test_the_shard_as_written_merges_in_every_format(tmp_path: Path) -> None:
    """The document the hostile ones are made from is a report merge takes (exit 1: b failed)."""
    (tmp_path / "r.json").write_text(json.dumps(_shard_document()), encoding="utf-8")
    for form in ("json", "junit", "html"):
        result = run(tmp_path, "merge", "r.json", "--format", form)
        assert result.returncode == 1, result.stderr
        assert result.stderr == ""
    merged = json.loads(run(tmp_path, "merge", "r.json", "--format", "json").stdout)
    assert [r["status"] for r in merged["results"]] == ["passed", "failed"]
