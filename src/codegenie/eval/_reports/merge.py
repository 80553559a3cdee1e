"""Merge the JSON reports of the shards of one ``check`` or ``grade`` into one report.

A merge is proof that the shards together covered the bench once: every
report is of the same command (and, for ``grade``, task class), carries the
same ``bench_digest`` and shard count, each shard ``1..N`` comes exactly
once, no task class (``check``) or case (``grade``) is reported by two
shards, a check report holds only task classes of its own shard (the stable
split of ``check --shard``), and, for ``grade``, every case of the task
class has a result.
:func:`merge_reports` returns the merged report, typed as one run's
(:mod:`.documents`), or raises :class:`MergeRefused` with every reason it
found.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, final

from codegenie.eval._paths import fs_path
from codegenie.eval._reports.documents import CheckDocument, GradeDocument, Proof
from codegenie.eval._reports.formats import ReportKind
from codegenie.eval._sandbox.choices import ProviderName, least_contained
from codegenie.eval.diagnostics import Diagnostic

if TYPE_CHECKING:
    from pydantic import ValidationError

    from codegenie.eval.grading import EnvironmentInfo, RunInfo

__all__ = ("MergeRefused", "ReportKind", "kind_of", "merge_reports")


@final
class MergeRefused(Exception):
    """The reports do not add up to one run of one bench; ``problems`` says each way."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(self.problems))


def kind_of(document: Mapping[str, Any]) -> ReportKind | None:
    """Return which command's JSON report ``document`` is, or ``None`` for neither."""
    if "task_class" in document and "results" in document:
        return "grade"
    if "diagnostics" in document and "checked" in document:
        return "check"
    return None


def _shards(names: Sequence[str], documents: Sequence[Mapping[str, Any]]) -> list[str]:
    problems = []
    digests = {document.get("bench_digest") for document in documents}
    if None in digests:
        unproved = [n for n, d in zip(names, documents, strict=True) if not d.get("bench_digest")]
        problems.append(f"no bench_digest in {', '.join(unproved)}: cannot prove one bench")
    elif len(digests) > 1:
        seen = ", ".join(f"{n}: {d['bench_digest']}" for n, d in zip(names, documents, strict=True))
        problems.append(f"the shards saw different benches (bench_digest differs: {seen})")
    shards = [document.get("shard") or {"index": 1, "count": 1} for document in documents]
    counts = {shard["count"] for shard in shards}
    if len(counts) > 1:
        problems.append(f"the reports split the bench differently (shard counts {sorted(counts)})")
        return problems
    (count,) = counts
    seen_shards = Counter(shard["index"] for shard in shards)
    for index in range(1, count + 1):
        if seen_shards[index] == 0:
            problems.append(f"shard {index}/{count} is missing")
        elif seen_shards[index] > 1:
            problems.append(f"shard {index}/{count} appears {seen_shards[index]} times")
    return problems


def _twice(label: str, owners: dict[str, list[str]]) -> list[str]:
    return [
        f"{label} {name!r} appears twice (in {', '.join(where)})"
        for name, where in sorted(owners.items())
        if len(where) > 1
    ]


def _path(text: str) -> Path:
    """Return a report's path (text, in JSON) as a path of this process, to compare with its own."""
    return Path(fs_path(text))


def _merge_check(
    names: Sequence[str], documents: Sequence[Mapping[str, Any]]
) -> tuple[CheckDocument, list[str]]:
    from codegenie.eval.check import Shard  # noqa: PLC0415 - only check reports need the split

    owners: dict[str, list[str]] = {}
    problems = []
    for name, document in zip(names, documents, strict=True):
        given = document.get("shard") or {"index": 1, "count": 1}
        try:
            shard = Shard(given["index"], given["count"])
        except (KeyError, TypeError, ValueError):
            problems.append(f"{name} names no valid shard: {given!r}")
            continue
        for slug in document.get("task_classes", []):
            owners.setdefault(slug, []).append(name)
            if slug not in shard:
                problems.append(
                    f"task class {slug!r} in {name} does not belong to its shard "
                    f"{shard.index}/{shard.count}"
                )
    problems += _twice("task class", owners)
    diagnostics = [d for document in documents for d in document["diagnostics"]]
    diagnostics.sort(
        key=lambda d: (
            d.get("file") or "",
            d.get("line") or 0,
            d.get("column") or 0,
            d.get("slug") or "",
            d["code"],
            d["message"],
        )
    )
    strict = any(document.get("strict", False) for document in documents)
    errors = sum(d["severity"] == "error" for d in diagnostics)
    warnings = sum(d["severity"] == "warning" for d in diagnostics)
    first = documents[0]
    checked = sum(document["checked"] for document in documents)
    merged = CheckDocument(
        manifest=_path(first["manifest"]),
        ok=all(document["ok"] for document in documents)
        and errors == 0
        and (not strict or warnings == 0),
        checked=checked,
        declared=sum(document.get("declared", document["checked"]) for document in documents),
        diagnostics=tuple(Diagnostic(**d) for d in diagnostics),
        strict=strict,
        task_classes=tuple(sorted(owners)),
        summary=f"merged {len(documents)} reports: checked {checked} task classes: "
        f"{errors} errors, {warnings} warnings",
        proof=Proof(first.get("bench_digest"), (1, 1)),
        merged=len(documents),
    )
    return merged, problems


def _merge_grade(
    names: Sequence[str], documents: Sequence[Mapping[str, Any]]
) -> tuple[GradeDocument, list[str]]:
    from codegenie.eval.grading import GradeReport, GradeResult  # noqa: PLC0415 - pydantic: only grade reports pay for it

    _refuse_malformed(names, documents)
    problems = []
    task_classes = {document["task_class"] for document in documents}
    if len(task_classes) > 1:
        problems.append(f"the reports grade different task classes: {sorted(task_classes)}")
    runs = [document.get("run") or {} for document in documents]
    for key, what in (
        ("candidates_digest", "different candidates"),
        ("name", "differently named runs"),
    ):
        values = {run.get(key) for run in runs}
        if len(values) > 1:
            seen = ", ".join(f"{n}: {r.get(key)}" for n, r in zip(names, runs, strict=True))
            problems.append(f"the reports are of {what} (run {key} differs: {seen})")
    digests = [(d.get("environment") or {}).get("digest", "the harness's") for d in documents]
    if len(set(digests)) > 1:
        seen = ", ".join(f"{n}: {d}" for n, d in zip(names, digests, strict=True))
        problems.append(f"the reports ran the rubrics in different environments ({seen})")
    sampled = [n for n, d in zip(names, documents, strict=True) if d.get("sampled") is True]
    single = [n for n in names if n not in sampled]
    if sampled and single:
        problems.append(
            "the reports mix a grading of samples and one of a candidate per case "
            f"(samples: {', '.join(sampled)}; one candidate a case: {', '.join(single)})"
        )
    sandbox = least_contained(document.get("sandbox", "bwrap") for document in documents)
    owners: dict[str, list[str]] = {}
    results = []
    for name, document in zip(names, documents, strict=True):
        for result in document["results"]:
            owners.setdefault(result["case"], []).append(name)
            results.append(GradeResult.model_validate(result, strict=False))
    problems += _twice("case", owners)
    every = {case for document in documents for case in document.get("cases", [])}
    problems += [
        f"case {case!r} is missing: no shard graded it" for case in sorted(every - set(owners))
    ]
    results.sort(key=lambda result: result.case)
    first = documents[0]
    report = GradeReport(
        task_class=first["task_class"],
        results=tuple(results),
        sandbox=sandbox,
        reused=sum(document.get("reused", 0) for document in documents),
        sampled=bool(first.get("sampled")),
        pass_at=_ks(documents),
        fail_under=first.get("fail_under"),
        run=_merged_run(runs, sandbox),
        environment=_environment(first.get("environment")),
    )
    manifest = documents[0].get("manifest")
    merged = GradeDocument(
        report=report,
        manifest=_path(manifest) if manifest else None,
        case_files={
            case: _path(file)
            for document in documents
            for case, file in document.get("case_files", {}).items()
        },
        cases=tuple(sorted(every)),
        proof=Proof(documents[0].get("bench_digest"), (1, 1)),
        merged=len(documents),
    )
    return merged, problems


def _environment(value: object) -> EnvironmentInfo | None:
    """Return a report's ``environment`` (checked by :func:`_refuse_malformed`)."""
    from codegenie.eval.grading import EnvironmentInfo  # noqa: PLC0415 - pydantic: only grade reports pay for it

    return None if value is None else EnvironmentInfo.model_validate(value, strict=False)


def _refuse_malformed(names: Sequence[str], documents: Sequence[Mapping[str, Any]]) -> None:
    """Raise ``MergeRefused`` naming each report whose task class, run or results are malformed.

    What the merge reads of a report is checked before it is read: a
    hand-edited or truncated report is refused with its file named, never
    half-read.
    """
    from pydantic import ValidationError  # noqa: PLC0415 - pydantic: only grade reports pay for it

    from codegenie.eval.grading import EnvironmentInfo, GradeResult, RunInfo  # noqa: PLC0415 - pydantic: only grade reports pay for it

    problems = []
    for name, document in zip(names, documents, strict=True):
        if not isinstance(document["task_class"], str):
            problems.append(f"{name}: task_class is not a task class's slug")
        run = document.get("run")
        try:
            if run is not None:
                RunInfo.model_validate(run, strict=False)
        except ValidationError as invalid:
            problems.append(f"{name}: run is not a run identity: {_first(invalid)}")
        environment = document.get("environment")
        try:
            if environment is not None:
                EnvironmentInfo.model_validate(environment, strict=False)
        except ValidationError as invalid:
            problems.append(f"{name}: environment is not an environment: {_first(invalid)}")
        results = document["results"]
        if not isinstance(results, list):
            problems.append(f"{name}: results is not an array")
            continue
        for index, result in enumerate(results):
            try:
                GradeResult.model_validate(result, strict=False)
            except ValidationError as invalid:
                problems.append(
                    f"{name}: results[{index}] is not a grade result: {_first(invalid)}"
                )
    if problems:
        raise MergeRefused(problems)


def _first(invalid: ValidationError) -> str:
    """Return the first error of a pydantic ``ValidationError``: where, and what is wrong."""
    error = invalid.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else str(error["msg"])


def _ks(documents: Sequence[Mapping[str, Any]]) -> tuple[int, ...] | None:
    """Return the k every shard reported pass@k for; ``None`` (the default k) when none did."""
    reported = [d["pass_at_k"] for d in documents if isinstance(d.get("pass_at_k"), Mapping)]
    if not reported:
        return None
    common = set.intersection(
        *({k for k in r if isinstance(k, str) and k.isdigit()} for r in reported)
    )
    return tuple(sorted(int(k) for k in common)) or None


def _merged_run(runs: Sequence[Mapping[str, Any]], sandbox: ProviderName) -> RunInfo | None:
    """Return the identity of the shards' run: the first start, the last finish, one name."""
    from codegenie.eval.grading import RunInfo  # noqa: PLC0415 - pydantic: only grade reports pay for it

    if not any(runs):
        return None
    started = [run["started_at"] for run in runs if run.get("started_at")]
    finished = [run["finished_at"] for run in runs if run.get("finished_at")]
    first = runs[0]
    return RunInfo.model_validate(
        {
            **first,
            "started_at": min(started, default=None),
            "finished_at": max(finished, default=None),
            "sandbox": sandbox,
        },
        strict=False,
    )


def merge_reports(
    names: Sequence[str], documents: Sequence[Mapping[str, Any]]
) -> CheckDocument | GradeDocument:
    """Return the reports' merge; raise ``MergeRefused`` if they do not add up.

    ``names`` name the reports in the problems (their paths). A report that
    is not as its command writes it (a key missing, a value of another
    type) is refused too, never half-read.
    """
    kinds = [kind_of(document) for document in documents]
    unknown = [name for name, kind in zip(names, kinds, strict=True) if kind is None]
    if unknown:
        raise MergeRefused([f"{name} is not a JSON report of check or grade" for name in unknown])
    if len(set(kinds)) > 1:
        raise MergeRefused(["the reports mix check and grade"])
    kind = kinds[0]
    assert kind is not None
    merged: CheckDocument | GradeDocument
    try:
        problems = _shards(names, documents)
        if kind == "check":
            merged, more = _merge_check(names, documents)
        else:
            merged, more = _merge_grade(names, documents)
    except (KeyError, TypeError, ValueError, AttributeError) as malformed:
        # A hand-edited report: a key missing or of another type than the command wrote.
        first = (str(malformed).splitlines() or [""])[0]
        detail = f"{type(malformed).__name__}: {first}"
        raise MergeRefused(
            [
                f"{', '.join(names)}: a report is not as {kind} --format json writes it "
                f"({detail}); merge the reports the shards wrote, unedited"
            ]
        ) from None
    problems += more
    if problems:
        raise MergeRefused(problems)
    return merged
