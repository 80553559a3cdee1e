"""Type-checked, never run: pins the typing of the public checking, reports and environments API."""

from __future__ import annotations

from pathlib import Path
from typing import assert_type

from codegenie.eval import BenchManifest
from codegenie.eval.check import CheckOptions, CheckReport, run_check
from codegenie.eval.environments import (
    BuiltEnvironment,
    DeclaredEnvironment,
    Environment,
    build_environments,
    declared_environments,
)
from codegenie.eval.reports import (
    CheckDocument,
    CompareDocument,
    GradeDocument,
    GradeFile,
    ReportFile,
    compare,
    merge,
    read_report,
)

report = run_check(Path("bench.toml"), CheckOptions(jobs=1))
assert_type(report, CheckReport)
assert_type(report.errors, int)
assert_type(report.ok(strict=True), bool)

read = read_report("base.json")
assert_type(read, ReportFile)
if isinstance(read, GradeFile):
    assert_type(compare(read, read), CompareDocument)
assert_type(merge([read]), CheckDocument | GradeDocument)

manifest = BenchManifest.discover()
assert_type(declared_environments(manifest), tuple[DeclaredEnvironment, ...])
(ready,) = build_environments(manifest, ["demo-task"])
assert_type(ready, BuiltEnvironment)
assert_type(ready.environment, Environment)
assert_type(ready.environment.executable, Path)
