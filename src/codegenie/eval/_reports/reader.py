"""The one reader of report documents: a ``check`` or ``grade`` ``--format json`` report, typed.

``merge`` and ``compare`` read the reports they are given here, and nowhere
else; every renderer then renders what this returns (through
:mod:`.documents`), never the JSON it came from. :func:`read_report` reads a
file, :func:`report_of` a text, and either returns a frozen typed report,
:class:`GradeFile` (its :class:`~codegenie.eval.grading.GradeReport`, and
what proves which bench and shard it is of) or :class:`CheckFile`, or
raises ``ReportsInvalid`` whose ``located`` problems each name the file,
the JSON path and what is wrong.

What is refused, in this order (each stage only when the one before passed):

1. the file: not a regular file, over :data:`REPORT_LIMIT` bytes, not
   UTF-8;
2. the JSON (:func:`codegenie.eval._json.load_bounded` with
   :data:`REPORT_BOUNDS`): not JSON, a number that is not finite (``NaN``,
   ``Infinity``, ``-Infinity``, ``1e309``), nesting deeper than a report
   goes (objects and arrays alike), an object with too many keys or a key
   twice, too many values;
3. the shape: not an object, neither report, a key of the wrong type or
   out of its range (a score outside 0..1, a negative time, a sample
   ``missing``), a result or sample with a key no report has (keys this
   version does not know at the top level are passed over: a later
   version's report still reads). The keys and their types are the
   writer's own models' fields (:class:`~codegenie.eval.grading.GradeReport`,
   ``GradeResult``, ``SampleResult``, :class:`~codegenie.eval.diagnostics.Diagnostic`),
   from which the documents read here are derived: this module adds only
   the ranges, the figures and what a shard carries, so a field added to a
   model is read, checked and carried through without an edit here;
4. the figures: everything a report derives from its results is computed
   again from them (each sampled case's status, score, reason, times and
   sample counts from its samples; ``passed``, ``total``, ``counts``,
   ``ok``, ``mean_score``, ``sampled`` and every ``pass_at_k`` from the
   results; a check's ``errors``, ``warnings`` and ``ok`` from its
   diagnostics), and a report that says otherwise contradicts itself and is
   refused. A figure the report leaves out (a report written before it
   existed) is computed, not required.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Annotated, Any, Final, Literal, TypeVar, final, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator

from codegenie.eval._json import Bounds, JsonRefused, json_path, load_bounded
from codegenie.eval._paths import FileRefused, read_regular_file
from codegenie.eval._sandbox.choices import least_contained
from codegenie.eval.diagnostics import Diagnostic, DiagnosticCounts
from codegenie.eval.errors import ReportProblem, ReportsInvalid
from codegenie.eval.grading import (
    GradeReport,
    GradeResult,
    GradeStatus,
    SampleResult,
)

__all__ = (
    "REPORT_BOUNDS",
    "REPORT_LIMIT",
    "CheckFile",
    "GradeFile",
    "ReportFile",
    "read_report",
    "report_of",
)

#: The largest report read: a report of 100,000 task classes stays well under it.
REPORT_LIMIT: Final = 512 * 1024 * 1024
#: How deep a report nests (a sample's verdict is six levels down and keeps 64 of its own),
#: how many keys one object has (``case_files``: one per case), how many values in all.
REPORT_BOUNDS: Final = Bounds(depth=100, keys=1_000_000, values=50_000_000)
# The most problems named for one report: the rest are counted.
_PROBLEMS_SHOWN: Final = 5
# What a report that contradicts itself is told to do.
_UNEDITED: Final = "give the report the command wrote, unedited"


# -- the documents as written -------------------------------------------------------------


class _Closed(BaseModel):
    """A part of a report whose keys are all known: strict JSON types, no other key."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)


class _Open(BaseModel):
    """A report's top level: strict JSON types; a key a later version added is passed over."""

    model_config = ConfigDict(frozen=True, extra="ignore", strict=True, allow_inf_nan=False)


# What the reader adds to the writer's fields: the ranges a report's values keep. Each field
# itself (its name, type and default) is the writer's own (:mod:`codegenie.eval.grading`): a
# field added there is read, checked and carried through here without a line of this module.
_AT_LEAST_0: Final = Field(ge=0)
_RANGES: Final[Mapping[str, Any]] = {
    "case": Field(min_length=1),
    "score": Field(ge=0, le=1),
    "duration_s": _AT_LEAST_0,
    "wall_s": _AT_LEAST_0,
    "cpu_s": _AT_LEAST_0,
    "peak_memory_mib": _AT_LEAST_0,
}


def _written(model: type[Any]) -> dict[str, tuple[Any, Any]]:
    """Return each field of ``model`` (a pydantic model or a dataclass): its type and default."""
    if isinstance(model, type) and issubclass(model, BaseModel):
        return {
            name: (info.annotation, ... if info.is_required() else info.get_default())
            for name, info in model.model_fields.items()
        }
    hints = get_type_hints(model)
    return {
        field.name: (hints[field.name], ... if field.default is MISSING else field.default)
        for field in fields(model)
    }


def _document(
    model: type[Any],
    *,
    base: type[BaseModel] = _Closed,
    ranges: Mapping[str, Any] = _RANGES,
    replaced: Mapping[str, tuple[Any, Any] | None] | None = None,
    added: Mapping[str, tuple[Any, Any]] | None = None,
) -> type[BaseModel]:
    """Return the model of ``model`` as a report writes it: its fields, each in its range.

    ``replaced`` gives a field another type (a nested part's own document,
    a figure the report may leave out) or, as ``None``, drops it (a field
    the writer does not write); ``added`` are keys the document holds beside
    the model's fields (figures computed from them, which are checked).
    """
    replaced = replaced or {}
    document: dict[str, Any] = {}
    for name, (annotation, default) in _written(model).items():
        if name in replaced:
            if replaced[name] is not None:
                document[name] = replaced[name]
            continue
        ranged = Annotated[annotation, ranges[name]] if name in ranges else annotation
        document[name] = (ranged, default)
    document.update(added or {})
    return create_model(f"_{model.__name__}Document", __base__=base, **document)


# A result's sample counts are figures computed from its samples: a report may leave them out.
_COUNTED: Final = {
    "samples_total": (int | None, Field(None, ge=0)),
    "samples_passed": (int | None, Field(None, ge=0)),
}
_SampleDoc: Final = _document(SampleResult)
_ResultDoc: Final = _document(
    GradeResult,
    replaced={"samples": (tuple[_SampleDoc, ...] | None, None)},  # type: ignore[valid-type]
    added=_COUNTED,
)
# The fields of a result that are the report's own, not figures computed from them.
_RESULT_FIELDS: Final = frozenset(GradeResult.model_fields) - {"samples"}
_SAMPLE_FIELDS: Final = frozenset(SampleResult.model_fields)


class _ShardDoc(_Closed):
    index: int = Field(ge=1)
    count: int = Field(ge=1)

    @model_validator(mode="after")
    def _within(self) -> _ShardDoc:
        if self.index > self.count:
            msg = f"shard {self.index}/{self.count}: the index is above the count"
            raise ValueError(msg)
        return self


class _Proved(_Open):
    bench_digest: str | None = None
    shard: _ShardDoc | None = None
    merged: int | None = Field(None, ge=1)


# A grade report: the report's fields (those it writes), its figures, and what a shard carries.
_GradeDoc: Final = _document(
    GradeReport,
    base=_Proved,
    ranges={
        **_RANGES,
        "task_class": Field(min_length=1),
        "reused": _AT_LEAST_0,
        "fail_under": Field(ge=0, le=1),
    },
    replaced={
        "results": (tuple[_ResultDoc, ...], ...),  # type: ignore[valid-type]
        # A provider this version does not know reads as the least contained.
        "sandbox": (str, "bwrap"),
        "sampled": (bool | None, None),  # a figure: computed when left out
        "pass_at": None,  # written as pass_at_k's keys
        "stopped": None,  # not written
    },
    added={
        "passed": (int | None, None),
        "total": (int | None, None),
        "counts": (dict[GradeStatus, int] | None, None),
        "ok": (bool | None, None),
        "mean_score": (float | None, None),
        "pass_at_k": (dict[str, float | None] | None, None),
        "manifest": (str | None, None),
        "case_files": (dict[str, str], Field(default_factory=dict)),
        "cases": (tuple[str, ...] | None, None),
    },
)
# The fields of a report that are carried from the document as they are.
_REPORT_FIELDS: Final = frozenset(GradeReport.model_fields) - {
    "results",
    "sandbox",
    "sampled",
    "pass_at",
    "stopped",
}


_DiagnosticDoc: Final = _document(Diagnostic, ranges={"line": Field(ge=1), "column": Field(ge=1)})


class _CheckDoc(_Proved):
    ok: bool
    manifest: str
    checked: int = Field(ge=0)
    declared: int | None = Field(None, ge=0)
    errors: int | None = None
    warnings: int | None = None
    diagnostics: tuple[_DiagnosticDoc, ...]  # type: ignore[valid-type]
    strict: bool = False
    task_classes: tuple[str, ...] = ()


# -- what the reader returns ----------------------------------------------------------------


@final
@dataclass(frozen=True, slots=True)
class GradeFile:
    """A ``grade`` report as read: the typed report, and what proves which bench and shard.

    ``name`` names the file in problems; ``report`` holds every result with
    the figures computed from them; ``ks`` are the k of the report's own
    ``pass_at_k`` (``None``: it has none); ``manifest``, ``case_files``
    (case id to its ``case.toml``) and ``cases`` (every case id of the task
    class) are what a shard carries for ``merge`` (``cases`` ``None``: the
    report has none); ``shard`` is ``(index, count)``, ``None`` for a
    report that carries none; ``merged``: how many reports were merged
    into this one.
    """

    kind: Literal["grade"]
    name: str
    report: GradeReport
    ks: tuple[int, ...] | None
    manifest: str | None
    case_files: Mapping[str, str]
    cases: tuple[str, ...] | None
    bench_digest: str | None
    shard: tuple[int, int] | None
    merged: int | None


@final
@dataclass(frozen=True, slots=True)
class CheckFile(DiagnosticCounts):
    """A ``check`` report as read: its diagnostics typed, its counts and verdict computed from them.

    ``errors`` and ``warnings`` count the diagnostics; ``ok`` is the
    report's verdict, which they agree with. ``shard`` and ``merged`` as
    for :class:`GradeFile`.
    """

    kind: Literal["check"]
    name: str
    ok: bool
    manifest: str
    checked: int
    declared: int
    diagnostics: tuple[Diagnostic, ...]
    strict: bool
    task_classes: tuple[str, ...]
    bench_digest: str | None
    shard: tuple[int, int] | None
    merged: int | None


#: Either report, as read.
ReportFile = GradeFile | CheckFile


# -- reading ---------------------------------------------------------------------------------


def read_report(path: Path, *, name: str | None = None, grade_only: bool = False) -> ReportFile:
    """Return the report in the file at ``path``, typed; raise ``ReportsInvalid`` if it is not one.

    ``name`` names the file in problems (default: ``path`` as given). Only a
    regular file of at most :data:`REPORT_LIMIT` bytes is read (a FIFO
    never blocks), as UTF-8; then as :func:`report_of` reads its text.
    """
    shown = str(path) if name is None else name
    try:
        data, _ = read_regular_file(str(path), REPORT_LIMIT)
    except FileRefused as refused:
        raise _invalid(shown, f"cannot read {shown}: the file {refused.reason}") from None
    except OSError as error:
        raise _invalid(shown, f"cannot read {shown}: {error.strerror or error}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        message = f"{shown} is not UTF-8 text (byte {error.start} is not UTF-8)"
        raise _invalid(shown, message) from None
    return report_of(shown, text, grade_only=grade_only)


def report_of(name: str, text: str, *, grade_only: bool = False) -> ReportFile:
    """Return the report ``text`` holds (a ``check`` or ``grade`` JSON report), typed.

    Raises ``ReportsInvalid`` naming ``name``, a JSON path and what is
    wrong (at most a few problems of one report, and how many more), for
    every refusal of the module's list. ``grade_only``: a ``check`` report
    is refused too (``compare`` compares grade runs).
    """
    wanted = "grade" if grade_only else "check or grade"
    try:
        value = load_bounded(text, REPORT_BOUNDS)
    except JsonRefused as refused:
        if refused.pointer is not None:
            raise _refused(name, [(refused.pointer, refused.message)]) from None
        if refused.message.startswith("not JSON"):
            raise _invalid(name, f"{name} is {refused.message}") from None
        raise _invalid(name, f"{name} is not a report this reads: {refused.message}") from None
    if not isinstance(value, dict):
        kind = "an array" if isinstance(value, list) else "a single value"
        raise _invalid(
            name, f"{name} is not a JSON report of {wanted}: it holds {kind}, not an object"
        )
    grade = "task_class" in value and "results" in value
    check = "diagnostics" in value and "checked" in value
    del value  # the typed models are made from the text: the parsed value is not kept meanwhile
    if grade:
        return _grade(name, text)
    if check:
        if grade_only:
            message = f"{name} is a report of check, not of grade: compare compares grade runs"
            raise _invalid(name, message)
        return _check(name, text)
    keys = (
        "task_class and results"
        if grade_only
        else ("task_class and results, nor diagnostics and checked")
    )
    raise _invalid(name, f"{name} is not a JSON report of {wanted}: it has no {keys}")


def _invalid(name: str, sentence: str) -> ReportsInvalid:
    """Return the error of a problem with the file as a whole (``sentence`` names it)."""
    return ReportsInvalid((sentence,), (ReportProblem(name, None, sentence),))


def _refused(name: str, found: Sequence[tuple[str, str]]) -> ReportsInvalid:
    """Return the error of one report's problems (JSON path, message): the first few, a count."""
    located = [ReportProblem(name, where, message) for where, message in found[:_PROBLEMS_SHOWN]]
    if len(found) > _PROBLEMS_SHOWN:
        located.append(ReportProblem(name, None, f"{len(found) - _PROBLEMS_SHOWN} more problems"))
    return ReportsInvalid(tuple(p.render() for p in located), tuple(located))


_M = TypeVar("_M", bound=BaseModel)


def _validated(model: type[_M], name: str, text: str) -> _M:
    try:
        return model.model_validate_json(text)
    except ValidationError as invalid:
        found = [
            (json_path(tuple(error["loc"])), _said(error["msg"], error.get("input")))
            for error in invalid.errors(include_url=False)
        ]
        raise _refused(name, found) from None


def _said(message: str, given: object) -> str:
    if isinstance(given, dict | list) or given is None:
        return message
    shown = repr(given)
    return f"{message}, not {shown if len(shown) <= 60 else shown[:57] + '...'}"


def _shard(doc: _ShardDoc | None) -> tuple[int, int] | None:
    return None if doc is None else (doc.index, doc.count)


def _check(name: str, text: str) -> CheckFile:
    doc = _validated(_CheckDoc, name, text)
    read = CheckFile(
        kind="check",
        name=name,
        ok=doc.ok,
        manifest=doc.manifest,
        checked=doc.checked,
        declared=doc.checked if doc.declared is None else doc.declared,
        diagnostics=tuple(Diagnostic(**dict(d)) for d in doc.diagnostics),
        strict=doc.strict,
        task_classes=doc.task_classes,
        bench_digest=doc.bench_digest,
        shard=_shard(doc.shard),
        merged=doc.merged,
    )
    found = []
    for key, computed in (("errors", read.errors), ("warnings", read.warnings)):
        said = getattr(doc, key)
        if said is not None and said != computed:
            found.append((key, _contradicts(said, f"its diagnostics hold {computed}")))
    verdict = read.errors == 0 and (not read.strict or read.warnings == 0)
    if read.ok and not verdict:
        found.append(
            ("ok", _contradicts(True, "its diagnostics hold errors (or, strict, warnings)"))
        )
    if found:
        raise _refused(name, found)
    return read


def _contradicts(said: object, computed: str) -> str:
    return f"says {_json(said)}, but {computed}: the report contradicts itself; {_UNEDITED}"


def _json(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, str) else str(value)


def _ks(
    given: Mapping[str, float | None] | None,
) -> tuple[tuple[int, ...] | None, list[tuple[str, str]]]:
    """Return the k of a report's ``pass_at_k`` (``None``: it has none), and each key not a k."""
    if given is None:
        return None, []
    ks, found = [], []
    for key in given:
        if (
            key.isascii()
            and key.isdigit()
            and len(key) <= 9
            and int(key) >= 1
            and key == str(int(key))
        ):
            ks.append(int(key))
        else:
            found.append(
                (json_path(("pass_at_k", key)), "the key is not a k, a whole number of 1 or more")
            )
    return tuple(sorted(ks)), found


def _grade(name: str, text: str) -> GradeFile:
    doc = _validated(_GradeDoc, name, text)
    given: dict[str, Any] = doc.__dict__
    ks, found = _ks(given["pass_at_k"])
    results = []
    seen: set[str] = set()
    for at, part in enumerate(given["results"]):
        result, problems = _result(part.__dict__)
        results.append(result)
        found += [(json_path(("results", at, *where)), said) for where, said in problems]
        if result.case in seen:
            found.append(
                (json_path(("results", at, "case")), f"{result.case!r} has a result already")
            )
        seen.add(result.case)
    has_samples = {result.samples is not None for result in results}
    sampled = given["sampled"] if given["sampled"] is not None else has_samples == {True}
    if len(has_samples) > 1:
        found.append(
            ("results", f"mixes cases graded from samples and from one candidate each; {_UNEDITED}")
        )
    elif results and has_samples != {sampled}:
        computed = "every result has samples" if sampled is False else "no result has samples"
        found.append(("sampled", _contradicts(sampled, computed)))
    report = GradeReport(
        results=tuple(results),
        sandbox=least_contained([given["sandbox"]]),
        sampled=sampled,
        pass_at=ks or None,
        **{key: given[key] for key in _REPORT_FIELDS},
    )
    found += _figures(given, doc.model_fields_set, report)
    if found:
        raise _refused(name, found)
    return GradeFile(
        kind="grade",
        name=name,
        report=report,
        ks=ks,
        manifest=given["manifest"],
        case_files=dict(given["case_files"]),
        cases=given["cases"],
        bench_digest=given["bench_digest"],
        shard=_shard(given["shard"]),
        merged=given["merged"],
    )


# What a case of samples sums up from them (GradeResult.of_samples): all but its id, tags, node.
_SUMMED: Final = tuple(
    name for name in GradeResult.model_fields if name not in {"case", "tags", "samples", "node"}
)


def _result(
    given: Mapping[str, Any],
) -> tuple[GradeResult, list[tuple[tuple[str | int, ...], str]]]:
    """Return one result typed, and each figure of it its samples contradict (path, message)."""
    found: list[tuple[tuple[str | int, ...], str]] = []
    samples = None
    if given["samples"] is not None:
        seen: set[str] = set()
        samples = tuple(
            SampleResult(**{key: part.__dict__[key] for key in _SAMPLE_FIELDS})
            for part in given["samples"]
        )
        for at, sample in enumerate(samples):
            if sample.sample in seen:
                said = f"{sample.sample!r} is the id of an earlier sample too"
                found.append((("samples", at, "sample"), said))
            seen.add(sample.sample)
    result = GradeResult(samples=samples, **{key: given[key] for key in _RESULT_FIELDS})
    if samples is not None:
        computed = GradeResult.of_samples(result.case, samples, tags=result.tags)
        for key in _SUMMED:
            value, derived = getattr(result, key), getattr(computed, key)
            if not _same(value, derived):
                said = _contradicts(value, f"its samples give {_json(derived)}")
                found.append(((key,), said))
    for key, computed_count in (
        ("samples_total", result.samples_total),
        ("samples_passed", result.samples_passed),
    ):
        said_count = given[key]
        if said_count is not None and said_count != computed_count:
            what = "samples" if samples is not None else "status"
            found.append(
                (
                    (key,),
                    _contradicts(
                        said_count,
                        f"its {what} {'give' if samples is not None else 'gives'} {computed_count}",
                    ),
                )
            )
    return result, found


def _same(said: object, computed: object) -> bool:
    """Whether two figures agree: floats up to their last bits, anything else exactly."""
    if isinstance(said, float) and isinstance(computed, float):
        return math.isclose(said, computed, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(said, tuple | list) and isinstance(computed, tuple | list):
        return len(said) == len(computed) and all(map(_same, said, computed))
    return said == computed


def _figures(doc: Mapping[str, Any], given: set[str], report: GradeReport) -> list[tuple[str, str]]:
    """Each figure of the document (its keys ``given``) that its results do not give."""
    found = []
    figures: dict[str, object] = {
        "passed": report.passed,
        "total": report.total,
        "ok": report.ok,
        "mean_score": report.mean_score,
    }
    for key, computed in figures.items():
        if key in given and not _same(doc[key], computed):
            found.append((key, _contradicts(doc[key], f"its results give {_json(computed)}")))
    if doc["counts"] is not None:
        for status, computed_count in report.counts().items():
            said = doc["counts"].get(status)
            if said != computed_count:
                where = json_path(("counts", status))
                found.append((where, _contradicts(said, f"its results give {computed_count}")))
    if doc["pass_at_k"] is not None:
        computed_rates = report.pass_at_k()
        for key, said_rate in doc["pass_at_k"].items():
            if key not in computed_rates:  # not a k: said already
                continue
            rate = computed_rates[key]
            if not _same(said_rate, rate):
                where = json_path(("pass_at_k", key))
                found.append((where, _contradicts(said_rate, f"its results give {_json(rate)}")))
    return found
