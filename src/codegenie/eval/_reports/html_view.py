"""What the ``html`` page shows of a report, read from the typed report itself.

:func:`view_of` turns a typed report (a
:class:`~codegenie.eval._reports.documents.CheckDocument`,
:class:`~codegenie.eval._reports.documents.GradeDocument`,
:class:`~codegenie.eval._reports.documents.GradeSuiteDocument` or
:class:`~codegenie.eval._reports.documents.CompareDocument`: the documents
every format renders, ``merge`` and ``compare`` having read what a user gives
them through the one reader of reports, :mod:`.reader`) into a
:class:`View`: the summary (sections of label and value, small tables such
as pass@k), the charts, and the table of cases the page's script builds (its
columns, filters and rows, as JSON data). Nothing here writes HTML:
:mod:`.html` escapes and lays out what this module returns, and the script
shows the rows' strings as text only.

Every value is read by its attribute, typed: a field the writer adds to a
report reaches the page through the same model, and nothing here guesses at
a value's type or meets a number that is not finite. Each string is shown
as it is, made readable (a lone surrogate, from a path the locale could not
decode, is decoded or escaped: :func:`codegenie.eval._output.readable`), up
to bounds. Those bounds keep a page of thousands of runs small: each long
text (a reason, a stderr tail, a traceback, a verdict) is cut at its own
length, and beyond a short part each always keeps, all of them share one
budget of :data:`EMBED_BUDGET` characters; what is cut says how much, and
that ``--format json`` has it whole.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final, Literal

from codegenie.eval._output import readable, readable_data
from codegenie.eval._reports.documents import (
    CHANGES,
    CheckDocument,
    CompareDocument,
    GradeDocument,
    GradeSuiteDocument,
    McNemar,
)

if TYPE_CHECKING:
    from codegenie.eval._reports.documents import Bootstrap, Outcome, Proof, Side
    from codegenie.eval.check.cheat import CheatSummary
    from codegenie.eval.check.golden import Envelope
    from codegenie.eval.diagnostics import Diagnostic
    from codegenie.eval.grading import GradeResult, GradeStatus, RunInfo, SampleResult

__all__ = (
    "EMBED_BUDGET",
    "STATUS_CLASSES",
    "Bars",
    "Histogram",
    "Section",
    "SmallTable",
    "View",
    "ViewKind",
    "view_of",
)

#: The kinds of page: a ``grade --all`` report's is a ``grade`` page of every task class's cases.
ViewKind = Literal["check", "grade", "compare"]

#: The status words the page colours; any other value is shown, uncoloured, as ``other``.
STATUS_CLASSES: Final = frozenset(
    {
        "passed",
        "failed",
        "missing",
        "error",
        "warning",
        "regressed",
        "improved",
        "unchanged",
        "new",
        "gone",
    }
)

#: The characters of long texts a page embeds beyond what each text always keeps.
EMBED_BUDGET: Final = 256 * 1024

_GRADE_STATUSES: Final[tuple[GradeStatus, ...]] = ("passed", "failed", "missing", "error")
_SEVERITIES: Final = ("error", "warning")
# The most codes the chart of a check report's codes shows (the most frequent ones).
_CHART_CODES: Final = 12


@dataclass(frozen=True, slots=True)
class Section:
    """A block of the summary: a heading, then label and value pairs (values already text)."""

    title: str
    items: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class SmallTable:
    """A small table of the summary (pass@k): a heading, its column names and rows of text."""

    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True, slots=True)
class Bars:
    """A bar chart: one bar per (label, count, status class); the class colours it."""

    title: str
    bars: tuple[tuple[str, int, str], ...]


@dataclass(frozen=True, slots=True)
class Histogram:
    """The distribution of ``values`` (seconds, say), in bins."""

    title: str
    values: tuple[float, ...]
    unit: str


@dataclass(frozen=True, slots=True)
class View:
    """What the page shows of one document.

    ``verdict`` is the headline's word and whether it is good news; ``table``
    is the JSON data of the table of cases: ``columns`` (label, type, digits),
    ``status_column`` (the column whose value colours a row), ``facets`` (the
    filters: key, label, options), ``rows`` (``cells``, one value per column;
    ``facets``, key to the row's values; ``detail``, what its expandable row
    shows: ``fields``, ``blocks`` of text, and ``samples``, rows of
    ``sample_columns`` cells with their own ``blocks``; or ``None``), and
    ``noun``, what a row is.
    """

    kind: ViewKind
    title: str
    verdict: tuple[str, bool]
    sections: tuple[Section, ...]
    tables: tuple[SmallTable, ...]
    charts: tuple[Bars | Histogram, ...]
    table: dict[str, Any] = field(default_factory=dict)


def view_of(document: CheckDocument | GradeDocument | GradeSuiteDocument | CompareDocument) -> View:
    """Return the view of ``document``, a typed report (``grade --all``'s: one ``grade`` page)."""
    budget = _Budget(EMBED_BUDGET)
    if isinstance(document, CheckDocument):
        return _check_view(document, budget)
    if isinstance(document, GradeDocument):
        return _grade_view(_GradePage.of(document), budget)
    if isinstance(document, GradeSuiteDocument):
        return _grade_view(_GradePage.of_suite(document), budget)
    return _compare_view(document, budget)


# -- showing a value --------------------------------------------------------------------------


def _text(value: str | None) -> str | None:
    """Return ``value`` made readable (see :func:`~codegenie.eval._output.readable`)."""
    return None if value is None else readable(value)


def _num(value: float | None, digits: int) -> float | None:
    """Return a number rounded to ``digits`` decimals (a page needs no 17), else ``None``."""
    return None if value is None else round(float(value), digits)


def _status(value: str) -> str:
    """Return the class a status colours with: one of :data:`STATUS_CLASSES`, else ``other``."""
    return value if value in STATUS_CLASSES else "other"


def _shown(value: object) -> str:
    """Return a summary value as text: ``-`` when absent, yes/no, numbers plainly."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{float(value) * 100:.1f}%"


def _ordered(present: Iterable[str], known: Sequence[str]) -> list[str]:
    """Return the values ``present``: those of ``known`` first, in its order, then the rest."""
    seen = set(present)
    return [v for v in known if v in seen] + sorted(seen.difference(known))


# -- bounding what a page embeds -------------------------------------------------------------


class _Budget:
    """The characters of long texts a page still embeds beyond what each text always keeps."""

    def __init__(self, left: int) -> None:
        self.left = left

    def text(self, value: str | None, cap: int, keep: int, *, tail: bool = False) -> str | None:
        """Return ``value`` readable, whole or cut: to ``cap``, and beyond ``keep`` to the budget.

        ``tail`` keeps the end (of a stderr tail, of a traceback) rather than
        the start. ``None`` for ``None``.
        """
        if value is None:
            return None
        value = readable(value)
        size = min(len(value), cap)
        extra = max(size - keep, 0)
        if extra > self.left:
            size -= extra - self.left
            extra = self.left
        self.left -= extra
        if size >= len(value):
            return value
        cut = len(value) - size
        note = f"{cut:,} more characters; --format json has them all"
        if tail:
            return f"[… {note}]\n{value[len(value) - size :]}"
        return f"{value[:size]} [… {note}]"


# Each long text: how much of it a page keeps at most, and how much it always keeps.
_REASON: Final = (2_000, 200)
_SAMPLE_REASON: Final = (2_000, 120)
_LOG: Final = (4_000, 300)
_SAMPLE_LOG: Final = (4_000, 0)
_VERDICT: Final = (4_000, 0)
_PROTOCOL_KEYS: Final = frozenset({"passed", "score", "reason"})


def _verdict_text(verdict: Mapping[str, Any] | None, budget: _Budget) -> str | None:
    """Return the rubric's own keys of its verdict (``tests_run``…) as JSON; ``None``: it has none.

    ``passed``, ``score`` and ``reason`` are the row's status, score and reason already.
    """
    if verdict is None:
        return None
    shown = readable_data(verdict)
    assert isinstance(shown, dict)
    own = {key: value for key, value in shown.items() if key not in _PROTOCOL_KEYS}
    if not own:
        return None
    return budget.text(json.dumps(own, ensure_ascii=False, default=str), *_VERDICT)


def _blocks(*pairs: tuple[str, str | None]) -> list[list[str]]:
    return [[label, text] for label, text in pairs if text]


def _fields(*pairs: tuple[str, object]) -> list[list[str]]:
    return [[label, _shown(value)] for label, value in pairs if value is not None]


def _detail(
    fields: list[list[str]], blocks: list[list[str]], samples: list[dict[str, Any]] | None = None
) -> dict[str, Any] | None:
    if not fields and not blocks and samples is None:
        return None
    return {"fields": fields, "blocks": blocks, "samples": samples}


def _facet(key: str, label: str, options: list[str]) -> dict[str, Any]:
    return {"key": key, "label": label, "options": options}


def _column(
    label: str, type_: str = "text", digits: int = 0, *, wide: bool = False, key: bool = False
) -> dict[str, Any]:
    """Return a column of the table: its label, its type, and how it is shown.

    ``type_``: ``text``, ``status`` (coloured), ``number`` (``digits``
    decimals), ``ratio`` (``[passed, total]``) or ``list``; ``wide`` text
    wraps, a ``key`` (a case id) does not.
    """
    column: dict[str, Any] = {"label": label, "type": type_}
    if type_ == "number":
        column["digits"] = digits
    if wide:
        column["wide"] = True
    if key:
        column["key"] = True
    return column


def _run_section(title: str, run: RunInfo | None) -> Section | None:
    """Return the ``run`` identity block: who ran what, when, with which tool."""
    if run is None:
        return None
    values = (
        ("name", run.name),
        ("candidates digest", run.candidates_digest),
        ("started", run.started_at),
        ("finished", run.finished_at),
        ("tool version", run.tool_version),
        ("python", run.python),
        ("sandbox", run.sandbox),
    )
    return Section(title, tuple((label, _shown(_text(value))) for label, value in values))


def _by_k(pass_at_k: Mapping[str, float | None]) -> list[tuple[int, float | None]]:
    """Return a report's pass@k (keyed by k as text), by k."""
    return sorted(((int(k), rate) for k, rate in pass_at_k.items()), key=lambda pair: pair[0])


def _proof_items(proof: Proof | None) -> list[tuple[str, str]]:
    """Return the summary's ``shard`` and ``bench digest`` of a report that carries its proof."""
    if proof is None:
        return []
    items = []
    if proof.shard is not None:
        items.append(("shard", f"{proof.shard[0]}/{proof.shard[1]}"))
    if proof.bench_digest is not None:
        items.append(("bench digest", readable(proof.bench_digest)))
    return items


# -- grade ------------------------------------------------------------------------------------

_TIMES: Final = (("duration (s)", "duration_s"), ("wall (s)", "wall_s"), ("CPU (s)", "cpu_s"))


@dataclass(frozen=True, slots=True)
class _GradePage:
    """What a ``grade`` page shows: one report's, or every task class's of ``grade --all``.

    ``results`` pairs each result with the case id it is shown by. For
    ``grade --all``, the summary's figures are the whole run's; the values
    only a task class's report has (its sandbox, its mean score…) are the
    first task class's, and there is no pass@k.
    """

    task_class: str
    results: tuple[tuple[str, GradeResult], ...]
    passed: int
    total: int
    counts: Mapping[GradeStatus, int]
    ok: bool
    sampled: bool
    pass_at_k: Mapping[str, float | None]
    run: RunInfo | None
    mean_score: float | None = None
    fail_under: float | None = None
    sandbox: str | None = None
    reused: int | None = None
    merged: int | None = None
    proof: Proof | None = None
    #: Whether the rubric reads the cases' expected/ (``yes``, ``no``; ``grade --all``: the
    #: task classes whose rubric does, or ``none``).
    reads_expected: str | None = None

    @classmethod
    def of(cls, document: GradeDocument) -> _GradePage:
        """Return the page of one ``grade`` report (one run's, or merged)."""
        report = document.report
        return cls(
            task_class=report.task_class,
            results=tuple((result.case, result) for result in report.results),
            passed=report.passed,
            total=report.total,
            counts=report.counts(),
            ok=report.ok,
            sampled=report.sampled,
            pass_at_k=report.pass_at_k(),
            run=report.run,
            mean_score=report.mean_score,
            fail_under=report.fail_under,
            sandbox=report.sandbox,
            reused=report.reused,
            merged=document.merged,
            proof=document.proof,
            reads_expected=_shown(report.reads_expected),
        )

    @classmethod
    def of_suite(cls, suite: GradeSuiteDocument) -> _GradePage:
        """Return the page of ``grade --all``: each case shown as ``<slug>/<case-id>``."""
        results = tuple(
            (f"{document.report.task_class}/{result.case}", result)
            for document in suite.documents
            for result in document.report.results
        )
        page = cls(
            task_class=", ".join(document.report.task_class for document in suite.documents),
            results=results,
            passed=suite.passed,
            total=suite.total,
            counts={
                status: sum(result.status == status for _, result in results)
                for status in _GRADE_STATUSES
            },
            ok=suite.ok,
            sampled=False,
            pass_at_k={},
            run=suite.run,
            reads_expected=", ".join(
                readable(document.report.task_class)
                for document in suite.documents
                if document.report.reads_expected
            )
            or "none",
        )
        if not suite.documents:
            return page
        first = suite.documents[0]
        return replace(
            page,
            sampled=first.report.sampled,
            mean_score=first.report.mean_score,
            fail_under=first.report.fail_under,
            sandbox=first.report.sandbox,
            reused=first.report.reused,
            merged=first.merged,
            proof=first.proof,
        )


def _times(result: GradeResult | SampleResult) -> list[float | None]:
    return [_num(result.duration_s, 2), _num(result.wall_s, 2), _num(result.cpu_s, 2)]


def _grade_view(page: _GradePage, budget: _Budget) -> View:
    results = page.results
    sampled = page.sampled or any(result.samples is not None for _, result in results)
    statuses = [result.status for _, result in results]
    counts = Counter(statuses)
    for status in _GRADE_STATUSES:
        counts[status] = page.counts[status]

    columns = [
        _column("case", key=True),
        _column("status", "status"),
        _column("score", "number", 2),
    ]
    if sampled:
        columns.append(_column("samples passed", "ratio"))
    columns += [_column(label, "number", 2) for label, _ in _TIMES]
    columns += [
        _column("peak MiB", "number", 1),
        _column("tags", "list"),
        _column("reason", wide=True),
    ]
    # The node of each run, under an executor of several machines (none for a local run).
    nodes = sorted({node for _, result in results for node in _nodes(result) if node is not None})
    rows = [
        _grade_row(case, result, budget, sampled=sampled, nodes=bool(nodes))
        for case, result in results
    ]
    tags = sorted({readable(tag) for _, result in results for tag in result.tags})
    facets = [_facet("status", "status", _ordered(statuses, _GRADE_STATUSES))]
    if tags:
        facets.append(_facet("tag", "tag", tags))
    if nodes:
        facets.append(_facet("node", "node", nodes))

    summary = [
        ("passed", f"{page.passed}/{page.total}"),
        *((status, str(counts[status])) for status in _GRADE_STATUSES[1:]),
        ("mean score", _shown(None if page.mean_score is None else float(page.mean_score))),
        ("sampled", _shown(sampled)),
    ]
    if page.fail_under is not None:
        summary.append(("fail under (pass@1)", _percent(page.fail_under)))
    summary += [
        ("sandbox", _shown(_text(page.sandbox))),
        ("reused results", _shown(page.reused)),
        ("rubric reads expected/", _shown(page.reads_expected)),
    ]
    if page.merged is not None:
        summary.append(("merged reports", str(page.merged)))
    summary += _proof_items(page.proof)
    sections = [Section("summary", tuple(summary))]
    if (run := _run_section("run", page.run)) is not None:
        sections.append(run)
    tables = []
    if pass_at_k := _by_k(page.pass_at_k):
        tables.append(
            SmallTable(
                "pass@k", ("k", "pass@k"), tuple((str(k), _percent(v)) for k, v in pass_at_k)
            )
        )

    durations: list[float] = []
    for _, result in results:
        runs: Sequence[GradeResult | SampleResult] = (
            (result.samples or ()) if sampled else (result,)
        )
        durations += [float(run.duration_s) for run in runs if run.duration_s is not None]
    bars = tuple((status, counts[status], _status(status)) for status in _GRADE_STATUSES)
    charts: list[Bars | Histogram] = [
        Bars("cases by status", bars),
        Histogram(f"duration of each {'sample' if sampled else 'case'}", tuple(durations), "s"),
    ]
    return View(
        kind="grade",
        title=f"grade {readable(page.task_class)}",
        verdict=("passed" if page.ok else "failed", page.ok),
        sections=tuple(sections),
        tables=tuple(tables),
        charts=tuple(charts),
        table={
            "noun": "cases",
            "columns": columns,
            "status_column": 1,
            "facets": facets,
            "rows": rows,
            "sample_columns": [*_SAMPLE_COLUMNS, *((_column("node"),) if nodes else ())],
        },
    )


def _nodes(result: GradeResult) -> list[str | None]:
    """Return the nodes that made a result's runs: its own, and each of its samples'."""
    return [_text(result.node), *(_text(sample.node) for sample in result.samples or ())]


def _grade_row(
    case: str, result: GradeResult, budget: _Budget, *, sampled: bool, nodes: bool
) -> dict[str, Any]:
    tags = [readable(tag) for tag in result.tags]
    cells: list[Any] = [readable(case), result.status, _num(result.score, 4)]
    if sampled:
        cells.append([result.samples_passed, result.samples_total])
    cells += _times(result)
    cells += [
        _num(result.peak_memory_mib, 1),
        tags,
        budget.text(result.reason, *_REASON),
    ]
    detail = _detail(
        _fields(
            ("limit exceeded", _text(result.limit)),
            ("node", _text(result.node)),
            ("candidate digest", _text(result.candidate_digest)),
            ("reused", result.reused),
        ),
        _blocks(
            ("stderr tail", budget.text(result.stderr_tail, *_LOG, tail=True)),
            ("traceback", budget.text(result.traceback, *_LOG, tail=True)),
            ("verdict (own keys)", _verdict_text(result.verdict, budget)),
        ),
        None if result.samples is None else _samples(result.samples, budget, nodes=nodes),
    )
    facets: dict[str, list[str]] = {"status": [result.status], "tag": tags}
    if nodes:
        facets["node"] = sorted({node for node in _nodes(result) if node is not None})
    return {"cells": cells, "facets": facets, "detail": detail}


_SAMPLE_COLUMNS: Final = (
    _column("sample"),
    _column("status", "status"),
    _column("score", "number", 2),
    *(_column(label, "number", 2) for label, _ in _TIMES),
    _column("peak MiB", "number", 1),
    _column("limit"),
    _column("reason", wide=True),
)


def _samples(
    samples: Sequence[SampleResult], budget: _Budget, *, nodes: bool
) -> list[dict[str, Any]]:
    """Return a row per sample: cells in the order of :data:`_SAMPLE_COLUMNS`, and its logs.

    ``nodes``: a last cell, the node that made the sample's run (a run on a cluster).
    """
    rows = []
    for sample in samples:
        node = [_text(sample.node)] if nodes else []
        row: dict[str, Any] = {
            "cells": [
                readable(sample.sample),
                sample.status,
                _num(sample.score, 4),
                *_times(sample),
                _num(sample.peak_memory_mib, 1),
                _text(sample.limit),
                budget.text(sample.reason, *_SAMPLE_REASON),
                *node,
            ]
        }
        blocks = _blocks(
            ("stderr tail", budget.text(sample.stderr_tail, *_SAMPLE_LOG, tail=True)),
            ("traceback", budget.text(sample.traceback, *_SAMPLE_LOG, tail=True)),
            ("verdict (own keys)", _verdict_text(sample.verdict, budget)),
        )
        if blocks:
            row["blocks"] = blocks
        rows.append(row)
    return rows


# -- check ------------------------------------------------------------------------------------


def _where(diagnostic: Diagnostic) -> str | None:
    file = _text(diagnostic.file)
    if file is None:
        return None
    line, column = diagnostic.line, diagnostic.column
    if line is not None:
        file += f":{line}" + (f":{column}" if column is not None else "")
    return file


#: The most exploit runs the cheat run's table lists (the JSON report has every one).
_CHEAT_ROWS: Final = 2000


def _cheat_section(cheat: CheatSummary) -> Section:
    """Return the cheat run's summary: its catalogue, selection, runs and passes."""
    selection = cheat.selection
    return Section(
        "cheat run",
        (
            ("exploit catalogue", _shown(cheat.to_json()["catalogue"])),
            ("exploit runs", _shown(cheat.runs)),
            ("graded passed", _shown(cheat.passed)),
            (
                "selected",
                "every exploit"
                if selection.select is None
                else readable(", ".join(selection.select) or "none"),
            ),
            ("ignored", readable(", ".join(selection.ignore)) or "none"),
            ("reads expected/", readable(", ".join(cheat.reads_expected)) or "none"),
        ),
    )


def _cheat_table(envelopes: Sequence[Envelope]) -> SmallTable:
    """Return each exploit's verdicts per case, those graded passed first."""
    runs = [e for e in envelopes if e.side == "exploit"]
    runs.sort(key=lambda e: ("passed" not in e.statuses, e.slug, e.case, e.exploit or ""))
    rows = [
        (readable(e.slug), readable(e.case), readable(e.exploit or ""), ", ".join(e.statuses))
        for e in runs[:_CHEAT_ROWS]
    ]
    if len(runs) > _CHEAT_ROWS:
        rows.append(("…", f"{len(runs) - _CHEAT_ROWS} more in the JSON report", "", ""))
    return SmallTable(
        "cheat run: each exploit's verdicts",
        ("task class", "case", "exploit", "verdicts"),
        tuple(rows),
    )


def _check_view(document: CheckDocument, budget: _Budget) -> View:
    diagnostics = document.diagnostics
    severities: list[str] = [d.severity for d in diagnostics]
    codes = [readable(d.code) for d in diagnostics]
    # A diagnostic of no task class is the manifest's (as JUnit's test case ``bench.toml``).
    slugs = [readable(d.slug) if d.slug is not None else "bench.toml" for d in diagnostics]
    rows = []
    for diagnostic, severity, code, slug in zip(diagnostics, severities, codes, slugs, strict=True):
        message = budget.text(diagnostic.message, *_REASON)
        rows.append(
            {
                "cells": [severity, code, slug, _where(diagnostic), message],
                "facets": {"severity": [severity], "code": [code], "task class": [slug]},
                "detail": _detail(
                    [],
                    _blocks(
                        ("hint", budget.text(diagnostic.hint, *_REASON)),
                        ("traceback", budget.text(diagnostic.traceback, *_LOG, tail=True)),
                    ),
                ),
            }
        )
    columns = [
        _column("severity", "status"),
        _column("code", key=True),
        _column("task class"),
        _column("where"),
        _column("message", wide=True),
    ]
    facets = [
        _facet("severity", "severity", _ordered(severities, _SEVERITIES)),
        _facet("code", "code", sorted(set(codes))),
        _facet("task class", "task class", sorted(set(slugs))),
    ]
    summary = [
        ("task classes checked", _shown(document.checked)),
        ("declared", _shown(document.declared)),
        ("errors", _shown(document.errors)),
        ("warnings", _shown(document.warnings)),
        ("strict", _shown(document.strict)),
        ("manifest", _shown(readable(str(document.manifest)))),
    ]
    if document.merged is not None:
        summary.append(("merged reports", str(document.merged)))
    summary += _proof_items(document.proof)
    sections = [Section("summary", tuple(summary))]
    tables: list[SmallTable] = []
    rubrics = document.rubrics
    durations: list[float] = []
    if rubrics is not None:
        sections.append(
            Section(
                "rubric runs",
                (
                    ("sandbox", _shown(readable(rubrics.sandbox))),
                    ("repeat", _shown(rubrics.repeat)),
                    ("ran", _shown(rubrics.ran)),
                    ("reused", _shown(rubrics.reused)),
                ),
            )
        )
        durations += [
            float(envelope.wall_s.median)
            for envelope in rubrics.envelopes
            if envelope.wall_s is not None
        ]
        if rubrics.exploits is not None:
            sections.append(_cheat_section(rubrics.exploits))
            tables.append(_cheat_table(rubrics.envelopes))
    by_code = Counter(codes).most_common(_CHART_CODES)
    charts: list[Bars | Histogram] = [
        Bars(
            "diagnostics by severity",
            tuple(
                (s, severities.count(s), _status(s))
                for s in _ordered([*severities, *_SEVERITIES], _SEVERITIES)
            ),
        ),
    ]
    if by_code:
        charts.append(Bars("diagnostics by code", tuple((c, n, "other") for c, n in by_code)))
    if durations:
        charts.append(
            Histogram("rubric runs: median wall time of each case and side", tuple(durations), "s")
        )
    return View(
        kind="check",
        title="check",
        verdict=("passed" if document.ok else "failed", document.ok),
        sections=tuple(sections),
        tables=tuple(tables),
        charts=tuple(charts),
        table={
            "noun": "diagnostics",
            "columns": columns,
            "status_column": 0,
            "facets": facets,
            "rows": rows,
        },
    )


# -- compare ----------------------------------------------------------------------------------


def _side_section(title: str, side: Side) -> Section:
    items = [
        ("file", readable(side.file)),
        ("task class", readable(side.task_class)),
        ("passed", f"{side.passed}/{side.total}"),
        ("sampled", _shown(side.sampled)),
    ]
    run = _run_section(title, side.run)
    if run is not None:
        items += [(label, value) for label, value in run.items if value != "-"]
    return Section(title, tuple(items))


def _test_section(test: McNemar | Bootstrap | None) -> Section | None:
    if test is None:
        return None
    counts: tuple[tuple[str, int], ...]
    figures: tuple[tuple[str, float], ...]
    if isinstance(test, McNemar):
        counts = (("improved", test.improved), ("regressed", test.regressed))
        figures = (("p value", test.p_value),)
    else:
        counts = (("resamples", test.resamples), ("seed", test.seed))
        figures = (
            ("difference", test.interval.difference),
            ("low", test.interval.low),
            ("high", test.interval.high),
            ("confidence", test.confidence),
        )
    return Section(
        "test",
        (
            ("name", test.name),
            *((label, str(number)) for label, number in counts),
            *((label, f"{float(value):.4g}") for label, value in figures),
        ),
    )


def _compare_side(
    outcome: Outcome | None,
) -> tuple[str | None, float | None, list[int] | None, str | None]:
    """One side of a compared case: status, pass@1, [passed, total] samples, reason."""
    if outcome is None:
        return None, None, None, None
    return (
        outcome.status,
        _num(outcome.pass_at_1, 3),
        [outcome.samples_passed, outcome.samples_total],
        outcome.reason,
    )


def _compare_view(document: CompareDocument, budget: _Budget) -> View:
    rows = []
    changes, bases, news = [], [], []
    for case in document.cases:
        change = case.change
        base_status, base_rate, base_samples, base_reason = _compare_side(case.base)
        new_status, new_rate, new_samples, new_reason = _compare_side(case.new)
        changes.append(change)
        bases.append("(none)" if base_status is None else base_status)
        news.append("(none)" if new_status is None else new_status)
        rows.append(
            {
                "cells": [
                    readable(case.case),
                    change,
                    base_status,
                    new_status,
                    base_rate,
                    new_rate,
                    base_samples,
                    new_samples,
                    budget.text(new_reason if new_reason is not None else base_reason, *_REASON),
                ],
                "facets": {"change": [change], "base": [bases[-1]], "new": [news[-1]]},
                "detail": _detail(
                    [],
                    _blocks(
                        ("base reason", budget.text(base_reason, *_REASON)),
                        ("new reason", budget.text(new_reason, *_REASON)),
                    ),
                ),
            }
        )
    columns = [
        _column("case", key=True),
        _column("change", "status"),
        _column("base", "status"),
        _column("new", "status"),
        _column("base pass@1", "number", 2),
        _column("new pass@1", "number", 2),
        _column("base samples", "ratio"),
        _column("new samples", "ratio"),
        _column("reason (new, else base)", wide=True),
    ]
    statuses = (*_GRADE_STATUSES, "(none)")
    facets = [
        _facet("change", "change", _ordered(changes, CHANGES)),
        _facet("base", "base status", _ordered(bases, statuses)),
        _facet("new", "new status", _ordered(news, statuses)),
    ]
    counts = document.changes
    task_class = readable(document.task_class)
    summary = Section(
        "summary",
        (
            ("task class", task_class),
            ("bench digest", _shown(_text(document.bench_digest))),
            ("cases", str(len(document.cases))),
            *((change, str(counts[change])) for change in CHANGES),
        ),
    )
    sections = [
        summary,
        _side_section("base", document.base),
        _side_section("new", document.new),
    ]
    if (test := _test_section(document.test)) is not None:
        sections.append(test)
    tables = []
    rates = [
        (
            str(rate.k),
            _percent(rate.base),
            _percent(rate.new),
            "-" if rate.difference is None else f"{rate.difference * 100:+.1f} points",
        )
        for rate in sorted(document.pass_at_k, key=lambda rate: rate.k)
    ]
    if rates:
        tables.append(SmallTable("pass@k", ("k", "base", "new", "difference"), tuple(rates)))
    bars = tuple((change, counts[change], _status(change)) for change in CHANGES)
    ok = document.ok
    return View(
        kind="compare",
        title=f"compare {task_class}",
        verdict=("no regression" if ok else f"{document.regressions} regressed", ok),
        sections=tuple(sections),
        tables=tuple(tables),
        charts=(Bars("cases by change", bars),),
        table={
            "noun": "cases",
            "columns": columns,
            "status_column": 1,
            "facets": facets,
            "rows": rows,
        },
    )
