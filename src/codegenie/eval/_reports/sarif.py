"""SARIF 2.1.0 of a ``check`` report.

One run of the tool ``codegenie-bench``: its rules are the whole code table
(each with its summary, its hint as help and its severity as the default
level), its results the diagnostics, each located by a relative URI from the
bench's directory (``%SRCROOT%``) and a region when the line is known.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from codegenie.eval._output import readable, readable_data
from codegenie.eval._version import __version__
from codegenie.eval.codes import CODES

if TYPE_CHECKING:
    from codegenie.eval._reports.documents import CheckDocument
    from codegenie.eval._reports.sink import Sink
    from codegenie.eval.diagnostics import Diagnostic

__all__ = ("SARIF_SCHEMA", "check_sarif", "write_check_sarif")

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _rules() -> list[dict[str, Any]]:
    return [
        {
            "id": code.name,
            "name": code.name,
            "shortDescription": {"text": code.summary},
            "help": {"text": code.hint},
            "defaultConfiguration": {"level": code.severity},
        }
        for code in CODES.values()
    ]


def _location(found: Diagnostic, base: str | None) -> dict[str, Any]:
    file = readable(str(found.file))
    uri = file
    if base is not None and os.path.isabs(file):
        relative = os.path.relpath(file, base)
        if not relative.startswith(".."):
            uri = relative
    artifact: dict[str, Any] = {"uri": uri.replace(os.sep, "/")}
    if not os.path.isabs(uri):
        artifact["uriBaseId"] = "%SRCROOT%"
    physical: dict[str, Any] = {"artifactLocation": artifact}
    if found.line:
        region = {"startLine": found.line}
        if found.column:
            region["startColumn"] = found.column
        physical["region"] = region
    return {"physicalLocation": physical}


def check_sarif(report: CheckDocument) -> str:
    """Return the SARIF log (JSON text) of a ``check`` report.

    Paths are made relative to ``$GITHUB_WORKSPACE`` when set, else to the
    manifest's directory, so that code-scanning shows them in the repository.
    """
    # As text (readable): a merged report's paths are, a path of this process may not be.
    base = readable(os.environ.get("GITHUB_WORKSPACE") or os.path.dirname(str(report.manifest)))
    index = {name: i for i, name in enumerate(CODES)}
    results = []
    for found in report.diagnostics:
        result: dict[str, Any] = {
            "ruleId": found.code,
            "level": found.severity,
            "message": {"text": found.message},
        }
        if found.code in index:
            result["ruleIndex"] = index[found.code]
        if found.file:
            result["locations"] = [_location(found, base)]
        if found.slug:
            result["properties"] = {"slug": found.slug}
        results.append(result)
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "codegenie-bench",
                        "version": __version__,
                        "rules": _rules(),
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": _file_uri(base)}},
                "results": results,
                **_cheat_properties(report),
            }
        ],
    }
    text = json.dumps(log, indent=2, ensure_ascii=True)
    if "\\ud" in text:  # a path the locale could not decode: write the text it stands for
        text = json.dumps(readable_data(log), indent=2, ensure_ascii=True)
    return text + "\n"


def _cheat_properties(report: CheckDocument) -> dict[str, Any]:
    """Return the run's ``properties`` with the cheat run (``{}`` without one).

    ``exploits``: what ``rubrics.exploits`` of the JSON report says, and
    ``verdicts``, each exploit's statuses per case.
    """
    rubrics = report.rubrics
    if rubrics is None or rubrics.exploits is None:
        return {}
    verdicts = [
        {
            "slug": envelope.slug,
            "case": envelope.case,
            "exploit": envelope.exploit,
            "statuses": list(envelope.statuses),
        }
        for envelope in rubrics.envelopes
        if envelope.side == "exploit"
    ]
    return {"properties": {"exploits": {**rubrics.exploits.to_json(), "verdicts": verdicts}}}


def write_check_sarif(report: CheckDocument, sink: Sink) -> None:
    """Write the SARIF log of a ``check`` report on stdout (the ``sarif`` format)."""
    sink.stdout.write(check_sarif(report))


def _file_uri(directory: str) -> str:
    """Return the ``file:`` URI of ``directory`` (each character of its name as UTF-8)."""
    from pathlib import Path  # noqa: PLC0415 - only to spell a file URI

    path = os.path.abspath(directory)
    try:
        return Path(path).as_uri() + "/"
    except UnicodeEncodeError:  # text the file system's encoding (ASCII under LC_ALL=C) lacks
        from urllib.parse import quote  # noqa: PLC0415 - only for such a name

        return "file://" + quote(readable(path)) + "/"
