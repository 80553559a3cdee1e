"""The Markdown a CI job summary shows (``$GITHUB_STEP_SUMMARY``) for ``check`` and ``grade``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ("check_summary", "grade_summary")


def _cell(value: object) -> str:
    """``value`` as one Markdown table cell: no line break, no column break, no HTML."""
    text = " ".join(str(value).split())
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def check_summary(document: Mapping[str, Any]) -> str:
    """Return the Markdown summary of a ``check`` document: the counts, then each diagnostic."""
    verdict = "passed" if document["ok"] else "failed"
    lines = [
        f"### codegenie-bench check: {verdict}",
        "",
        f"{document['checked']} task classes checked: {document['errors']} errors, "
        f"{document['warnings']} warnings.",
        "",
    ]
    if document["diagnostics"]:
        lines += ["| severity | code | where | message |", "| --- | --- | --- | --- |"]
        for d in document["diagnostics"]:
            where = d.get("file") or ""
            if d.get("line") is not None:
                where += f":{d['line']}"
            code, message = _cell(d["code"]), _cell(d["message"])
            lines.append(f"| {d['severity']} | `{code}` | {_cell(where)} | {message} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def grade_summary(document: Mapping[str, Any]) -> str:
    """Return the Markdown summary of a ``grade`` document: the counts, then what did not pass."""
    counts = document["counts"]
    verdict = "passed" if document["ok"] else "failed"
    lines = [
        f"### codegenie-bench grade {_cell(document['task_class'])}: {verdict}",
        "",
        f"{document['passed']}/{document['total']} passed "
        f"({counts['failed']} failed, {counts['error']} errors, {counts['missing']} missing).",
        "",
    ]
    others = [r for r in document["results"] if r["status"] != "passed"]
    if others:
        lines += ["| status | case | reason |", "| --- | --- | --- |"]
        lines += [
            f"| {r['status']} | `{_cell(r['case'])}` | {_cell(r.get('reason') or '')} |"
            for r in others
        ]
        lines.append("")
    return "\n".join(lines) + "\n"
