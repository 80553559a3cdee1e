"""The ``html`` format: a self-contained page, every case in it, every hostile string inert.

The page is read back with :mod:`html.parser`, as a browser's tokenizer
would read it: what elements it holds (only the page's own), what its
attributes point at (nothing but ``#`` and ``data:``), and the JSON block
the script reads (the input's strings, exactly). ``tests/test_html_browser.py``
opens the same pages in a real Chromium.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
import textwrap
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegenie.eval._output import ResultStream, escape_control
from codegenie.eval._reports.compare import compare_reports
from codegenie.eval._reports.documents import GradeDocument
from codegenie.eval._reports.formats import FORMATS, commands_writing, render
from codegenie.eval._reports.html import compare_html, html_of, json_for_script
from codegenie.eval._reports.html_view import EMBED_BUDGET
from codegenie.eval._reports.reader import GradeFile, report_of
from codegenie.eval.errors import ReportsInvalid

from .factory import Bench, make_bench
from .html_documents import (
    HOSTILE,
    check_document,
    compare_document,
    diagnostic,
    grade_document,
    grade_result,
    with_results,
)

#: Every element the page may hold: its own, whatever the document said.
ELEMENTS = frozenset(
    {
        "html",
        "head",
        "meta",
        "title",
        "link",
        "style",
        "script",
        "body",
        "header",
        "h1",
        "h2",
        "span",
        "main",
        "section",
        "div",
        "dl",
        "dt",
        "dd",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "figure",
        "figcaption",
        "svg",
        "g",
        "text",
        "rect",
        "line",
        "noscript",
        "p",
        "code",
        "footer",
    }
)
#: The only attributes that may point anywhere, and where.
POINTERS = ("src", "href", "action", "formaction", "xlink:href", "srcset", "poster", "data")


class Page(HTMLParser):
    """A page as a browser's tokenizer reads it: its elements, attributes, scripts and text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[str] = []
        self.attributes: list[tuple[str, str, str | None]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.styles: list[str] = []
        self.text: list[str] = []
        self._raw: tuple[str, dict[str, str | None]] | None = None
        self._data: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append(tag)
        self.attributes += [(tag, name, value) for name, value in attrs]
        if tag in {"script", "style"}:
            self._raw, self._data = (tag, dict(attrs)), []

    def handle_endtag(self, tag: str) -> None:
        if self._raw is not None and tag == self._raw[0]:
            content = "".join(self._data)
            if tag == "script":
                self.scripts.append((self._raw[1], content))
            else:
                self.styles.append(content)
            self._raw = None

    def handle_data(self, data: str) -> None:
        (self._data if self._raw is not None else self.text).append(data)

    def data(self) -> dict[str, Any]:
        """The JSON block the script reads."""
        (block,) = [text for attrs, text in self.scripts if attrs.get("type") == "application/json"]
        found: dict[str, Any] = json.loads(block)
        return found

    def policy(self) -> str:
        (policy,) = [
            value
            for tag, name, value in self.attributes
            if tag == "meta" and name == "content" and value and "default-src" in value
        ]
        return policy


def assert_inert(text: str) -> Page:
    """The page's structure is its own whatever the data: its elements, pointers and scripts."""
    assert text.isascii()
    text.encode("utf-8")
    page = Page(text)
    assert set(page.elements) <= ELEMENTS, set(page.elements) - ELEMENTS
    for tag, name, value in page.attributes:
        assert not name.startswith("on"), (tag, name, value)
        if name in POINTERS:
            assert value is not None
            assert value == "#" or value.startswith(("#", "data:")), (tag, name, value)
        assert name != "style", (tag, name, value)  # the policy allows no style attribute
    assert [attrs for attrs, _ in page.scripts] == [
        {"type": "application/json", "id": "report-data"},
        {},
    ]
    assert len(page.styles) == 1
    assert page.elements.count("style") == 1
    assert page.elements.count("script") == 2
    return page


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


# -- the page ---------------------------------------------------------------------------------


def test_the_grade_page_holds_every_case_and_each_sample() -> None:
    document = grade_document(cases=20, samples=10)
    results = document.report.results
    page = assert_inert(html_of(document))
    rows = page.data()["rows"]
    assert [row["cells"][0] for row in rows] == [r.case for r in results]
    assert [row["cells"][1] for row in rows] == [r.status for r in results]
    assert [row["facets"]["tag"] for row in rows] == [list(r.tags) for r in results]
    for row, result in zip(rows, results, strict=True):
        samples = row["detail"]["samples"]
        assert result.samples is not None
        assert [s["cells"][0] for s in samples] == [s.sample for s in result.samples]
        assert [s["cells"][1] for s in samples] == [s.status for s in result.samples]
    text = " ".join(page.text)
    for shown in ("vuln-remediation", "nightly 42", "sha256:" + "ab" * 32, "2026-12-02T07:01:02Z"):
        assert shown in text
    pass_at_k = document.report.pass_at_k()
    assert set(pass_at_k) == {"1", "10"}
    for k in ("1", "10"):  # pass@1 and pass@10, the report's own figures
        rate = pass_at_k[k]
        assert rate is not None
        assert f"{rate * 100:.1f}%" in page.text


def test_a_document_without_the_new_keys_renders_too() -> None:
    """A grade report written before runs, tags, samples and pass@k were is read, and is a page.

    The reader reads it (each key left out is its model's default, each
    figure computed); the page renders what it read.
    """
    document = grade_document(cases=5, samples=0).to_json()
    for key in ("run", "sampled", "pass_at_k", "fail_under"):
        del document[key]
    for result in document["results"]:
        for key in ("tags", "candidate_digest", "reused", "samples_total", "samples_passed"):
            del result[key]
        del result["samples"]
    read = report_of("old.json", json.dumps(document))
    assert isinstance(read, GradeFile)
    page = assert_inert(html_of(GradeDocument(report=read.report)))
    rows = page.data()["rows"]
    assert [row["cells"][0] for row in rows] == [r["case"] for r in document["results"]]
    assert [column["label"] for column in page.data()["columns"]][:3] == ["case", "status", "score"]
    assert "samples passed" not in [column["label"] for column in page.data()["columns"]]


NONSENSE: dict[str, Any] = {
    "task_class": 3,
    "results": [
        {"case": "a", "status": "weird", "score": "high", "samples": "no", "tags": [1, "t"]},
        {"case": None, "duration_s": float("nan"), "wall_s": float("inf"), "verdict": [1]},
        "not a result",
    ],
    "run": "yesterday",
    "pass_at_k": {"x": 1, "2": "half"},
    "counts": [],
}


@pytest.mark.parametrize(
    "document",
    [
        NONSENSE,
        *({**NONSENSE, "task_class": "t", "results": [result]} for result in NONSENSE["results"]),
        {**NONSENSE, "task_class": "t", "results": []},
        {"diagnostics": [{"severity": 1}, None]},
        {"cases": [{"case": "a", "base": 1, "new": {}}]},
    ],
)
def test_nonsense_never_reaches_the_page_the_reader_refuses_it(document: dict[str, Any]) -> None:
    """A value of the wrong type, a number that is not finite: refused where a report is read.

    The page renders only typed reports; ``merge`` and ``compare`` read what
    they are given through the one reader, so such a value is refused there,
    naming where it is, rather than shown as absent on a page.
    """
    text = json.dumps(document)  # NaN and Infinity as JSON writes them
    with pytest.raises(ReportsInvalid) as refused:
        report_of("nonsense.json", text)
    assert refused.value.located
    assert all(problem.file == "nonsense.json" for problem in refused.value.located)
    with pytest.raises(ReportsInvalid):
        compare_reports(
            json.loads(text),
            grade_document(cases=1, samples=0).to_json(),
            base_name="nonsense.json",
            new_name="new.json",
        )


def test_the_policy_allows_only_the_pages_own_script_and_style_and_loads_nothing() -> None:
    page = assert_inert(html_of(grade_document(cases=3, samples=2)))
    policy = dict(part.strip().split(" ", 1) for part in page.policy().split(";"))
    ((_, script),) = [(attrs, text) for attrs, text in page.scripts if not attrs]
    assert policy == {
        "default-src": "'none'",
        "script-src": _hash(script),
        "style-src": _hash(page.styles[0]),
        "img-src": "data:",
        "base-uri": "'none'",
        "form-action": "'none'",
        "require-trusted-types-for": "'script'",
        "trusted-types": "'none'",
    }
    # Nothing that fetches: no URL with a scheme but data:, no @import, no url() in the style.
    text = html_of(grade_document(cases=3, samples=2))
    assert not re.search(r"https?:|//[a-z]|@import|url\(", text, re.IGNORECASE)


def test_the_script_builds_with_text_only() -> None:
    """No markup from strings: no innerHTML and its kin, no eval, in the page's script."""
    page = Page(html_of(check_document()))
    ((_, script),) = [(attrs, text) for attrs, text in page.scripts if not attrs]
    for sink in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "Function(",
    ):
        assert sink not in script
    assert "textContent" in script


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_strings_stay_text_in_the_html_and_exact_in_the_data(hostile: str) -> None:
    result = grade_result(hostile, "failed", reason=hostile, tags=[hostile, "plain"])
    result = result.model_copy(
        update={
            "stderr_tail": hostile,
            "traceback": hostile,
            "verdict": {"passed": False, hostile: hostile},
        }
    )
    document = grade_document(cases=2, samples=0, run_name=hostile, task_class=hostile)
    document = with_results(document, [result, *document.report.results])
    text = html_of(document)
    page = assert_inert(text)
    row = page.data()["rows"][0]
    assert row["cells"][0] == hostile
    assert row["cells"][-1] == hostile
    assert row["facets"]["tag"] == [hostile, "plain"]
    blocks = dict(row["detail"]["blocks"])
    assert blocks["stderr tail"] == hostile
    assert json.loads(blocks["verdict (own keys)"]) == {hostile: hostile}
    # Shown as text where the HTML holds it: the run's name, the task class.
    assert escape_control(hostile) in page.text
    assert f"codegenie-bench grade {escape_control(hostile)}" in " ".join(page.text)
    for raw in ("<script>window", "<img", "<svg onload", "</style><style>", "<!--"):
        assert raw not in text


def test_a_hostile_check_and_compare_document_stay_inert() -> None:
    diagnostics = [
        diagnostic(hostile, "error", hostile, slug=hostile, hint=hostile) for hostile in HOSTILE
    ]
    document = check_document(diagnostics, manifest=HOSTILE[0])
    page = assert_inert(html_of(document))
    rows = page.data()["rows"]
    assert [row["cells"][1] for row in rows] == list(HOSTILE)
    assert [row["cells"][4] for row in rows] == list(HOSTILE)
    assert page.data()["facets"][1]["options"] == sorted(HOSTILE)

    compared = compare_document(cases=len(HOSTILE))
    new_run = compared.new.run
    assert new_run is not None
    compared = dataclasses.replace(
        compared,
        cases=tuple(
            dataclasses.replace(
                row,
                case=hostile,
                new=None if row.new is None else dataclasses.replace(row.new, reason=hostile),
            )
            for row, hostile in zip(compared.cases, HOSTILE, strict=True)
        ),
        base=dataclasses.replace(compared.base, file=HOSTILE[1]),
        new=dataclasses.replace(compared.new, run=new_run.model_copy(update={"name": HOSTILE[1]})),
    )
    page = assert_inert(html_of(compared))
    assert [row["cells"][0] for row in page.data()["rows"]] == list(HOSTILE)
    assert escape_control(HOSTILE[1]) in page.text


_TEXT = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=200))


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
@given(case=_TEXT, reason=_TEXT, tag=_TEXT, name=_TEXT)
def test_any_text_is_inert_and_round_trips(case: str, reason: str, tag: str, name: str) -> None:
    """Whatever the strings, the page holds only its own elements and the data holds them exactly."""
    document = grade_document(cases=0, samples=0, run_name=name, task_class=name)
    document = with_results(document, [grade_result(case, "failed", reason=reason, tags=[tag])])
    page = assert_inert(html_of(document))
    (row,) = page.data()["rows"]
    assert row["cells"][0] == case
    assert row["cells"][-1] == reason
    assert row["cells"][-2] == [tag]
    assert page.data()["facets"][1]["options"] == [tag]

    check = check_document([diagnostic(case, "warning", reason, slug=tag, hint=name)])
    page = assert_inert(html_of(check))
    (row,) = page.data()["rows"]
    assert row["cells"][1:3] == [case, tag]
    assert row["cells"][4] == reason
    assert row["detail"]["blocks"] == [["hint", name]] if name else True


def test_the_charts_draw_nothing_one_value_and_hostile_labels() -> None:
    from codegenie.eval._reports.html_svg import bars_svg, histogram_svg
    from codegenie.eval._reports.html_view import Bars, Histogram

    charts = {
        "empty histogram": histogram_svg(Histogram("durations", (), "s")),
        "one value": histogram_svg(Histogram("durations", (2.0, 2.0, 2.0), "s")),
        "spread": histogram_svg(Histogram("durations", tuple(x / 10 for x in range(100)), "s")),
        "no bars": bars_svg(Bars("by status", ())),
        "hostile": bars_svg(Bars(HOSTILE[0], ((HOSTILE[1], 3, "other"), ("x", 0, "passed")))),
    }
    for name, svg in charts.items():
        page = Page(svg)
        assert set(page.elements) <= ELEMENTS, name
        assert not [a for a in page.attributes if a[1].startswith("on")], name
    assert "no durations" in charts["empty histogram"]
    assert "<title>2 to 2 s: 3</title>" in charts["one value"]
    assert charts["spread"].count('class="hist"') == 10  # sqrt(100) bins
    assert escape_control(HOSTILE[1]) + ": 3" in Page(charts["hostile"]).text


def test_every_status_has_a_bar_even_at_zero() -> None:
    document = grade_document(cases=3, samples=0)
    assert 0 in document.report.counts().values()  # a status no case has is still a bar, at 0
    page = Page(html_of(document))
    bars = [text.split(":")[0] for text in page.text if re.fullmatch(r"[a-z]+: \d+", text)]
    assert bars == ["passed", "failed", "missing", "error"]
    check = Page(html_of(check_document([])))
    assert "error: 0" in check.text
    assert "warning: 0" in check.text


def test_json_for_script_cannot_close_its_block() -> None:
    data = {"</script>": "<!--<script>&amp;\u2028\u2029", "x": "\ud800 \x00"}
    text = json_for_script(data)
    assert text.isascii()
    for unsafe in ("<", ">", "&", "\u2028", "\u2029"):
        assert unsafe not in text
    assert json.loads(text) == data


def test_lone_surrogates_and_nul_make_a_valid_utf8_page() -> None:
    """A path the locale could not decode (lone surrogates) is shown as what it stands for."""
    name = "d\udcc3\udca9p\udcc3\udcb4t \udcff \ud800 nul\x00"
    document = grade_document(cases=1, samples=0, run_name=name)
    (result,) = document.report.results
    document = with_results(document, [result.model_copy(update={"reason": name})])
    text = html_of(document)
    text.encode("utf-8")  # strict: no surrogate survives
    page = assert_inert(text)
    reason = page.data()["rows"][0]["cells"][-1]
    assert reason.startswith("dépôt \\xff ")
    assert "\x00" in reason  # the data are exact; the script shows it as \x00
    assert "dépôt" in " ".join(page.text)


def test_long_texts_are_cut_and_a_page_stays_bounded() -> None:
    """10 MB of stderr in every sample is not 10 MB in the page: each text cut, all of them shared."""
    document = grade_document(cases=20, samples=10)
    huge = "x" * 1_000_000 + "THE END"
    document = with_results(
        document,
        [
            result.model_copy(
                update={
                    "reason": huge,
                    "samples": tuple(
                        sample.model_copy(
                            update={
                                "stderr_tail": huge,
                                "traceback": huge,
                                "reason": huge,
                                "verdict": {"log": huge},
                            }
                        )
                        for sample in result.samples or ()
                    ),
                }
            )
            for result in document.report.results
        ],
    )
    text = html_of(document)
    page = assert_inert(text)
    assert len(text) < 2 * EMBED_BUDGET + 200_000, len(text)
    first = page.data()["rows"][0]
    assert first["cells"][-1].startswith("xxxx")
    assert "more characters; --format json has them all" in first["cells"][-1]
    tail = dict(first["detail"]["samples"][0]["blocks"])["stderr tail"]
    assert tail.endswith("THE END")  # a tail keeps its end


def test_164_cases_of_10_samples_make_a_page_of_a_few_hundred_kib() -> None:
    """The size is asserted; the time only reported (a loaded machine is slow, not wrong)."""
    document = grade_document(cases=164, samples=10)
    start = time.perf_counter()
    text = html_of(document)
    elapsed = time.perf_counter() - start
    assert len(text.encode()) < 512 * 1024, len(text)
    assert len(Page(text).data()["rows"]) == 164
    print(f"164 x 10: {len(text.encode()) / 1024:.0f} KiB in {elapsed * 1000:.0f} ms")


# -- the renderers, through the table of formats ------------------------------------------------


class _Sink:
    def __init__(self) -> None:
        self.buffer = io.StringIO()
        self.stdout = ResultStream(self.buffer)
        self.stderr = io.StringIO()
        self.quiet = False

    def result(self, document: dict[str, Any], text: str) -> None:
        raise AssertionError

    def note(self, text: str) -> None:
        raise AssertionError

    def diagnostics(self, found: object, *, stream: object, base: object) -> None:
        raise AssertionError


def test_the_format_is_in_the_table_for_check_grade_and_merge() -> None:
    assert FORMATS["html"].description == "HTML page"
    assert commands_writing("html") == ("check", "grade", "merge", "compare")


def test_compare_html_writes_the_page_of_a_compare_document() -> None:
    sink = _Sink()
    document = compare_document()
    compare_html(document, sink)  # type: ignore[arg-type]
    page = assert_inert(sink.buffer.getvalue())
    assert [row["cells"][0] for row in page.data()["rows"]] == [c.case for c in document.cases]
    assert [row["cells"][1] for row in page.data()["rows"]] == [c.change for c in document.cases]
    assert "+10.0 points" in page.text
    assert not sink.stderr.getvalue()


def test_the_typed_documents_render_through_the_table() -> None:
    from codegenie.eval._reports.documents import CheckDocument, GradeDocument
    from codegenie.eval.diagnostics import Diagnostic
    from codegenie.eval.grading import GradeReport, GradeResult

    report = GradeReport(
        task_class="alpha",
        results=(
            GradeResult(case="a", status="passed", score=1.0, reason="ok", duration_s=0.1),
            GradeResult(case="b", status="missing", reason=HOSTILE[0]),
        ),
    )
    sink = _Sink()
    render("html", GradeDocument(report=report), sink)  # type: ignore[arg-type]
    page = assert_inert(sink.buffer.getvalue())
    assert [row["cells"][0] for row in page.data()["rows"]] == ["a", "b"]
    assert page.data()["rows"][1]["cells"][-1] == HOSTILE[0]

    found = Diagnostic(code="module-missing", severity="error", message=HOSTILE[1], slug="x")
    check = CheckDocument(
        manifest=Path("/b/bench.toml"),
        ok=False,
        checked=1,
        declared=1,
        diagnostics=(found,),
        strict=False,
        task_classes=("x",),
        summary="1 error",
    )
    sink = _Sink()
    render("html", check, sink)  # type: ignore[arg-type]
    page = assert_inert(sink.buffer.getvalue())
    assert page.data()["rows"][0]["cells"][4] == HOSTILE[1]


# -- the command line ---------------------------------------------------------------------------

RUBRIC = """\
import json, sys
from pathlib import Path

candidate = Path(sys.argv[2])
reason = (candidate / "reason.txt").read_text(encoding="utf-8")
passed = reason.startswith("pass")
print(json.dumps({"passed": passed, "score": 1.0 if passed else 0.0, "reason": reason, "tests_run": 3}))
sys.exit(0 if passed else 1)
"""


def script() -> str:
    found = shutil.which("codegenie-bench", path=str(Path(sys.executable).parent))
    assert found, "the codegenie-bench console script is not installed"
    return found


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [script(), *args], cwd=cwd, capture_output=True, text=True, timeout=300, check=False
    )


@pytest.fixture
def graded(tmp_path: Path) -> Bench:
    """A bench whose alpha has three cases: one solved, one whose reason is hostile, one missing."""
    made = make_bench(tmp_path / "home", "alpha", parts=True)
    package = made.root / "alpha"
    (package / "rubric.py").write_text(RUBRIC, encoding="utf-8")
    cases = package / "cases"
    for case_id in ("evil", "gone"):
        shutil.copytree(cases / "example", cases / case_id)
    (cases / "evil" / "case.toml").write_text(
        textwrap.dedent("""tags = ["x\\"y", "slow"]\n"""), encoding="utf-8"
    )
    for case_id, reason in (("example", "pass: all good"), ("evil", HOSTILE[0] + HOSTILE[1])):
        candidate = made.base / "candidates" / case_id
        candidate.mkdir(parents=True)
        (candidate / "reason.txt").write_text(reason, encoding="utf-8")
    return made


def test_grade_writes_the_page_to_its_output_file(graded: Bench) -> None:
    """``grade --format html --output-file``: nothing on stdout, the page in the file, exit 1."""
    args = ("grade", "alpha", "candidates", "--format", "html", "--sandbox", "none")
    done = run(graded.base, *args, "--output-file", "r.html")
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    page = assert_inert((graded.base / "r.html").read_text(encoding="utf-8"))
    rows = {row["cells"][0]: row for row in page.data()["rows"]}
    assert set(rows) == {"example", "evil", "gone"}
    assert rows["evil"]["cells"][1] == "failed"
    assert rows["evil"]["cells"][-1] == HOSTILE[0] + HOSTILE[1]
    assert rows["gone"]["cells"][1] == "missing"
    assert "codegenie-bench grade alpha" in " ".join(page.text)

    on_stdout = run(graded.base, *args)
    assert on_stdout.returncode == 1, on_stdout.stderr
    assert on_stdout.stdout.startswith("<!DOCTYPE html>\n")
    assert_inert(on_stdout.stdout)


def test_check_and_merge_write_the_page(graded: Bench) -> None:
    done = run(graded.base, "check", "--format", "html", "--output-file", "check.html")
    assert done.returncode == 0, done.stderr
    page = assert_inert((graded.base / "check.html").read_text(encoding="utf-8"))
    assert page.data()["rows"] == []
    assert "passed" in page.text

    for shard in ("1/2", "2/2"):
        name = f"grade-{shard[0]}.json"
        args = ("grade", "alpha", "candidates", "--sandbox", "none", "--shard", shard)
        sharded = run(graded.base, *args, "--format", "json", "--output-file", name)
        assert sharded.returncode in {0, 1}, sharded.stderr
    merged = run(graded.base, "merge", "grade-1.json", "grade-2.json", "--format", "html")
    assert merged.returncode == 1, merged.stderr
    page = assert_inert(merged.stdout)
    assert sorted(row["cells"][0] for row in page.data()["rows"]) == ["evil", "example", "gone"]
    assert "merged reports" in page.text


# -- the node that made each run (an executor of several machines) ---------------------------------


def test_the_node_of_each_run_is_on_the_page_and_a_filter() -> None:
    """Each result's node in its detail, each sample's in a column, and a facet of nodes."""
    single = grade_document(cases=4, samples=0)
    single = with_results(
        single,
        [
            result.model_copy(update={"node": f"node-{index % 2}"})
            for index, result in enumerate(single.report.results)
        ],
    )
    data = assert_inert(html_of(single)).data()
    assert [f for f in data["facets"] if f["key"] == "node"] == [
        {"key": "node", "label": "node", "options": ["node-0", "node-1"]}
    ]
    for index, row in enumerate(data["rows"]):
        assert row["facets"]["node"] == [f"node-{index % 2}"]
        assert ["node", f"node-{index % 2}"] in row["detail"]["fields"]
    sampled = grade_document(cases=2, samples=3)
    sampled = with_results(
        sampled,
        [
            result.model_copy(
                update={
                    "samples": tuple(
                        sample.model_copy(update={"node": f"node-{number}"})
                        for number, sample in enumerate(result.samples or ())
                    )
                }
            )
            for result in sampled.report.results
        ],
    )
    data = assert_inert(html_of(sampled)).data()
    assert data["sample_columns"][-1]["label"] == "node"
    for row in data["rows"]:
        assert [s["cells"][-1] for s in row["detail"]["samples"]] == ["node-0", "node-1", "node-2"]
        assert row["facets"]["node"] == ["node-0", "node-1", "node-2"]


def test_a_local_report_has_no_node_column_or_filter() -> None:
    data = assert_inert(html_of(grade_document(cases=3, samples=2))).data()
    assert "node" not in [f["key"] for f in data["facets"]]
    assert "node" not in [c["label"] for c in data["sample_columns"]]
    assert all("node" not in row["facets"] for row in data["rows"])
