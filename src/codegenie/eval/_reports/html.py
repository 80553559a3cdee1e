r"""The ``html`` format: one self-contained page a person can open, of a check, grade or compare.

The page is rendered from the typed report every format renders (what
:mod:`.html_view` reads of it): the summary, the ``run`` block, pass@k,
charts (inline SVG) and a table of cases (or of diagnostics) that sorts by a
click on a column, filters by status, tag or any facet and by text, and
shows each case's samples and logs in a row that expands.

It loads nothing: no URL anywhere, its one style sheet and one script
inline (``html_page.css``, ``html_page.js``, package data), so it opens
offline, from a CI artifact or a mail. What a candidate, a rubric, a case
or a file wrote stays text, three ways over:

- every string written into the HTML is escaped (:func:`html.escape`, with
  quotes) after its control characters are made visible;
- the rows' data travel as a ``<script type="application/json">`` block
  whose ``<``, ``>``, ``&``, U+2028 and U+2029 are ``\u`` escapes, so no
  string can close the block or open a comment; the script builds every
  row with ``textContent``, never markup;
- a Content-Security-Policy allows nothing but that script and that style
  sheet, by their hashes (``default-src 'none'``), and Trusted Types (so
  even a slip to ``innerHTML`` would throw rather than parse).

The page is ASCII (every other character a reference or a ``\u`` escape)
and so valid UTF-8 whatever the report held: a lone surrogate (a path the
locale could not decode) is made readable first.
"""

from __future__ import annotations

import base64
import hashlib
import json
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Final

from codegenie.eval._reports.html_svg import bars_svg, escaped, histogram_svg
from codegenie.eval._reports.html_view import Bars, View, view_of
from codegenie.eval._version import __version__

if TYPE_CHECKING:
    from codegenie.eval._reports.documents import (
        CheckDocument,
        CompareDocument,
        GradeDocument,
        GradeSuiteDocument,
    )
    from codegenie.eval._reports.sink import Sink

__all__ = ("check_html", "compare_html", "grade_html", "grades_html", "html_of", "json_for_script")

_ASSETS: Final = "codegenie.eval._reports"
_STYLE: Final = "html_page.css"
_SCRIPT: Final = "html_page.js"

# What JSON leaves as it is and a <script> block must not see.
_SCRIPT_UNSAFE: Final = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def check_html(report: CheckDocument, sink: Sink) -> None:
    """Write the page of a ``check`` report on stdout (the ``html`` format)."""
    sink.stdout.write(html_of(report))


def grade_html(report: GradeDocument, sink: Sink) -> None:
    """Write the page of a ``grade`` report on stdout (the ``html`` format)."""
    sink.stdout.write(html_of(report))


def grades_html(report: GradeSuiteDocument, sink: Sink) -> None:
    """Write the page of a ``grade --all`` report: every task class's cases in one table.

    Each case is shown as ``<slug>/<case-id>``; the summary counts them all.
    """
    sink.stdout.write(html_of(report))


def compare_html(report: CompareDocument, sink: Sink) -> None:
    """Write the page of a ``compare`` report on stdout (the ``html`` format)."""
    sink.stdout.write(html_of(report))


@cache
def _asset(name: str) -> str:
    """Return a file of the page (its style sheet, its script), from the installed package."""
    text = resources.files(_ASSETS).joinpath(name).read_text(encoding="utf-8")
    if not text.isascii():  # the page's hashes and its encoding rest on it
        msg = f"{name} must be ASCII"
        raise ValueError(msg)
    return text


def _hash(source: str) -> str:
    digest = hashlib.sha256(source.encode("ascii")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def json_for_script(data: object) -> str:
    """Return ``data`` as JSON a ``<script>`` block holds inert: ASCII, no ``<``, ``>`` or ``&``."""
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return text.translate(_SCRIPT_UNSAFE)


def content_security_policy(style: str, script: str) -> str:
    """Return the page's policy: nothing loads; only its own style sheet and script (hashes) run."""
    return "; ".join(
        (
            "default-src 'none'",
            f"script-src {_hash(script)}",
            f"style-src {_hash(style)}",
            "img-src data:",
            "base-uri 'none'",
            "form-action 'none'",
            "require-trusted-types-for 'script'",
            "trusted-types 'none'",
        )
    )


def html_of(
    document: CheckDocument | GradeDocument | GradeSuiteDocument | CompareDocument,
) -> str:
    """Return the page of ``document``, a typed report; write nothing."""
    view = view_of(document)
    style, script = _asset(_STYLE), _asset(_SCRIPT)
    ok = "ok" if view.verdict[1] else "bad"
    page = "".join(
        (
            "<!DOCTYPE html>\n",
            '<html lang="en">\n<head>\n<meta charset="utf-8">\n',
            '<meta http-equiv="Content-Security-Policy" '
            f'content="{escaped(content_security_policy(style, script))}">\n',
            '<meta name="referrer" content="no-referrer">\n',
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
            f"<title>codegenie-bench {escaped(view.title)}: {escaped(view.verdict[0])}</title>\n",
            '<link rel="icon" href="data:,">\n',
            f"<style>{style}</style>\n</head>\n<body>\n",
            f'<header><h1>codegenie-bench {escaped(view.title)} <span class="verdict {ok}">'
            f"{escaped(view.verdict[0])}</span></h1></header>\n<main>\n",
            _summary(view),
            _charts(view),
            _cases(view),
            "</main>\n",
            f"<footer>Written by codegenie-bench {escaped(__version__)} from its "
            f"{escaped(view.kind)} JSON document; this page loads nothing and runs only its "
            "own script.</footer>\n",
            f'<script type="application/json" id="report-data">{json_for_script(view.table)}'
            "</script>\n",
            f"<script>{script}</script>\n</body>\n</html>\n",
        )
    )
    return page.encode("ascii", "xmlcharrefreplace").decode("ascii")


def _summary(view: View) -> str:
    parts = ['<section id="summary" class="summary">\n']
    for section in view.sections:
        parts.append(f'<div class="card"><h2>{escaped(section.title)}</h2><dl>')
        parts += [
            f"<dt>{escaped(label)}</dt><dd>{escaped(value)}</dd>" for label, value in section.items
        ]
        parts.append("</dl></div>\n")
    for table in view.tables:
        parts.append(f'<div class="card"><h2>{escaped(table.title)}</h2><table class="small">')
        parts.append("<thead><tr>")
        parts += [f'<th scope="col">{escaped(name)}</th>' for name in table.header]
        parts.append("</tr></thead><tbody>")
        for row in table.rows:
            parts.append("<tr>" + "".join(f"<td>{escaped(cell)}</td>" for cell in row) + "</tr>")
        parts.append("</tbody></table></div>\n")
    parts.append("</section>\n")
    return "".join(parts)


def _charts(view: View) -> str:
    parts = ['<section id="charts" class="charts">\n']
    for chart in view.charts:
        svg = bars_svg(chart) if isinstance(chart, Bars) else histogram_svg(chart)
        parts.append(f'<figure class="card"><figcaption>{escaped(chart.title)}</figcaption>')
        parts.append(f"{svg}</figure>\n")
    parts.append("</section>\n")
    return "".join(parts)


def _cases(view: View) -> str:
    noun = escaped(view.table["noun"])
    return (
        '<section id="cases-section">\n'
        f"<h2>{noun}</h2>\n"
        '<div id="filters" class="filters"></div>\n'
        f"<noscript><p>The table of {noun} needs JavaScript; "
        "<code>--format json</code> has the same data.</p></noscript>\n"
        '<div class="scroll"><table id="cases" class="cases"><thead></thead><tbody></tbody>'
        "</table></div>\n"
        "</section>\n"
    )
