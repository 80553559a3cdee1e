"""A field of a report lands in one place: the writer's model, which every reader reads typed.

The one reader of report files reads each field back; ``merge`` carries it;
the ``html`` page shows each field it reads by its attribute, and names the
few it leaves to ``--format json``, so a field added to a model is shown or
left out on purpose.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path
from typing import Any

from codegenie.eval._ledger.reuse import LedgerSummary
from codegenie.eval._reports.documents import GradeDocument, Proof
from codegenie.eval._reports.html import html_of
from codegenie.eval._reports.merge import merge_reports
from codegenie.eval._reports.reader import GradeFile, report_of
from codegenie.eval.diagnostics import Diagnostic
from codegenie.eval.grading import (
    EnvironmentInfo,
    GradeReport,
    GradeResult,
    RunInfo,
    SampleResult,
)

READER = Path(__file__).resolve().parent.parent / "src/codegenie/eval/_reports/reader.py"
DIGEST = "blake2b-256:" + "ab" * 32
# What a report's document does not carry: whether the grading stopped early (the command says so).
NOT_WRITTEN = {"stopped"}


def _every_field_set() -> GradeReport:
    """A report whose every written field, and each result's, holds a value other than its default."""
    outcome: dict[str, Any] = {
        "score": 0.5,
        "reason": "half",
        "duration_s": 1.5,
        "wall_s": 1.25,
        "cpu_s": 0.75,
        "peak_memory_mib": 30.0,
        "limit": "memory",
        "stderr_tail": "tail",
        "traceback": "Traceback",
        "verdict": {"passed": False, "score": 0.5, "tests_run": 3},
        "candidate_digest": DIGEST,
        "reused": True,
        "node": "node-1",
    }
    result = GradeResult(case="a", status="error", tags=("t",), **outcome)
    assert set(GradeResult.model_fields) - {"samples", "status", "case", "tags"} == set(outcome)
    return GradeReport(
        task_class="t",
        results=(result, GradeResult(case="b", status="passed")),
        sandbox="none",
        reused=1,
        ledger=LedgerSummary(looked_up=2, reused=1, interpreter_changed=1, changes=("x added",)),
        sampled=False,
        pass_at=(1,),
        fail_under=0.25,
        run=RunInfo(name="n", candidates_digest=DIGEST, python="3.12.1", sandbox="none"),
        environment=EnvironmentInfo(digest=DIGEST, python="3.12.1", requirements="/r/req.txt"),
        reads_expected=True,
    )


def _document(report: GradeReport, shard: tuple[int, int] = (1, 1)) -> str:
    return json.dumps(
        GradeDocument(
            report=report,
            manifest=Path("/r/bench.toml"),
            case_files={r.case: Path(f"/r/{r.case}.toml") for r in report.results},
            cases=tuple(r.case for r in report.results),
            proof=Proof(DIGEST, shard),
        ).to_json()
    )


def test_the_reader_reads_back_every_field_the_writer_writes() -> None:
    """Each field of the report and of its results is read back as written (the ledger included)."""
    written = _every_field_set()
    read = report_of("r.json", _document(written))
    assert isinstance(read, GradeFile)
    for name in set(GradeReport.model_fields) - NOT_WRITTEN:
        assert getattr(read.report, name) == getattr(written, name), name
    assert read.report.results == written.results


def test_a_sampled_result_reads_back_every_field_of_its_samples() -> None:
    """Each field of a sample is read back as written."""
    sample = SampleResult(
        sample="s1",
        status="failed",
        score=0.25,
        reason="r",
        duration_s=1.0,
        wall_s=1.0,
        cpu_s=0.5,
        peak_memory_mib=10.0,
        limit="cpu-time",
        verdict={"passed": False, "own": 1},
        candidate_digest=DIGEST,
        reused=True,
        node="node-2",
    )
    result = GradeResult.of_samples("a", [sample], tags=("t",))
    written = GradeReport(task_class="t", results=(result,), sampled=True)
    read = report_of("r.json", _document(written))
    assert isinstance(read, GradeFile)
    assert read.report.results == written.results


def test_a_merge_carries_every_field_the_shards_agree_on() -> None:
    """Merged shards keep each field of the report, but for what a merge combines."""
    whole = _every_field_set()
    first, second = (
        whole.model_copy(update={"results": (result,), "ledger": None}) for result in whole.results
    )
    reports = [
        report_of(f"{index}.json", _document(part, (index, 2)))
        for index, part in enumerate((first, second), start=1)
    ]
    merged = merge_reports(reports)
    assert isinstance(merged, GradeDocument)
    combined = {"results", "reused", "run", "ledger"} | NOT_WRITTEN
    for name in set(GradeReport.model_fields) - combined:
        assert getattr(merged.report, name) == getattr(whole, name), name
    assert merged.report.results == whole.results


def test_the_reader_restates_no_field_of_the_writers_models() -> None:
    """The reader declares none of the fields the writer's models declare: it derives them."""
    written = (
        set(GradeReport.model_fields)
        | set(GradeResult.model_fields)
        | set(SampleResult.model_fields)
        | set(RunInfo.model_fields)
        | set(EnvironmentInfo.model_fields)
        | {field.name for field in dataclasses.fields(Diagnostic)}
    )
    tree = ast.parse(READER.read_text(encoding="utf-8"))
    restated = {
        (node.name, statement.target.id)
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.name.startswith("_")
        for statement in node.body
        if isinstance(statement, ast.AnnAssign)
        and isinstance(statement.target, ast.Name)
        and statement.target.id in written
    }
    assert not restated


# -- the html page: every field it shows, read typed ------------------------------------------

# What the page leaves to ``--format json``: how the store answered, the declared environment.
NOT_ON_THE_PAGE = {"ledger", "environment"}
# Where the page shows each field of a result: the row's cell (by its column), the row's detail
# fields or blocks (by label); ``samples`` are rows of their own.
RESULT_CELLS = {
    "case": "case",
    "status": "status",
    "score": "score",
    "duration_s": "duration (s)",
    "wall_s": "wall (s)",
    "cpu_s": "CPU (s)",
    "peak_memory_mib": "peak MiB",
    "tags": "tags",
    "reason": "reason",
}
RESULT_FIELDS = {
    "limit": "limit exceeded",
    "node": "node",
    "candidate_digest": "candidate digest",
    "reused": "reused",
}
BLOCKS = {"stderr_tail": "stderr tail", "traceback": "traceback", "verdict": "verdict (own keys)"}
SAMPLE_CELLS = {
    "sample": "sample",
    "status": "status",
    "score": "score",
    "duration_s": "duration (s)",
    "wall_s": "wall (s)",
    "cpu_s": "CPU (s)",
    "peak_memory_mib": "peak MiB",
    "limit": "limit",
    "reason": "reason",
    "node": "node",
}
# A sample's digest and reuse are its case's business: its row shows neither.
SAMPLE_NOT_ON_THE_PAGE = {"candidate_digest", "reused"}
RUN_LABELS = {
    "name": "name",
    "candidates_digest": "candidates digest",
    "started_at": "started",
    "finished_at": "finished",
    "tool_version": "tool version",
    "python": "python",
    "sandbox": "sandbox",
}


def _page_data(page: str) -> dict[str, Any]:
    block = page.split('<script type="application/json" id="report-data">', 1)[1]
    data: dict[str, Any] = json.loads(block.split("</script>", 1)[0])
    return data


def _shown_block(name: str, value: Any) -> Any:
    if name == "verdict":
        return {k: v for k, v in value.items() if k not in {"passed", "score", "reason"}}
    return value


def _block_value(name: str, text: str) -> Any:
    return json.loads(text) if name == "verdict" else text


def test_every_field_the_page_shows_reaches_it_typed() -> None:
    """Each written field of the report, its run and its results is on the page, as written."""
    assert set(RESULT_CELLS) | set(RESULT_FIELDS) | set(BLOCKS) | {"samples"} == set(
        GradeResult.model_fields
    )
    assert set(RUN_LABELS) == set(RunInfo.model_fields)
    every = _every_field_set()
    assert every.run is not None
    run = every.run.model_copy(
        update={"started_at": "2026-12-02T07:01:02Z", "finished_at": "2026-12-02T07:31:02Z"}
    )
    report = every.model_copy(update={"run": run})
    page = html_of(GradeDocument(report=report, proof=Proof(DIGEST, (1, 2)), merged=2))
    data = _page_data(page)

    # The report's own fields, each in the summary (or the pass@k table, the title).
    shown = {
        "task_class": f"<title>codegenie-bench grade {report.task_class}: failed</title>",
        "sandbox": f"<dt>sandbox</dt><dd>{report.sandbox}</dd>",
        "reused": f"<dt>reused results</dt><dd>{report.reused}</dd>",
        "sampled": "<dt>sampled</dt><dd>no</dd>",
        "reads_expected": "<dt>rubric reads expected/</dt><dd>yes</dd>",
        "fail_under": "<dt>fail under (pass@1)</dt><dd>25.0%</dd>",
        "pass_at": "".join(
            f"<tr><td>{k}</td><td>{rate * 100:.1f}%</td></tr>"
            for k, rate in report.pass_at_k().items()
            if rate is not None
        ),
        "run": "".join(
            f"<dt>{label}</dt><dd>{getattr(run, name)}</dd>" for name, label in RUN_LABELS.items()
        ),
    }
    written = set(GradeReport.model_fields) - NOT_WRITTEN - NOT_ON_THE_PAGE - {"results"}
    assert set(shown) == written
    for name, html in shown.items():
        assert html in page, name
    for html in ("<dt>merged reports</dt><dd>2</dd>", "<dt>shard</dt><dd>1/2</dd>", DIGEST):
        assert html in page

    # Each result's fields, in its row.
    columns = [column["label"] for column in data["columns"]]
    for result, row in zip(report.results, data["rows"], strict=True):
        for name, label in RESULT_CELLS.items():
            value = getattr(result, name)
            assert row["cells"][columns.index(label)] == (
                list(value) if isinstance(value, tuple) else value
            ), name
        fields = dict(map(tuple, row["detail"]["fields"])) if row["detail"] else {}
        blocks = dict(map(tuple, row["detail"]["blocks"])) if row["detail"] else {}
        for name, label in RESULT_FIELDS.items():
            value = getattr(result, name)
            if value is not None:
                assert fields[label] == (
                    "yes" if value is True else "no" if value is False else value
                )
        for name, label in BLOCKS.items():
            value = getattr(result, name)
            if value is not None:
                assert _block_value(name, blocks[label]) == _shown_block(name, value), name
    # The first result sets every field: none of them was left out above.
    assert all(getattr(report.results[0], name) is not None for name in RESULT_FIELDS)


def test_every_field_of_a_sample_the_page_shows_reaches_it_typed() -> None:
    """Each written field of a sample is in its row of the page (its cells and its logs)."""
    assert set(SAMPLE_CELLS) | set(BLOCKS) | SAMPLE_NOT_ON_THE_PAGE == set(
        SampleResult.model_fields
    )
    sample = SampleResult(
        sample="s1",
        status="error",
        score=0.25,
        reason="r",
        duration_s=1.5,
        wall_s=1.25,
        cpu_s=0.5,
        peak_memory_mib=10.0,
        limit="cpu-time",
        stderr_tail="stail",
        traceback="stb",
        verdict={"passed": False, "own": 1},
        candidate_digest=DIGEST,
        reused=True,
        node="node-2",
    )
    result = GradeResult.of_samples("a", [sample], tags=("t",))
    report = GradeReport(task_class="t", results=(result,), sampled=True)
    data = _page_data(html_of(GradeDocument(report=report)))
    columns = [column["label"] for column in data["sample_columns"]]
    (row,) = data["rows"][0]["detail"]["samples"]
    for name, label in SAMPLE_CELLS.items():
        assert row["cells"][columns.index(label)] == getattr(sample, name), name
    blocks = dict(map(tuple, row["blocks"]))
    for name, label in BLOCKS.items():
        assert _block_value(name, blocks[label]) == _shown_block(name, getattr(sample, name))
