"""A field of a report lands in one place: the writer's model, which the one reader reads back."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path
from typing import Any

from codegenie.eval._ledger.reuse import LedgerSummary
from codegenie.eval._reports.documents import GradeDocument, Proof
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
