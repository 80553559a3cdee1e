"""The ``html`` page's charts: inline SVG, drawn in Python, every label escaped.

A bar chart of counts (cases by status, diagnostics by severity, cases by
change) and a histogram (the durations of runs). No script draws them and
no style attribute colours them: each bar carries a class the page's one
style sheet colours, so the page's Content-Security-Policy needs nothing
more than that style sheet's hash.
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Final

from codegenie.eval._output import escape_control

if TYPE_CHECKING:
    from codegenie.eval._reports.html_view import Bars, Histogram

__all__ = ("bars_svg", "escaped", "histogram_svg")

_WIDTH: Final = 420
_LABEL_WIDTH: Final = 130
_BAR_WIDTH: Final = 230
_ROW: Final = 22
# The most characters of a label a bar shows (its tooltip has it whole).
_LABEL_CHARACTERS: Final = 18
_MOST_BINS: Final = 20


def escaped(value: object) -> str:
    """``value`` as HTML text or an attribute's value: control characters visible, markup inert."""
    return html.escape(escape_control(str(value)), quote=True)


def _short(label: str) -> str:
    return label if len(label) <= _LABEL_CHARACTERS else label[: _LABEL_CHARACTERS - 1] + "…"


def _open(title: str, height: int) -> str:
    return (
        f'<svg class="chart" role="img" aria-label="{escaped(title)}" '
        f'viewBox="0 0 {_WIDTH} {height}" width="{_WIDTH}" height="{height}">'
        f"<title>{escaped(title)}</title>"
    )


def bars_svg(chart: Bars) -> str:
    """Return a horizontal bar per count, labelled, its length proportional to the count."""
    most = max((count for _, count, _ in chart.bars), default=0) or 1
    height = 8 + _ROW * max(len(chart.bars), 1)
    parts = [_open(chart.title, height)]
    if not chart.bars:
        parts.append(
            f'<text class="empty" x="{_WIDTH // 2}" y="20" text-anchor="middle">none</text>'
        )
    for row, (label, count, status) in enumerate(chart.bars):
        y = 4 + row * _ROW
        width = round(_BAR_WIDTH * count / most, 1)
        parts.append(
            f'<g class="bar st-{escaped(status)}"><title>{escaped(label)}: {count}</title>'
            f'<text x="{_LABEL_WIDTH - 6}" y="{y + 15}" text-anchor="end">'
            f"{escaped(_short(label))}</text>"
            f'<rect x="{_LABEL_WIDTH}" y="{y + 2}" width="{width}" height="{_ROW - 6}" rx="2"/>'
            f'<text class="count" x="{_LABEL_WIDTH + width + 5}" y="{y + 15}">{count}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _seconds(value: float) -> str:
    return f"{value:.3g}"


def histogram_svg(chart: Histogram) -> str:
    """Return how many values fall in each of a few equal bins from the least to the greatest."""
    height, left, right, top, bottom = 170, 40, _WIDTH - 10, 10, 140
    parts = [_open(chart.title, height)]
    values = chart.values
    if not values:
        parts.append(
            f'<text class="empty" x="{_WIDTH // 2}" y="{height // 2}" text-anchor="middle">'
            "no durations</text></svg>"
        )
        return "".join(parts)
    low, high = min(values), max(values)
    bins = min(_MOST_BINS, max(1, math.ceil(math.sqrt(len(values)))))
    step = (high - low) / bins
    if step <= 0:  # every value the same: one bin, of that value
        bins, step = 1, 1.0
    counts = [0] * bins
    for value in values:
        counts[min(int((value - low) / step), bins - 1)] += 1
    most = max(counts)
    slot = (right - left) / bins
    for index, count in enumerate(counts):
        start, end = low + index * step, min(low + (index + 1) * step, high)
        bar = round((bottom - top) * count / most, 1)
        x = round(left + index * slot + 1, 1)
        parts.append(
            f'<g class="hist"><title>{_seconds(start)} to {_seconds(end)} {escaped(chart.unit)}: '
            f"{count}</title>"
            f'<rect x="{x}" y="{round(bottom - bar, 1)}" width="{round(slot - 2, 1)}" '
            f'height="{bar}"/></g>'
        )
    unit = escaped(chart.unit)
    parts += [
        f'<line class="axis" x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}"/>',
        f'<text x="{left - 4}" y="{top + 8}" text-anchor="end">{most}</text>',
        f'<text x="{left - 4}" y="{bottom}" text-anchor="end">0</text>',
        f'<text x="{left}" y="{bottom + 16}">{_seconds(low)} {unit}</text>',
        f'<text x="{right}" y="{bottom + 16}" text-anchor="end">{_seconds(high)} {unit}</text>',
        f'<text class="note" x="{(left + right) // 2}" y="{bottom + 28}" text-anchor="middle">'
        f"{len(values)} runs</text>",
        "</svg>",
    ]
    return "".join(parts)
