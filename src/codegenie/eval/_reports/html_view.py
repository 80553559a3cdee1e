"""What the ``html`` page shows of a report, read from its JSON document alone.

:func:`view_of` turns a ``check``, ``grade`` or ``compare`` JSON document
into a :class:`View`: the summary (sections of label and value, small
tables such as pass@k), the charts, and the table of cases the page's
script builds (its columns, filters and rows, as JSON data). Nothing here
writes HTML: :mod:`.html` escapes and lays out what this module returns,
and the script shows the rows' strings as text only.

The document is a typed report's own ``to_json()``: ``merge`` and
``compare`` take what a user gives them only through the one reader of
reports (:mod:`.reader`: finite numbers, bounded nesting, figures computed
from the results), so nothing here meets a ``NaN`` or a verdict nested
hundreds of levels deep. It still reads every key with a default (the keys
issue 25 adds included), shows a value of the wrong type as absent, and
keeps every string as it is, up to bounds. Those bounds keep a page of
thousands of runs small: each long text (a reason, a stderr tail, a
traceback, a verdict) is cut at its own length, and beyond a short part
each always keeps, all of them share one budget of :data:`EMBED_BUDGET`
characters; what is cut says how much, and that ``--format json`` has it
whole.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

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

#: The kinds of document the page renders.
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

_GRADE_STATUSES: Final = ("passed", "failed", "missing", "error")
_CHANGES: Final = ("regressed", "improved", "error", "new", "gone", "unchanged")
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


def view_of(kind: ViewKind, document: Mapping[str, Any]) -> View:
    """Return the view of ``document``, a ``kind`` report's JSON document."""
    budget = _Budget(EMBED_BUDGET)
    if kind == "check":
        return _check_view(document, budget)
    if kind == "grade":
        return _grade_view(document, budget)
    return _compare_view(document, budget)


# -- reading a document someone else wrote ---------------------------------------------------


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _word(value: object, absent: str = "?") -> str:
    """Return ``value`` when it is a string (an empty one included), else ``absent``."""
    return value if isinstance(value, str) else absent


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _num(value: object, digits: int) -> float | None:
    """Return a finite number rounded to ``digits`` decimals (a page needs no 17), else ``None``."""
    number = _float(value)
    return None if number is None else round(number, digits)


def _dict(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _dicts(value: object) -> list[Mapping[str, Any]]:
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, Mapping)]


def _strs(value: object) -> list[str]:
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, str)]


def _status(value: object) -> str:
    """Return the class a status colours with: one of :data:`STATUS_CLASSES`, else ``other``."""
    return value if isinstance(value, str) and value in STATUS_CLASSES else "other"


def _shown(value: object) -> str:
    """Return a summary value as text: ``-`` when absent, yes/no, numbers plainly."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _percent(value: object) -> str:
    number = _float(value)
    return "-" if number is None else f"{number * 100:.1f}%"


def _ordered(present: Iterable[str], known: Sequence[str]) -> list[str]:
    """Return the values ``present``: those of ``known`` first, in its order, then the rest."""
    seen = set(present)
    return [v for v in known if v in seen] + sorted(seen.difference(known))


# -- bounding what a page embeds -------------------------------------------------------------


class _Budget:
    """The characters of long texts a page still embeds beyond what each text always keeps."""

    def __init__(self, left: int) -> None:
        self.left = left

    def text(self, value: object, cap: int, keep: int, *, tail: bool = False) -> str | None:
        """Return ``value`` (a string) whole, or cut: to ``cap``, and beyond ``keep`` to the budget.

        ``tail`` keeps the end (of a stderr tail, of a traceback) rather than
        the start. ``None`` for anything but a string.
        """
        if not isinstance(value, str):
            return None
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


def _verdict_text(verdict: object, budget: _Budget) -> str | None:
    """Return the rubric's own keys of its verdict (``tests_run``…) as JSON; ``None``: it has none.

    ``passed``, ``score`` and ``reason`` are the row's status, score and reason already.
    """
    if not isinstance(verdict, Mapping):
        return None
    own = {key: value for key, value in verdict.items() if key not in _PROTOCOL_KEYS}
    if not own:
        return None
    text = json.dumps(own, ensure_ascii=False, default=str)
    return budget.text(text, *_VERDICT)


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


def _run_section(title: str, run: object) -> Section | None:
    """Return the ``run`` identity block (issue 25): who ran what, when, with which tool."""
    if not isinstance(run, Mapping):
        return None
    keys = (
        ("name", "name"),
        ("candidates digest", "candidates_digest"),
        ("started", "started_at"),
        ("finished", "finished_at"),
        ("tool version", "tool_version"),
        ("python", "python"),
        ("sandbox", "sandbox"),
    )
    return Section(title, tuple((label, _shown(run.get(key))) for label, key in keys))


def _pass_at_k(value: object) -> list[tuple[int, object]]:
    """Return the ``pass_at_k`` object's entries, by k (its keys are k as strings)."""
    found = []
    for key, rate in _dict(value).items():
        try:
            k = int(key)
        except ValueError:
            continue
        found.append((k, rate))
    return sorted(found, key=lambda pair: pair[0])


def _shard(value: object) -> str | None:
    shard = _dict(value)
    index, count = _int(shard.get("index")), _int(shard.get("count"))
    return None if index is None or count is None else f"{index}/{count}"


# -- grade ------------------------------------------------------------------------------------

_TIMES: Final = (("duration (s)", "duration_s"), ("wall (s)", "wall_s"), ("CPU (s)", "cpu_s"))


def _times(result: Mapping[str, Any]) -> list[float | None]:
    return [_num(result.get(key), 2) for _, key in _TIMES]


def _grade_view(document: Mapping[str, Any], budget: _Budget) -> View:
    task_class = _word(document.get("task_class"))
    results = _dicts(document.get("results"))
    sampled = document.get("sampled") is True or any(
        isinstance(result.get("samples"), list) for result in results
    )
    statuses = [_word(result.get("status")) for result in results]
    counts = Counter(statuses)
    known_counts = _dict(document.get("counts"))
    for status in _GRADE_STATUSES:
        if (count := _int(known_counts.get(status))) is not None:
            counts[status] = count
    total = _int(document.get("total"))
    total = len(results) if total is None else total
    passed = _int(document.get("passed"))
    passed = counts["passed"] if passed is None else passed
    ok = document.get("ok") is True

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
    nodes = sorted({node for result in results for node in _nodes(result) if node is not None})
    rows = [_grade_row(result, budget, sampled=sampled, nodes=bool(nodes)) for result in results]
    tags = sorted({tag for result in results for tag in _strs(result.get("tags"))})
    facets = [_facet("status", "status", _ordered(statuses, _GRADE_STATUSES))]
    if tags:
        facets.append(_facet("tag", "tag", tags))
    if nodes:
        facets.append(_facet("node", "node", nodes))

    summary = [
        ("passed", f"{passed}/{total}"),
        *((status, str(counts[status])) for status in _GRADE_STATUSES[1:]),
        ("mean score", _shown(_float(document.get("mean_score")))),
        ("sampled", _shown(sampled)),
    ]
    if (fail_under := _float(document.get("fail_under"))) is not None:
        summary.append(("fail under (pass@1)", _percent(fail_under)))
    summary += [
        ("sandbox", _shown(_str(document.get("sandbox")))),
        ("reused results", _shown(_int(document.get("reused")))),
    ]
    if (merged := _int(document.get("merged"))) is not None:
        summary.append(("merged reports", str(merged)))
    if (shard := _shard(document.get("shard"))) is not None:
        summary.append(("shard", shard))
    if (digest := _str(document.get("bench_digest"))) is not None:
        summary.append(("bench digest", digest))
    sections = [Section("summary", tuple(summary))]
    if (run := _run_section("run", document.get("run"))) is not None:
        sections.append(run)
    tables = []
    if pass_at_k := _pass_at_k(document.get("pass_at_k")):
        tables.append(
            SmallTable(
                "pass@k", ("k", "pass@k"), tuple((str(k), _percent(v)) for k, v in pass_at_k)
            )
        )

    durations: list[float] = []
    for result in results:
        runs = _dicts(result.get("samples")) if sampled else [result]
        durations += [d for run in runs if (d := _float(run.get("duration_s"))) is not None]
    bars = tuple(
        (status, counts[status], _status(status))
        for status in _ordered([*counts, *_GRADE_STATUSES], _GRADE_STATUSES)
    )
    charts: list[Bars | Histogram] = [
        Bars("cases by status", bars),
        Histogram(f"duration of each {'sample' if sampled else 'case'}", tuple(durations), "s"),
    ]
    return View(
        kind="grade",
        title=f"grade {task_class}",
        verdict=("passed" if ok else "failed", ok),
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


def _nodes(result: Mapping[str, Any]) -> list[str | None]:
    """Return the nodes that made a result's runs: its own, and each of its samples'."""
    samples = _dicts(result.get("samples"))
    return [_str(result.get("node")), *(_str(sample.get("node")) for sample in samples)]


def _grade_row(
    result: Mapping[str, Any], budget: _Budget, *, sampled: bool, nodes: bool
) -> dict[str, Any]:
    status = _str(result.get("status"))
    tags = _strs(result.get("tags"))
    cells: list[Any] = [_str(result.get("case")), status, _num(result.get("score"), 4)]
    if sampled:
        passed, total = _int(result.get("samples_passed")), _int(result.get("samples_total"))
        cells.append(None if passed is None or total is None else [passed, total])
    cells += _times(result)
    cells += [
        _num(result.get("peak_memory_mib"), 1),
        tags,
        budget.text(result.get("reason"), *_REASON),
    ]
    samples = result.get("samples")
    detail = _detail(
        _fields(
            ("limit exceeded", _str(result.get("limit"))),
            ("node", _str(result.get("node"))),
            ("candidate digest", _str(result.get("candidate_digest"))),
            ("reused", result.get("reused") if isinstance(result.get("reused"), bool) else None),
        ),
        _blocks(
            ("stderr tail", budget.text(result.get("stderr_tail"), *_LOG, tail=True)),
            ("traceback", budget.text(result.get("traceback"), *_LOG, tail=True)),
            ("verdict (own keys)", _verdict_text(result.get("verdict"), budget)),
        ),
        _samples(_dicts(samples), budget, nodes=nodes) if isinstance(samples, list) else None,
    )
    facets: dict[str, list[str]] = {"status": [_word(status)], "tag": tags}
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
    samples: list[Mapping[str, Any]], budget: _Budget, *, nodes: bool
) -> list[dict[str, Any]]:
    """Return a row per sample: cells in the order of :data:`_SAMPLE_COLUMNS`, and its logs.

    ``nodes``: a last cell, the node that made the sample's run (a run on a cluster).
    """
    rows = []
    for sample in samples:
        node = [_str(sample.get("node"))] if nodes else []
        row: dict[str, Any] = {
            "cells": [
                _str(sample.get("sample")),
                _str(sample.get("status")),
                _num(sample.get("score"), 4),
                *_times(sample),
                _num(sample.get("peak_memory_mib"), 1),
                _str(sample.get("limit")),
                budget.text(sample.get("reason"), *_SAMPLE_REASON),
                *node,
            ]
        }
        blocks = _blocks(
            ("stderr tail", budget.text(sample.get("stderr_tail"), *_SAMPLE_LOG, tail=True)),
            ("traceback", budget.text(sample.get("traceback"), *_SAMPLE_LOG, tail=True)),
            ("verdict (own keys)", _verdict_text(sample.get("verdict"), budget)),
        )
        if blocks:
            row["blocks"] = blocks
        rows.append(row)
    return rows


# -- check ------------------------------------------------------------------------------------


def _where(diagnostic: Mapping[str, Any]) -> str | None:
    file = _str(diagnostic.get("file"))
    if file is None:
        return None
    line, column = _int(diagnostic.get("line")), _int(diagnostic.get("column"))
    if line is not None:
        file += f":{line}" + (f":{column}" if column is not None else "")
    return file


def _check_view(document: Mapping[str, Any], budget: _Budget) -> View:
    diagnostics = _dicts(document.get("diagnostics"))
    ok = document.get("ok") is True
    severities = [_word(d.get("severity")) for d in diagnostics]
    codes = [_word(d.get("code")) for d in diagnostics]
    # A diagnostic of no task class is the manifest's (as JUnit's test case ``bench.toml``).
    slugs = [s if (s := _str(d.get("slug"))) is not None else "bench.toml" for d in diagnostics]
    rows = []
    for diagnostic, severity, code, slug in zip(diagnostics, severities, codes, slugs, strict=True):
        message = budget.text(diagnostic.get("message"), *_REASON)
        rows.append(
            {
                "cells": [severity, code, slug, _where(diagnostic), message],
                "facets": {"severity": [severity], "code": [code], "task class": [slug]},
                "detail": _detail(
                    [],
                    _blocks(
                        ("hint", budget.text(diagnostic.get("hint"), *_REASON)),
                        ("traceback", budget.text(diagnostic.get("traceback"), *_LOG, tail=True)),
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
    errors, warnings = _int(document.get("errors")), _int(document.get("warnings"))
    summary = [
        ("task classes checked", _shown(_int(document.get("checked")))),
        ("declared", _shown(_int(document.get("declared")))),
        ("errors", _shown(severities.count("error") if errors is None else errors)),
        ("warnings", _shown(severities.count("warning") if warnings is None else warnings)),
        ("strict", _shown(document.get("strict") is True)),
        ("manifest", _shown(_str(document.get("manifest")))),
    ]
    if (merged := _int(document.get("merged"))) is not None:
        summary.append(("merged reports", str(merged)))
    if (shard := _shard(document.get("shard"))) is not None:
        summary.append(("shard", shard))
    if (digest := _str(document.get("bench_digest"))) is not None:
        summary.append(("bench digest", digest))
    sections = [Section("summary", tuple(summary))]
    rubrics = document.get("rubrics")
    durations: list[float] = []
    if isinstance(rubrics, Mapping):
        sections.append(
            Section(
                "rubric runs",
                (
                    ("sandbox", _shown(_str(rubrics.get("sandbox")))),
                    ("repeat", _shown(_int(rubrics.get("repeat")))),
                    ("ran", _shown(_int(rubrics.get("ran")))),
                    ("reused", _shown(_int(rubrics.get("reused")))),
                ),
            )
        )
        for envelope in _dicts(rubrics.get("cases")):
            median = _float(_dict(envelope.get("wall_s")).get("median"))
            if median is not None:
                durations.append(median)
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
        verdict=("passed" if ok else "failed", ok),
        sections=tuple(sections),
        tables=(),
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


def _side_section(title: str, side: object) -> Section:
    side = _dict(side)
    passed, total = _int(side.get("passed")), _int(side.get("total"))
    items = [
        ("file", _shown(_str(side.get("file")))),
        ("task class", _shown(_str(side.get("task_class")))),
        ("passed", "-" if passed is None or total is None else f"{passed}/{total}"),
        ("sampled", _shown(side.get("sampled") if isinstance(side.get("sampled"), bool) else None)),
    ]
    run = _run_section(title, side.get("run"))
    if run is not None:
        items += [(label, value) for label, value in run.items if value != "-"]
    return Section(title, tuple(items))


def _test_section(test: object) -> Section | None:
    if not isinstance(test, Mapping):
        return None
    items: list[tuple[str, str]] = [("name", _shown(_str(test.get("name"))))]
    for key in ("improved", "regressed", "resamples", "seed"):
        if (number := _int(test.get(key))) is not None:
            items.append((key, str(number)))
    for key in ("p_value", "difference", "low", "high", "confidence"):
        if (value := _float(test.get(key))) is not None:
            items.append((key.replace("_", " "), f"{value:.4g}"))
    return Section("test", tuple(items))


def _compare_side(value: object) -> tuple[str | None, float | None, list[int] | None, str | None]:
    """One side of a compared case: status, pass@1, [passed, total] samples, reason."""
    if not isinstance(value, Mapping):
        return None, None, None, None
    passed, total = _int(value.get("samples_passed")), _int(value.get("samples_total"))
    return (
        _str(value.get("status")),
        _num(value.get("pass_at_1"), 3),
        None if passed is None or total is None else [passed, total],
        _str(value.get("reason")),
    )


def _compare_view(document: Mapping[str, Any], budget: _Budget) -> View:
    cases = _dicts(document.get("cases"))
    rows = []
    changes, bases, news = [], [], []
    for case in cases:
        change = _word(case.get("change"))
        base_status, base_rate, base_samples, base_reason = _compare_side(case.get("base"))
        new_status, new_rate, new_samples, new_reason = _compare_side(case.get("new"))
        changes.append(change)
        bases.append(_word(base_status, "(none)"))
        news.append(_word(new_status, "(none)"))
        rows.append(
            {
                "cells": [
                    _str(case.get("case")),
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
        _facet("change", "change", _ordered(changes, _CHANGES)),
        _facet("base", "base status", _ordered(bases, statuses)),
        _facet("new", "new status", _ordered(news, statuses)),
    ]
    counted = _dict(document.get("changes"))
    counts = Counter(changes)
    for change in _CHANGES:
        if (count := _int(counted.get(change))) is not None:
            counts[change] = count
    ok = document.get("ok") is True
    regressions = _int(document.get("regressions"))
    regressions = counts["regressed"] if regressions is None else regressions
    task_class = _word(document.get("task_class"))
    summary = Section(
        "summary",
        (
            ("task class", task_class),
            ("bench digest", _shown(_str(document.get("bench_digest")))),
            ("cases", str(len(cases))),
            *((change, str(counts[change])) for change in _CHANGES),
        ),
    )
    sections = [
        summary,
        _side_section("base", document.get("base")),
        _side_section("new", document.get("new")),
    ]
    if (test := _test_section(document.get("test"))) is not None:
        sections.append(test)
    tables = []
    rates = []
    for k, value in _pass_at_k(document.get("pass_at_k")):
        rate = _dict(value)
        difference = _float(rate.get("difference"))
        rates.append(
            (
                str(k),
                _percent(rate.get("base")),
                _percent(rate.get("new")),
                "-" if difference is None else f"{difference * 100:+.1f} points",
            )
        )
    if rates:
        tables.append(SmallTable("pass@k", ("k", "base", "new", "difference"), tuple(rates)))
    bars = tuple(
        (change, counts[change], _status(change))
        for change in _ordered([*counts, *_CHANGES], _CHANGES)
    )
    return View(
        kind="compare",
        title=f"compare {task_class}",
        verdict=("no regression" if ok else f"{regressions} regressed", ok),
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
