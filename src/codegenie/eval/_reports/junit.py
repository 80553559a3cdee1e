"""JUnit XML of a ``check`` or ``grade`` report.

The shape is the common one CI systems read (the JUnit schema of Jenkins'
xUnit plugin, which the tests validate it against): ``testsuites`` holding one
``testsuite`` (``name``, ``tests``, ``failures``, ``errors``, ``skipped``,
``time``) holding ``testcase`` elements (``classname``, ``name``, ``time``),
each with at most one ``failure`` or ``error`` child (``message``, ``type``,
the details as text) or ``skipped`` child (``message``).

``check``: one test case per task class, failed by its error diagnostics
(its warnings too under ``--strict``); diagnostics of no task class form the
test case ``bench.toml``. ``grade``: one test case per case;
``failed`` is a failure, ``error`` an error, ``missing`` skipped.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import TYPE_CHECKING

from codegenie.eval._output import readable

if TYPE_CHECKING:
    from codegenie.eval._reports.documents import CheckDocument, GradeDocument, GradeSuiteDocument
    from codegenie.eval._reports.sink import Sink
    from codegenie.eval.diagnostics import Diagnostic
    from codegenie.eval.grading import GradeResult

__all__ = (
    "check_junit",
    "grade_junit",
    "grades_junit",
    "write_check_junit",
    "write_grade_junit",
    "write_grades_junit",
)

# XML 1.0 cannot hold most control characters even escaped: they are written as visible escapes.
_XML_INVALID = {c: f"\\x{c:02x}" for c in (*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20))}


def _text(value: object) -> str:
    return readable(str(value)).translate(_XML_INVALID)


def _render(
    suite_name: str,
    cases: Sequence[ET.Element],
    *,
    time: float,
    properties: Sequence[tuple[str, str]] = (),
) -> str:
    return _render_suites([_suite(suite_name, cases, time=time, properties=properties)])


def _render_suites(suites: Sequence[ET.Element]) -> str:
    root = ET.Element("testsuites", name="codegenie-bench")
    root.extend(suites)
    # The totals again on ``testsuites``, as far as the common schema has them (no ``skipped``).
    for key in ("tests", "failures", "errors"):
        root.set(key, str(sum(int(suite.get(key, "0")) for suite in suites)))
    root.set("time", f"{sum(float(suite.get('time', '0')) for suite in suites):.3f}")
    ET.indent(root)
    xml = ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
    # ASCII, every other character a reference (&#233;): exact under any locale, as JSON is.
    return xml.encode("ascii", "xmlcharrefreplace").decode("ascii")


def _suite(
    suite_name: str,
    cases: Sequence[ET.Element],
    *,
    time: float,
    properties: Sequence[tuple[str, str]] = (),
) -> ET.Element:
    counts = {
        kind: sum(case.find(kind) is not None for case in cases)
        for kind in ("failure", "error", "skipped")
    }
    suite = ET.Element(
        "testsuite",
        name=_text(suite_name),
        tests=str(len(cases)),
        failures=str(counts["failure"]),
        errors=str(counts["error"]),
        skipped=str(counts["skipped"]),
        time=f"{time:.3f}",
    )
    if properties:
        held = ET.SubElement(suite, "properties")
        for name, value in properties:
            ET.SubElement(held, "property", name=_text(name), value=_text(value))
    suite.extend(cases)
    return suite


def _case(classname: str, name: str, time: float = 0.0) -> ET.Element:
    return ET.Element("testcase", classname=_text(classname), name=_text(name), time=f"{time:.3f}")


def _outcome(case: ET.Element, kind: str, message: str, kind_type: str, body: str) -> None:
    element = ET.SubElement(case, kind, message=_text(message), type=_text(kind_type))
    element.text = _text(body)


def _diagnostic_line(d: Diagnostic) -> str:
    where = d.file or "codegenie-bench"
    if d.line is not None:
        where += f":{d.line}" + (f":{d.column}" if d.column is not None else "")
    line = f"{where}: {d.severity}[{d.code}]: {d.message}"
    return line + (f"\n  hint: {d.hint}" if d.hint else "")


def check_junit(report: CheckDocument) -> str:
    """Return the JUnit XML of a ``check`` report: one test case per task class.

    With a cheat run (``check --rubrics``), one test case more per case it
    ran exploits on (class ``cheat-run``, named ``SLUG/CASE``): failed when
    an exploit was graded ``passed``, each exploit's verdicts in its
    ``system-out``.
    """
    strict = report.strict
    by_slug: dict[str, list[Diagnostic]] = {slug: [] for slug in report.task_classes}
    for found in report.diagnostics:
        by_slug.setdefault(found.slug or "bench.toml", []).append(found)
    cases = []
    for slug in sorted(by_slug):
        case = _case("check", slug)
        failing = [d for d in by_slug[slug] if d.severity == "error" or (strict and d.severity)]
        if failing:
            codes = ", ".join(dict.fromkeys(d.code for d in failing))
            body = "\n".join(_diagnostic_line(d) for d in by_slug[slug])
            _outcome(case, "failure", f"{len(failing)} problem(s): {codes}", failing[0].code, body)
        elif by_slug[slug]:
            ET.SubElement(case, "system-out").text = _text(
                "\n".join(_diagnostic_line(d) for d in by_slug[slug])
            )
        cases.append(case)
    cases += _cheat_cases(report)
    return _render("check", cases, time=0.0)


def _cheat_cases(report: CheckDocument) -> list[ET.Element]:
    """Return a test case per case of the cheat run: its exploits' verdicts."""
    if report.rubrics is None:
        return []
    by_case: dict[tuple[str, str], list[tuple[str, tuple[str, ...]]]] = {}
    for envelope in report.rubrics.envelopes:
        if envelope.side == "exploit" and envelope.exploit is not None:
            by_case.setdefault((envelope.slug, envelope.case), []).append(
                (envelope.exploit, envelope.statuses)
            )
    cases = []
    for (slug, case_id), verdicts in sorted(by_case.items()):
        case = _case("cheat-run", f"{slug}/{case_id}")
        body = "\n".join(f"{name}: {', '.join(statuses)}" for name, statuses in verdicts)
        passing = [name for name, statuses in verdicts if "passed" in statuses]
        if passing:
            message = f"graded passed: {', '.join(passing)}"
            _outcome(case, "failure", message, "rubric-exploitable", body)
        else:
            ET.SubElement(case, "system-out").text = _text(body)
        cases.append(case)
    return cases


def grade_junit(report: GradeDocument) -> str:
    """Return the JUnit XML of a ``grade`` report: one test case per case.

    A result reused from an earlier run keeps that run's time, and says so
    in its ``system-out``; a case graded from samples lists them there. The
    suite's properties carry the run's identity and, with samples, pass@k.
    """
    return _render_suites([_grade_suite(report)])


def grades_junit(report: GradeSuiteDocument) -> str:
    """Return the JUnit XML of ``grade --all``: one test suite per task class."""
    return _render_suites([_grade_suite(document) for document in report.documents])


def _grade_suite(report: GradeDocument) -> ET.Element:
    """Return the test suite of one task class's ``grade`` report (see :func:`grade_junit`)."""
    grades = report.report
    task_class = grades.task_class
    cases = []
    total = 0.0
    for result in grades.results:
        duration = result.duration_s or 0.0
        total += duration
        case = _case(task_class, result.case, duration)
        status, reason = result.status, result.reason or ""
        if status == "failed":
            _outcome(case, "failure", reason, "failed", reason)
        elif status == "error":
            body = "\n".join(
                part for part in (reason, result.traceback or result.stderr_tail) if part
            )
            _outcome(case, "error", reason, result.limit or "error", body)
        elif status == "missing":
            ET.SubElement(case, "skipped", message=_text(reason))
        out = _grade_output(result)
        if out:
            ET.SubElement(case, "system-out").text = _text(out)
        cases.append(case)
    properties: list[tuple[str, str]] = []
    if grades.run is not None:
        run = grades.run
        properties += [(f"run.{k}", str(v)) for k, v in run.to_json().items() if v is not None]
    if grades.sampled or grades.pass_at is not None or grades.fail_under is not None:
        properties += [
            (f"pass@{k}", "" if value is None else f"{value:.6f}")
            for k, value in grades.pass_at_k().items()
        ]
    return _suite(f"grade {task_class}", cases, time=total, properties=properties)


def _grade_output(result: GradeResult) -> str:
    """Return what a case's ``system-out`` says: reused, and each of its samples."""
    lines = []
    if result.reused:
        lines.append("reused from an earlier run of the same case and candidate (its time)")
    for sample in result.samples or ():
        reused = ", reused" if sample.reused else ""
        took = f" in {sample.duration_s:.3f}s" if sample.duration_s is not None else ""
        lines.append(
            f"sample {sample.sample}: {sample.status}{took}{reused}: {sample.reason or ''}"
        )
    return "\n".join(lines)


def write_check_junit(report: CheckDocument, sink: Sink) -> None:
    """Write the JUnit XML of a ``check`` report on stdout (the ``junit`` format)."""
    sink.stdout.write(check_junit(report))


def write_grade_junit(report: GradeDocument, sink: Sink) -> None:
    """Write the JUnit XML of a ``grade`` report on stdout (the ``junit`` format)."""
    sink.stdout.write(grade_junit(report))


def write_grades_junit(report: GradeSuiteDocument, sink: Sink) -> None:
    """Write the JUnit XML of a ``grade --all`` report on stdout (the ``junit`` format)."""
    sink.stdout.write(grades_junit(report))
