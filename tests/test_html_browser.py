"""The ``html`` page in a real headless Chromium: it loads clean, sorts, filters, and stays inert.

The browser is Debian's ``chromium``, driven over the DevTools protocol by
``tests/_chromium.py`` (the standard library only). Without it on ``PATH``
these tests are skipped, with the reason, unless ``CI`` is set: there they
fail, so that a CI machine without a browser cannot pass them silently
(``.ci/run`` installs it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from codegenie.eval._output import escape_control
from codegenie.eval._reports.documents import GradeDocument
from codegenie.eval._reports.html import html_of

from ._chromium import BrowserError, Chromium, chromium_path, open_chromium
from .html_documents import (
    HOSTILE,
    check_document,
    compare_document,
    grade_document,
    grade_result,
    with_results,
)

# One browser for the module, on one worker.
pytestmark = pytest.mark.xdist_group("chromium")

PWN_IMG = '<img src=x onerror="window.__pwned=1">'
PWN_SCRIPT = "</script><script>window.__pwned=1</script>"
ROWS = "Array.from(document.querySelectorAll('#cases > tbody > tr.row'))"
VISIBLE = f"{ROWS}.filter((tr) => !tr.hidden)"


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    """A headless Chromium for the module; its whole process group is killed at the end."""
    executable = chromium_path()
    if executable is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not on PATH and CI is set: the browser tests must run in CI")
        pytest.skip(
            "chromium is not on PATH (Debian: apt-get install chromium); CI makes this fail"
        )
    with open_chromium(executable, tmp_path_factory.mktemp("chromium-profile")) as opened:
        yield opened


def load(browser: Chromium, path: Path, text: str) -> None:
    """Write the page to ``path``, open it, and check it loaded without a single error."""
    path.write_text(text, encoding="utf-8")
    browser.open(path.as_uri())
    assert browser.evaluate("document.readyState") == "complete"
    assert browser.errors() == []


def column_texts(browser: Chromium, column: int, rows: str = VISIBLE) -> list[str]:
    """The text of one column (0: the toggle) of the table's rows, in the order shown."""
    texts: list[str] = browser.evaluate(f"{rows}.map((tr) => tr.cells[{column}].textContent)")
    return texts


def choose(browser: Chromium, facet: str, option: str) -> None:
    """Choose ``option`` in the filter of ``facet`` ("" for all), as a person would."""
    browser.evaluate(
        f"""(() => {{
            const select = document.querySelector('select[data-facet="{facet}"]');
            const wanted = {json.dumps(option)};
            const found = Array.from(select.options).find((o) =>
                wanted === "" ? o.value === "" : o.textContent === wanted);
            select.value = found.value;
            select.dispatchEvent(new Event("change", {{bubbles: true}}));
        }})()"""
    )


def search(browser: Chromium, text: str) -> None:
    browser.evaluate(
        f"""(() => {{
            const input = document.getElementById("filter-text");
            input.value = {json.dumps(text)};
            input.dispatchEvent(new Event("input", {{bubbles: true}}));
        }})()"""
    )


def sort_by(browser: Chromium, label: str) -> None:
    browser.evaluate(
        f"""Array.from(document.querySelectorAll('#cases thead button'))
            .find((b) => b.textContent === {json.dumps(label)}).click()"""
    )


def _number(text: str) -> float:
    return float("inf") if text == "-" else float(text)


@pytest.fixture(scope="module")
def grade(tmp_path_factory: pytest.TempPathFactory) -> GradeDocument:
    """164 cases of 10 samples, two of them with a reason meant to run a script."""
    document = grade_document(cases=164, samples=10, run_name=PWN_SCRIPT)
    results = list(document.report.results)
    results[3] = results[3].model_copy(update={"reason": PWN_IMG})
    results[7] = results[7].model_copy(update={"reason": PWN_SCRIPT})
    results[9] = results[9].model_copy(update={"tags": (PWN_IMG, 'a "quoted" tag')})
    return with_results(document, results)


def test_the_grade_page_loads_clean_holds_every_case_and_stays_inert(
    browser: Chromium, grade: GradeDocument, tmp_path: Path
) -> None:
    load(browser, tmp_path / "grade.html", html_of(grade))
    results = grade.report.results
    assert browser.evaluate(f"{ROWS}.length") == 164
    assert column_texts(browser, 1) == [r.case for r in results]
    # The hostile strings ran nothing and are there, as text.
    assert browser.evaluate("typeof window.__pwned") == "undefined"
    assert browser.evaluate("document.querySelectorAll('img, iframe, object, embed').length") == 0
    assert browser.evaluate("document.scripts.length") == 2
    reasons = column_texts(browser, 10)
    assert reasons[3] == PWN_IMG
    assert reasons[7] == PWN_SCRIPT
    assert column_texts(browser, 9)[9] == f'{PWN_IMG}, a "quoted" tag'
    assert PWN_SCRIPT in browser.evaluate("document.querySelector('#summary').textContent")

    png = browser.screenshot()
    shot = tmp_path / "grade.png"
    shot.write_bytes(png)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert shot.stat().st_size > 10_000
    assert browser.errors() == []


def test_the_grade_table_filters_by_status_tag_and_text(
    browser: Chromium, grade: GradeDocument, tmp_path: Path
) -> None:
    load(browser, tmp_path / "grade.html", html_of(grade))
    results = grade.report.results
    for status in ("failed", "error", "passed"):
        choose(browser, "status", status)
        wanted = [r.case for r in results if r.status == status]
        assert column_texts(browser, 1) == wanted, status
        assert browser.evaluate("document.getElementById('shown').textContent") == (
            f"{len(wanted)} of 164 cases"
        )
    choose(browser, "status", "")
    choose(browser, "tag", "slow")
    assert column_texts(browser, 1) == [r.case for r in results if "slow" in r.tags]
    choose(browser, "tag", PWN_IMG)
    assert column_texts(browser, 1) == [results[9].case]
    choose(browser, "tag", "")
    search(browser, "CVE-2024-0001")  # the search ignores case
    assert column_texts(browser, 1) == [f"cve-2024-{i:05d}" for i in range(10, 20)]
    search(browser, "")
    assert len(column_texts(browser, 1)) == 164
    assert browser.errors() == []


def test_the_grade_table_sorts_by_a_click_on_a_column(
    browser: Chromium, grade: GradeDocument, tmp_path: Path
) -> None:
    results = list(grade.report.results)
    results[5] = results[5].model_copy(update={"score": None})
    grade = with_results(grade, results)
    load(browser, tmp_path / "grade.html", html_of(grade))
    sort_by(browser, "score")
    scores = [_number(text) for text in column_texts(browser, 3)]
    assert scores == sorted(scores)
    assert column_texts(browser, 3)[-1] == "-"  # an empty cell last
    assert (
        browser.evaluate(
            "document.querySelector('#cases thead th[aria-sort=\"ascending\"]').textContent"
        )
        == "score"
    )
    sort_by(browser, "score")
    descending = [_number(text) for text in column_texts(browser, 3)]
    assert descending[:-1] == sorted(descending[:-1], reverse=True)
    assert column_texts(browser, 3)[-1] == "-"  # last either way
    sort_by(browser, "case")
    cases = column_texts(browser, 1)
    assert cases == sorted(cases)
    # Sorted and filtered at once.
    choose(browser, "status", "failed")
    sort_by(browser, "case")
    failed = sorted((r.case for r in grade.report.results if r.status == "failed"), reverse=True)
    assert column_texts(browser, 1) == failed
    assert browser.errors() == []


def test_a_case_expands_to_its_samples_and_their_logs(
    browser: Chromium, grade: GradeDocument, tmp_path: Path
) -> None:
    load(browser, tmp_path / "grade.html", html_of(grade))
    index = next(i for i, r in enumerate(grade.report.results) if r.status == "error")
    result = grade.report.results[index]
    assert result.samples is not None
    assert browser.evaluate("document.querySelectorAll('tr.detail').length") == 0
    browser.evaluate(f"{ROWS}[{index}].querySelector('button.toggle').click()")
    detail = f"{ROWS}[{index}].nextElementSibling"
    assert browser.evaluate(f"{detail}.className") == "detail"
    samples = browser.evaluate(
        f"Array.from({detail}.querySelectorAll('table.samples tbody tr'))"
        ".map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent])"
    )
    assert samples == [[s.sample, s.status] for s in result.samples]
    logs = browser.evaluate(
        f"Array.from({detail}.querySelectorAll('details pre')).map((pre) => pre.textContent)"
    )
    assert any("RuntimeError: boom" in log for log in logs)
    # Filtered out, the case hides its open detail too; back, it shows it again.
    status = "passed" if result.status != "passed" else "failed"
    choose(browser, "status", status)
    assert browser.evaluate(f"{detail}.hidden") is True
    choose(browser, "status", "")
    assert browser.evaluate(f"{detail}.hidden") is False
    browser.evaluate(f"{ROWS}[{index}].querySelector('button.toggle').click()")
    assert browser.evaluate(f"{detail}.hidden") is True
    assert browser.errors() == []


def test_every_hostile_string_is_text_in_the_browser(browser: Chromium, tmp_path: Path) -> None:
    document = grade_document(cases=0, samples=0, run_name=HOSTILE[0], task_class=HOSTILE[1])
    document = with_results(
        document,
        [
            grade_result(f"case-{i}", "failed", reason=hostile, tags=[hostile]).model_copy(
                update={"stderr_tail": hostile}
            )
            for i, hostile in enumerate(HOSTILE)
        ],
    )
    load(browser, tmp_path / "hostile.html", html_of(document))
    assert browser.evaluate("typeof window.__pwned") == "undefined"
    assert browser.evaluate("document.querySelectorAll('img, svg[onload], iframe').length") == 0
    shown = browser.evaluate(
        r"""Array.from(document.querySelectorAll('#cases > tbody > tr.row'))
            .map((tr) => tr.cells[tr.cells.length - 1].textContent)"""
    )
    # As the text format shows them: control characters escaped, the rest exactly.
    assert shown == [escape_control(hostile) for hostile in HOSTILE]
    assert shown[5] == "nul\\x00 bell\\x07 esc\\x1b[31m \\u202eevil"
    assert browser.evaluate("document.title").startswith(f"codegenie-bench grade {HOSTILE[1]}")
    assert browser.errors() == []


def test_the_check_page_filters_by_severity_code_and_task_class(
    browser: Chromium, tmp_path: Path
) -> None:
    document = check_document()
    load(browser, tmp_path / "check.html", html_of(document))
    assert browser.evaluate(f"{ROWS}.length") == 4
    choose(browser, "severity", "warning")
    assert column_texts(browser, 2) == ["timeout-tight", "manifest-unused-root"]
    choose(browser, "severity", "")
    choose(browser, "task class", "beta")
    assert column_texts(browser, 2) == ["golden-fails", "timeout-tight"]
    choose(browser, "code", "golden-fails")
    assert column_texts(browser, 2) == ["golden-fails"]
    assert browser.errors() == []


def test_the_compare_page_shows_each_change(browser: Chromium, tmp_path: Path) -> None:
    document = compare_document(cases=30)
    load(browser, tmp_path / "compare.html", html_of(document))
    assert browser.evaluate(f"{ROWS}.length") == 30
    choose(browser, "change", "regressed")
    wanted = [c.case for c in document.cases if c.change == "regressed"]
    assert column_texts(browser, 1) == wanted
    bars = browser.evaluate(
        "Array.from(document.querySelectorAll('#charts g.bar title')).map((t) => t.textContent)"
    )
    assert bars == [f"{change}: {n}" for change, n in document.changes.items()]
    assert browser.errors() == []


def test_what_the_policy_stops_is_stopped_and_reported(browser: Chromium, tmp_path: Path) -> None:
    """The harness sees errors: an image the policy refuses, a script it does not know, innerHTML."""
    text = html_of(check_document())
    tampered = text.replace(
        "<footer>",
        '<img src="http://127.0.0.1:9/x.png"><script>window.__pwned=1</script><footer>',
    )
    (tmp_path / "tampered.html").write_text(tampered, encoding="utf-8")
    browser.open((tmp_path / "tampered.html").as_uri())
    assert browser.evaluate("typeof window.__pwned") == "undefined"
    # The browser reports both violations, the image's and the inline script's, as errors.
    reported = [e["params"].get("entry", {}).get("text", "") for e in browser.errors()]
    assert any("Content Security Policy" in text and "img-src" in text for text in reported)
    assert any("Content Security Policy" in text and "script-src" in text for text in reported)

    load(browser, tmp_path / "clean.html", text)
    with pytest.raises(BrowserError, match="TrustedHTML"):  # Trusted Types: no string markup
        browser.evaluate("document.body.innerHTML = '<b>markup</b>'")


def test_ci_installs_chromium_before_the_suite_runs() -> None:
    """.ci/run installs Debian's chromium before pytest, and bubblewrap after it, as before."""
    ci = (Path(__file__).resolve().parent.parent / ".ci" / "run").read_text(encoding="utf-8")
    suite = ci.index(".venv/bin/python -m pytest\n")
    assert ci.index("apt_install chromium") < suite
    assert ci.index("apt_install bubblewrap") > suite
