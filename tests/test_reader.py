"""The one reader of reports (``_reports/reader``, over ``_json``): typed, finite, bounded, consistent."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codegenie.eval._json import Bounds, JsonRefused, load_bounded
from codegenie.eval._reports.documents import GradeDocument, Proof
from codegenie.eval._reports.reader import (
    REPORT_BOUNDS,
    CheckFile,
    GradeFile,
    read_report,
    report_of,
)
from codegenie.eval.errors import ReportProblem, ReportsInvalid
from codegenie.eval.grading import GradeReport, GradeResult, GradeStatus, RunInfo, SampleResult

DIGEST = "sha256:" + "a" * 64


def shard(report: GradeReport) -> dict[str, Any]:
    """The JSON document a shard's ``grade --format json`` writes of ``report``."""
    cases = tuple(sorted(result.case for result in report.results))
    return GradeDocument(
        report=report,
        manifest=Path("/r/bench.toml"),
        case_files={case: Path(f"/r/bench/t/cases/{case}/case.toml") for case in cases},
        cases=cases,
        proof=Proof(DIGEST, (1, 1)),
    ).to_json()


def single() -> GradeReport:
    """A single-sample grade: a passed, b failed (with a verdict of its own keys), c missing."""
    return GradeReport(
        task_class="t",
        results=(
            GradeResult(case="a", status="passed", score=1.0, duration_s=0.5, cpu_s=0.1),
            GradeResult(
                case="b",
                status="failed",
                score=0.25,
                duration_s=0.75,
                peak_memory_mib=12.5,
                verdict={"passed": False, "score": 0.25, "tests": [1, {"x": 2.5}]},
            ),
            GradeResult(case="c", status="missing", reason="no candidate directory c"),
        ),
        run=RunInfo(name="model-a", started_at="2026-12-02T07:01:02Z"),
    )


def sampled() -> GradeReport:
    """A sampled grade: a 2 of 3 samples passed, b every sample passed."""

    def made(case: str, statuses: str) -> GradeResult:
        samples = [
            SampleResult(
                sample=f"s{n}",
                status="passed" if s == "p" else "failed",
                score=0.5,
                duration_s=0.25 * (n + 1),
                wall_s=0.2,
            )
            for n, s in enumerate(statuses)
        ]
        return GradeResult.of_samples(case, samples)

    return GradeReport(
        task_class="t", results=(made("a", "pfp"), made("b", "pp")), sampled=True, pass_at=(1, 2)
    )


def text_of(document: object) -> str:
    return json.dumps(document)


def refused(document: object | str) -> ReportsInvalid:
    text = document if isinstance(document, str) else text_of(document)
    with pytest.raises(ReportsInvalid) as invalid:
        report_of("r.json", text)
    assert invalid.value.exit_code == 2
    return invalid.value


# -- what is read --------------------------------------------------------------------------


@pytest.mark.parametrize("made", [single, sampled])
def test_a_report_the_command_wrote_reads_back_as_it_was(made: Any) -> None:
    """The typed report's JSON is the document read, key for key."""
    document = shard(made())
    read = report_of("r.json", text_of(document))
    assert isinstance(read, GradeFile)
    assert read.report.to_json() == made().to_json() | {"pass_at_k": document["pass_at_k"]}
    assert (read.bench_digest, read.shard, read.cases) == (
        DIGEST,
        (1, 1),
        ("a", "b", "c")[: len(read.cases or ())],
    )


def test_a_check_report_reads_with_its_counts_computed() -> None:
    document = {
        "ok": False,
        "manifest": "/r/bench.toml",
        "checked": 2,
        "declared": 2,
        "errors": 1,
        "warnings": 0,
        "diagnostics": [{"code": "not-registered", "severity": "error", "message": "m"}],
        "strict": False,
        "task_classes": ["a", "b"],
        "bench_digest": DIGEST,
        "shard": {"index": 1, "count": 2},
    }
    read = report_of("c.json", text_of(document))
    assert isinstance(read, CheckFile)
    assert (read.errors, read.warnings, read.shard) == (1, 0, (1, 2))
    said = refused(document | {"errors": 0})
    assert said.located == (
        ReportProblem(
            "r.json",
            "errors",
            "says 0, but its diagnostics hold 1: the report contradicts itself; give the "
            "report the command wrote, unedited",
        ),
    )
    assert "ok: says true" in refused(document | {"ok": True}).problems[0]


# -- numbers that are not finite, anywhere ----------------------------------------------------

# Where a number sits in a shard of single(): each numeric field of a result, and pass@k.
NUMBERS = [
    ("results[0].score", lambda d: d["results"][0], "score"),
    ("results[0].duration_s", lambda d: d["results"][0], "duration_s"),
    ("results[0].cpu_s", lambda d: d["results"][0], "cpu_s"),
    ("results[1].peak_memory_mib", lambda d: d["results"][1], "peak_memory_mib"),
    ("results[1].verdict.tests[1].x", lambda d: d["results"][1]["verdict"]["tests"][1], "x"),
    ('pass_at_k["1"]', lambda d: d["pass_at_k"], "1"),
    ("mean_score", lambda d: d, "mean_score"),
]
NOT_FINITE = ["NaN", "Infinity", "-Infinity", "1e309", "-1e309", "1" + "0" * 400]


@pytest.mark.parametrize("token", NOT_FINITE)
@pytest.mark.parametrize(("path", "held", "key"), NUMBERS)
def test_a_number_that_is_not_finite_is_refused_where_it_is(
    path: str, held: Any, key: str, token: str
) -> None:
    """NaN, ±Infinity and numbers whose float overflows, in any numeric field: refused there."""
    document = shard(single())
    held(document)[key] = 12345.125
    text = text_of(document).replace("12345.125", token)
    said = refused(text)
    (problem,) = said.located
    assert (problem.file, problem.path) == ("r.json", path)
    assert problem.message.endswith("is not a finite number; a report holds only finite numbers")


# -- nesting, keys, shapes --------------------------------------------------------------------


@pytest.mark.parametrize("opener", ["[", '{"k":'])
def test_nesting_deeper_than_a_report_goes_is_refused_before_parsing(opener: str) -> None:
    """900 levels of arrays or of objects in a verdict: refused, never a RecursionError."""
    closer = "]" if opener == "[" else "}"
    document = shard(single())
    document["results"][1]["verdict"]["deep"] = "HERE"
    text = text_of(document).replace('"HERE"', opener * 900 + "0" + closer * 900)
    said = refused(text)
    assert said.problems == (
        f"r.json is not a report this reads: the document nests more than "
        f"{REPORT_BOUNDS.depth} levels deep",
    )


def test_a_verdict_as_deep_as_grade_keeps_one_is_read() -> None:
    """A sample's verdict at the 64 levels grade keeps whole sits well inside the bound."""
    report = sampled()
    deep: Any = 0
    for _ in range(63):
        deep = [deep]
    first = report.results[0]
    assert first.samples is not None
    samples = (first.samples[0].model_copy(update={"verdict": {"d": deep}}), *first.samples[1:])
    kept = report.model_copy(
        update={"results": (first.model_copy(update={"samples": samples}), *report.results[1:])}
    )
    read = report_of("r.json", text_of(shard(kept)))
    assert isinstance(read, GradeFile)
    assert read.report.to_json() == kept.to_json() | {"pass_at_k": shard(kept)["pass_at_k"]}


def test_a_repeated_key_is_refused_where_it_is() -> None:
    text = text_of(shard(single())).replace('"cpu_s": 0.1', '"cpu_s": 0.1, "cpu_s": 0.2', 1)
    assert refused(text).problems == ("r.json: results[0]: the key 'cpu_s' appears twice",)


def test_an_object_of_too_many_keys_and_a_document_of_too_many_values_are_refused() -> None:
    with pytest.raises(JsonRefused, match="4 keys, more than 3"):
        load_bounded('{"a": 0, "b": 1, "c": 2, "d": 3}', Bounds(depth=5, keys=3, values=100))
    with pytest.raises(JsonRefused, match="more than 10 values"):
        load_bounded(json.dumps(list(range(11))), Bounds(depth=5, keys=3, values=10))
    many = {"task_class": "t", "results": [], "case_files": {str(n): "x" for n in range(10)}}
    load_bounded(text_of(many), Bounds(depth=5, keys=10, values=100))


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[]", "r.json is not a JSON report of check or grade: it holds an array, not an object"),
        (
            "7",
            "r.json is not a JSON report of check or grade: it holds a single value, not an object",
        ),
        (
            '"x"',
            "r.json is not a JSON report of check or grade: it holds a single value, not an object",
        ),
        (
            "{}",
            "r.json is not a JSON report of check or grade: it has no task_class and results, nor diagnostics and checked",
        ),
        ('{"task_class": "t", "results": {}}', "r.json: results: Input should be a valid array"),
        (
            '{"task_class": "t", "results": [], "reused": true}',
            "r.json: reused: Input should be a valid integer, not True",
        ),
        (
            '{"task_class": "t", "results": [{"case": "a", "status": "passed", "score": 2}]}',
            "r.json: results[0].score: Input should be less than or equal to 1, not 2",
        ),
        (
            '{"task_class": "t", "results": [{"case": "a", "status": "passed", "duration_s": -1}]}',
            "r.json: results[0].duration_s: Input should be greater than or equal to 0, not -1",
        ),
        (
            '{"task_class": "t", "results": [{"case": "a", "status": "passed", "extra": 1}]}',
            "r.json: results[0].extra: Extra inputs are not permitted, not 1",
        ),
        (
            '{"task_class": "t", "results": [], "shard": {"index": 3, "count": 2}}',
            "r.json: shard: Value error, shard 3/2: the index is above the count",
        ),
        (
            '{"task_class": "t", "results": [{"case": "a", "status": "failed", "samples": [{"sample": "1", "status": "missing"}]}]}',
            "r.json: results[0].samples[0].status: Input should be 'passed', 'failed' or 'error', not 'missing'",
        ),
    ],
)
def test_a_document_of_another_shape_is_refused_with_its_path(text: str, said: str) -> None:
    assert refused(text).problems[0] == said


def test_bytes_that_are_not_utf_8_and_files_that_are_not_regular_are_refused(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"task_class": "\xff", "results": []}')
    with pytest.raises(ReportsInvalid) as invalid:
        read_report(bad, name="bad.json")
    assert invalid.value.problems == ("bad.json is not UTF-8 text (byte 16 is not UTF-8)",)
    with pytest.raises(ReportsInvalid) as invalid:
        read_report(tmp_path, name="dir")
    assert invalid.value.problems == (
        "cannot read dir: the file is a directory, not a regular file",
    )


# -- a report that contradicts itself -----------------------------------------------------------


def _edit_single(document: dict[str, Any], change: str) -> None:
    if change == "the-attack":  # every status failed; the figures say everything passed
        for result in document["results"]:
            result["status"] = "failed"
            result["samples_passed"] = 1
    elif change == "passed":
        document["passed"] = 2
    elif change == "total":
        document["total"] = 4
    elif change == "counts":
        document["counts"]["failed"] = 0
    elif change == "ok":
        document["ok"] = True
    elif change == "mean_score":
        document["mean_score"] = 0.9
    elif change == "pass_at_k":
        document["pass_at_k"]["1"] = 1.0
    elif change == "samples_passed":
        document["results"][1]["samples_passed"] = 1
    else:
        assert change == "status"
        document["results"][1]["status"] = "passed"


def _edit_sampled(document: dict[str, Any], change: str) -> None:
    first = document["results"][0]
    if change == "case-status":
        first["status"] = "passed"
    elif change == "case-score":
        first["score"] = 0.9
    elif change == "case-duration":
        first["duration_s"] = 0.25
    elif change == "case-reason":
        first["reason"] = "3/3 samples passed"
    elif change == "case-counts":
        first["samples_passed"] = 3
    elif change == "sample-status":
        first["samples"][1]["status"] = "passed"
    elif change == "sampled":
        document["sampled"] = False
    else:
        assert change == "pass_at_2"
        document["pass_at_k"]["2"] = 0.5


@pytest.mark.parametrize(
    "change",
    [
        "the-attack",
        "passed",
        "total",
        "counts",
        "ok",
        "mean_score",
        "pass_at_k",
        "samples_passed",
        "status",
    ],
)
def test_a_figure_its_results_do_not_give_is_refused(change: str) -> None:
    """Counts, verdict, mean score and pass@k are computed again, never believed."""
    document = shard(single())
    _edit_single(document, change)
    said = refused(document)
    named = [p for p in said.located if not p.message.endswith("more problems")]
    assert named
    assert all("the report contradicts itself" in p.message for p in named)
    assert all(p.path is not None for p in named)


@pytest.mark.parametrize(
    "change",
    [
        "case-status",
        "case-score",
        "case-duration",
        "case-reason",
        "case-counts",
        "sample-status",
        "sampled",
        "pass_at_2",
    ],
)
def test_a_case_summary_its_samples_do_not_give_is_refused(change: str) -> None:
    document = shard(sampled())
    _edit_sampled(document, change)
    said = refused(document)
    assert said.located
    assert all("contradicts itself" in p.message for p in said.located), said.problems


def test_a_report_older_than_the_figures_is_read_with_them_computed() -> None:
    """Without passed, counts, pass_at_k or samples_*: computed, never required."""
    read = report_of(
        "old.json",
        text_of(
            {
                "task_class": "t",
                "results": [
                    {"case": "a", "status": "passed", "reason": "fine"},
                    {"case": "b", "status": "missing"},
                ],
            }
        ),
    )
    assert isinstance(read, GradeFile)
    assert (read.report.passed, read.report.total, read.ks) == (1, 2, None)
    assert read.report.pass_at_k() == {"1": 0.5}


def test_two_results_of_one_case_and_two_samples_of_one_id_are_refused() -> None:
    document = shard(single())
    document["results"][1]["case"] = "a"
    document["cases"] = ["a", "c"]
    assert "results[1].case: 'a' has a result already" in refused(document).problems[0]
    twice = shard(sampled())
    twice["results"][0]["samples"][1]["sample"] = "s0"
    assert any(p.path == "results[0].samples[1].sample" for p in refused(twice).located)


def test_a_few_problems_of_a_report_are_named_and_the_rest_counted() -> None:
    document = {"task_class": "t", "results": [{"case": str(n)} for n in range(9)]}
    said = refused(document)
    assert len(said.problems) == 6
    assert said.problems[-1] == "r.json: 4 more problems"


# -- properties -----------------------------------------------------------------------------------

FINITE = st.floats(min_value=0, max_value=1e6, allow_nan=False, allow_infinity=False)
JSON_LEAVES = (
    st.none() | st.booleans() | st.integers(-(2**62), 2**62) | st.text(max_size=5) | FINITE
)
VERDICT_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=10,
)


@st.composite
def outcomes(draw: st.DrawFn) -> dict[str, Any]:
    verdict = draw(st.none() | st.dictionaries(st.text(max_size=4), VERDICT_VALUES, max_size=3))
    return {
        "score": draw(st.none() | st.floats(0, 1)),
        "reason": draw(st.none() | st.text(max_size=10)),
        "duration_s": draw(st.none() | FINITE),
        "wall_s": draw(st.none() | FINITE),
        "cpu_s": draw(st.none() | FINITE),
        "peak_memory_mib": draw(st.none() | FINITE),
        "verdict": verdict,
        "node": draw(st.none() | st.sampled_from(["node-1", "node-2"])),
    }


@st.composite
def grade_reports(draw: st.DrawFn) -> GradeReport:
    """Any report grade could write: single-sample or sampled, any finite figures."""
    is_sampled = draw(st.booleans())
    ids = draw(st.lists(st.sampled_from("abcdef"), unique=True, max_size=5))
    results = []
    for case in ids:
        if is_sampled:
            count = draw(st.integers(0, 4))
            samples = [
                SampleResult(
                    sample=f"s{n}",
                    status=draw(st.sampled_from(["passed", "failed", "error"])),
                    **draw(outcomes()),
                )
                for n in range(count)
            ]
            results.append(GradeResult.of_samples(case, samples, tags=("x",)))
        else:
            status: GradeStatus = draw(st.sampled_from(["passed", "failed", "missing", "error"]))
            results.append(GradeResult(case=case, status=status, **draw(outcomes())))
    return GradeReport(
        task_class="t",
        results=tuple(results),
        sampled=is_sampled,
        fail_under=draw(st.none() | st.floats(0, 1)),
    )


@settings(max_examples=80, deadline=None)
@given(grade_reports())
def test_any_finite_report_reads_back_as_it_was_written(report: GradeReport) -> None:
    document = shard(report)
    read = report_of("r.json", text_of(document))
    assert isinstance(read, GradeFile)
    assert (
        GradeDocument(
            report=read.report,
            manifest=Path("/r/bench.toml"),
            case_files={k: Path(v) for k, v in read.case_files.items()},
            cases=read.cases or (),
            proof=Proof(read.bench_digest, read.shard),
        ).to_json()
        == document
    )


_NUMBER = re.compile(r"(?<=: )-?\d+(\.\d+)?(e[-+]?\d+)?(?=[,}\]])")


@settings(max_examples=80, deadline=None)
@given(grade_reports(), st.sampled_from(NOT_FINITE), st.integers(0, 10**6))
def test_any_number_made_not_finite_is_refused_with_its_path(
    report: GradeReport, token: str, pick: int
) -> None:
    """Whichever number of a finite report becomes NaN, ±Infinity or 1e309: refused, located."""
    text = text_of(shard(report))
    numbers = list(_NUMBER.finditer(text))
    if not numbers:
        return
    chosen = numbers[pick % len(numbers)]
    hostile = text[: chosen.start()] + token + text[chosen.end() :]
    said = refused(hostile)
    (problem,) = said.located
    assert problem.path is not None
    assert "is not a finite number" in problem.message


@settings(max_examples=40, deadline=None)
@given(grade_reports(), st.integers(REPORT_BOUNDS.depth, 3 * REPORT_BOUNDS.depth), st.booleans())
def test_any_report_nested_too_deep_is_refused(
    report: GradeReport, depth: int, arrays: bool
) -> None:
    document = shard(report)
    document["deep"] = "HERE"
    opener, closer = ("[", "]") if arrays else ('{"k":', "}")
    text = text_of(document).replace('"HERE"', opener * depth + "1" + closer * depth)
    said = refused(text)
    assert "nests more than" in said.problems[0]


def test_the_bounded_loader_agrees_with_json_on_finite_documents() -> None:
    value = {"a": [1, 2.5, {"b": None, "c": "[[{{"}], "d": 1e-400, "e": -0.0}
    assert load_bounded(json.dumps(value), REPORT_BOUNDS) == json.loads(json.dumps(value))
    assert math.copysign(1, load_bounded("-0.0", REPORT_BOUNDS)) == -1
