"""The report as HTML (``report.to_html()``, ``_repr_html_``): reports from real pipeline runs (a DPC test that
chose a minority result, an execution trace with probes) rendered to one self-contained page; hostile values
from the question, the model and the database escaped; nothing fetched; and the page rendered in headless
Chromium: the DOM it builds, a screenshot that is not blank, wide tables that scroll inside their box.

``python tests/test_report_html.py`` writes docs/report.png, the picture on the docs' report page, from the DPC run."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import fakes
import pytest
import sqlalchemy as sa
from backends import load_shop
from fakes import fenced

from verifiedsql.guard.sandbox import Sandbox
from verifiedsql.llm.base import ChatRequest
from verifiedsql.report import (
    Consensus,
    Exploration,
    Review,
    ReviewRound,
    ReviewVerdict,
    VerificationReport,
)
from verifiedsql.report_html import ROOT_CLASS

ROOT = Path(__file__).parents[1]
QUESTION = "How many different countries do our customers come from?"
HOSTILE_QUESTION = QUESTION + " <script>alert('question')</script>"
ALL_ROWS = "SELECT COUNT(country) FROM customers"  # the majority's (wrong) reading
DISTINCT = "SELECT COUNT(DISTINCT country) FROM customers"
BROKEN = "SELECT COUNT(DISTINCT nation) FROM customers"  # no such column: an error, refined without success
STILL_BROKEN = "SELECT COUNT(DISTINCT c.nation) FROM customers AS c"
# model output with markup in it: it must stay text inside the <pre>
SOLVER = ("```python\n# unique countries </pre><script>alert('solver')</script>\n"
          "result = pd.DataFrame({'n': [customers['country'].nunique()]})\n```")
BRAZIL = "How many customers come from brazil?"
WRONG = "SELECT COUNT(*) FROM customers WHERE country = 'brazil'"
RIGHT = "SELECT COUNT(*) FROM customers WHERE country = 'Brazil'"
HOSTILE_COUNTRY = "<img src=x onerror=alert('database')>"  # a stored value a probe shows

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed (scripts/setup.sh installs Debian's chromium package)")


def dpc_report(directory: Path, question: str = QUESTION, solver: str = SOLVER) -> VerificationReport:
    """Five candidates: two majority ones of the wrong reading, two of the right one and one that fails;
    DPC's pandas solver agrees with the minority, which is chosen. Verify and grounding are on too."""
    sqls = {0: ALL_ROWS, 1: DISTINCT, 2: ALL_ROWS, 3: DISTINCT, 4: BROKEN}

    def script(request: ChatRequest) -> str:
        if request.purpose == "generate":
            return fenced(sqls[request.seed or 0])
        if request.purpose == "refine":
            return fenced(STILL_BROKEN)
        if request.purpose == "repair":  # verify's, of the majority's SQL
            return "I cannot fix it."
        if request.purpose == "solver":
            return solver
        raise AssertionError(f"unexpected {request.purpose} call")

    engine = load_shop(sa.create_engine(f"sqlite:///{directory / 'shop.db'}"))
    try:
        _, report, _ = fakes.ask(engine, question, script, candidates=len(sqls), dpc=True, verify=True,
                                 ground_values=True, constraint_repair=False)
    finally:
        engine.dispose()
    return report


def trace_report(directory: Path) -> VerificationReport:
    """One wrong candidate ('brazil'), a probe that sees the stored values (a hostile one among them), and an
    execution trace whose rebuilt SQL ('Brazil') is accepted."""
    engine = load_shop(sa.create_engine(f"sqlite:///{directory / 'shop.db'}"))
    with engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO customers (id, name, country, joined) VALUES (99, 'x', :c, '2021-01-01')"),
                     {"c": HOSTILE_COUNTRY})
    seen = "SELECT DISTINCT country FROM customers WHERE country = 'Brazil' OR id = 99"
    probes = [json.dumps({"action": "probe", "probe_sql": seen,
                          "value_mappings": {"brazil": "Brazil", "mars": "Mars"},
                          "relevant_columns": {"customers": ["country"]}}),
              json.dumps({"action": "done"})]

    def script(request: ChatRequest) -> str:
        if request.purpose in ("generate", "refine"):
            return fenced(WRONG)
        if request.purpose == "probe":
            return probes.pop(0)
        if request.purpose == "vet-step":
            first = "Write step 1." in request.messages[1]["content"]
            code = "result = customers[customers['country'] == 'Brazil']" if first else "result = len(result)"
            return f"```python\n{code}\n```"
        if request.purpose == "vet-stop":
            return "YES" if "Step 2 (accepted)" in request.messages[-1]["content"] else "NO"
        if request.purpose == "vet-sql":
            return fenced(RIGHT)
        if request.purpose == "vet-question":
            return "How many customers are from Brazil?"
        raise AssertionError(f"unexpected {request.purpose} call")

    try:
        _, report, _ = fakes.ask(engine, BRAZIL, script, candidates=1, vet=True, probe=True, check_literals=False)
    finally:
        engine.dispose()
    return report


@pytest.fixture(scope="module")
def dpc(tmp_path_factory) -> VerificationReport:
    if not Sandbox().available():
        pytest.skip("bubblewrap cannot run here: the DPC solver needs the sandbox")
    report = dpc_report(tmp_path_factory.mktemp("dpc"), HOSTILE_QUESTION)
    assert report.dpc is not None and report.dpc.status == "decided" and report.sql == DISTINCT, report.summary()
    return report


@pytest.fixture(scope="module")
def traced(tmp_path_factory) -> VerificationReport:
    if not Sandbox().available():
        pytest.skip("bubblewrap cannot run here: VET's steps need the sandbox")
    report = trace_report(tmp_path_factory.mktemp("trace"))
    assert report.trace is not None and report.trace.outcome == "accepted" and report.sql == RIGHT, report.summary()
    return report


class Page(HTMLParser):
    """The elements of a page: every start tag with its attributes, its text, and the text of each section by
    id."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.sections: dict[str, str] = {}
        self.text = ""
        self._section: str | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "section":
            self._section = dict(attrs).get("id")
            self.sections[self._section or ""] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "section":
            self._section = None

    def handle_data(self, data: str) -> None:
        self.text += data
        if self._section is not None:
            self.sections[self._section] += data

    def names(self) -> list[str]:
        return [name for name, _ in self.tags]


# ----------------------------------------------------------------------------------------- the page


def test_the_page_shows_the_answer_every_candidate_the_vote_and_the_dpc_test(dpc):
    page = Page(dpc.to_html())
    assert {"vsql-answer", "vsql-candidates", "vsql-vote", "vsql-dpc", "vsql-context", "vsql-costs",
            "vsql-notes"} <= set(page.sections)
    answer, candidates, test = page.sections["vsql-answer"], page.sections["vsql-candidates"], page.sections["vsql-dpc"]
    assert DISTINCT in answer and f"tier-{dpc.confidence}" in dpc.to_html() and HOSTILE_QUESTION in page.text
    assert all(e.check in answer and e.detail in answer for e in dpc.evidence)
    for candidate in dpc.candidates:
        assert candidate.sql in candidates
    failed = next(c for c in dpc.candidates if c.status == "error")
    assert failed.sql == STILL_BROKEN and failed.attempts == [BROKEN]
    assert failed.error and failed.error in candidates and BROKEN in candidates  # its error and earlier attempt
    assert "different" in candidates  # verify's unmet requirement of the majority's SQL
    assert "2/5 (40%)" in page.sections["vsql-vote"]
    # the slice, the distinguishing database (headed by the slice's columns), both results, the solver
    assert "customers" in test and "id, country" in test and "lineage" in test
    for rows in dpc.dpc.mdd_tables.values():
        assert all(str(cell) in test for row in rows for cell in row)
    assert "BS-F1" in test and str(dpc.dpc.scores["challenger"]) in test
    assert "nunique()" in test and "</pre><script>alert('solver')</script>" in test  # as text
    assert "dpc" in page.sections["vsql-costs"] and "solver" in page.sections["vsql-costs"]
    assert str(dpc.total_tokens) in page.sections["vsql-costs"]
    assert page.names().count("section") == len(page.sections)


def test_the_page_shows_the_trace_the_probes_and_the_findings(traced):
    page = Page(traced.to_html())
    trace, context = page.sections["vsql-trace"], page.sections["vsql-context"]
    assert "accepted" in trace and "customers['country'] == 'Brazil'" in trace and "len(result)" in trace
    assert RIGHT in trace and "How many customers are from Brazil?" in trace and "filter" in trace
    assert "SELECT DISTINCT country FROM customers WHERE" in context and "Brazil" in context
    assert "mars" in context and "never seen in a probe" in context  # the dropped mapping
    assert HOSTILE_COUNTRY in context  # the stored value in the probe's preview, as text
    assert "vet-step" in page.sections["vsql-costs"] and "probe" in page.sections["vsql-costs"]


def test_review_and_consensus_sections(traced):
    report = replace(
        traced,
        review=Review(reviewed=0, initial_sql=WRONG, professions=["analyst", "<b>dba</b>"], final_sql=RIGHT,
                      stop="approved", candidate=1, rounds=[ReviewRound(
                          1, WRONG, [ReviewVerdict(0, "analyst", "issues", "'brazil' is stored as 'Brazil'")],
                          rebuttal="agreed", revision=RIGHT, status="ok", row_count=1)]),
        consensus=Consensus("tie", rounds=1, outcome="resolved", reason="the re-vote has one largest cluster"),
        exploration=[Exploration("SELECT DISTINCT country FROM customers LIMIT 20", "ok", rows=6, preview="Brazil")])
    page = Page(report.to_html())
    review, consensus = page.sections["vsql-review"], page.sections["vsql-consensus"]
    assert WRONG in review and RIGHT in review and "'brazil' is stored as 'Brazil'" in review
    assert "<b>dba</b>" in review and "revised" in review
    assert "tie" in consensus and "resolved" in consensus and "SELECT DISTINCT country" in consensus
    assert ("b", {}) not in page.tags


def test_hostile_values_stay_text(dpc, traced):
    for report in (dpc, traced):
        text = report.to_html()
        page = Page(text)
        assert "script" not in page.names() and "img" not in page.names()
        assert all(not name.startswith("on") for _, attrs in page.tags for name in attrs)
    assert "&lt;script&gt;alert(&#x27;question&#x27;)&lt;/script&gt;" in dpc.to_html()
    assert "&lt;img src=x onerror=alert(&#x27;database&#x27;)&gt;" in traced.to_html()


def test_nothing_is_fetched(dpc, traced):
    for report in (dpc, traced):
        text = report.to_html()
        lowered = text.lower()
        for remote in ("http://", "https://", "//cdn", "url(", "@import", "<link", "<script", "<iframe", "<img"):
            assert remote not in lowered, remote
        assert not any(name in attrs for _, attrs in Page(text).tags for name in ("src", "srcset", "data"))
        assert "content-security-policy" in lowered and "default-src &#x27;none&#x27;" in text


def test_the_notebook_fragment_is_scoped_to_its_box(dpc):
    fragment = dpc._repr_html_()
    assert fragment.startswith("<style>") and "<html" not in fragment and "<body" not in fragment
    style = fragment.split("</style>", 1)[0].removeprefix("<style>")
    selectors = [s.strip() for block in re.findall(r"([^{}]+)\{", style) for s in block.split(",")]
    assert selectors and all(s.startswith(f".{ROOT_CLASS}") for s in selectors), selectors
    assert f'<div class="{ROOT_CLASS}">' in fragment and DISTINCT in fragment


def test_a_report_without_an_answer_renders():
    page = Page(VerificationReport(question="How many?", dialect="duckdb").to_html())
    assert "No SQL was chosen." in page.sections["vsql-answer"] and "no clusters" in page.sections["vsql-vote"]
    assert "vsql-dpc" not in page.sections and "vsql-trace" not in page.sections


# ------------------------------------------------------------------------------------- in a browser


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--no-first-run", "--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile'}", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path.as_uri()


@needs_chromium
def test_chromium_builds_the_dom_with_the_mdd_tables_and_the_sql(dpc, tmp_path):
    dom = chromium(tmp_path, "--dump-dom", write(tmp_path, "report.html", dpc.to_html())).stdout
    page = Page(dom)
    assert "script" not in page.names()  # the hostile question and solver code stayed text
    test = page.sections["vsql-dpc"]
    for rows in dpc.dpc.mdd_tables.values():
        assert all(str(cell) in test for row in rows for cell in row)
    assert DISTINCT in page.sections["vsql-answer"] and ALL_ROWS in test
    assert HOSTILE_QUESTION in page.text and "</pre><script>alert('solver')</script>" in test  # shown as text


# measures the laid-out page: whether it is wider than the window, which elements clip content they cannot
# scroll to, and which boxes scroll (a copy of the page without its policy, which forbids scripts)
MEASURE = """<script>
const clipped = [], scrolling = [];
for (const el of document.querySelectorAll('body *')) {
  const style = getComputedStyle(el);
  if (style.display === 'inline' || el.clientWidth === 0) continue;
  if (el.scrollWidth > el.clientWidth + 1) {
    if (['auto', 'scroll'].includes(style.overflowX)) scrolling.push(el.className || el.tagName);
    else if (['hidden', 'clip'].includes(style.overflowX)) clipped.push(el.tagName + '.' + el.className);
  }
}
document.body.setAttribute('data-layout', JSON.stringify({
  page: document.documentElement.scrollWidth, window: window.innerWidth, clipped, scrolling}));
</script>"""


@needs_chromium
def test_wide_tables_scroll_in_their_box_and_nothing_is_cut_off(dpc, tmp_path):
    wide = replace(dpc, dpc=replace(dpc.dpc, solver_result=[[f"column {i} of a wide result" for i in range(40)]]),
                   notes=[*dpc.notes, "a long token: " + "x" * 400])
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", wide.to_html())
    page = page.replace("</body>", MEASURE + "</body>")
    dom = chromium(tmp_path, "--window-size=700,2000", "--dump-dom", write(tmp_path, "wide.html", page)).stdout
    found = re.search(r'data-layout="([^"]*)"', dom)
    assert found, dom[-2000:]
    layout = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert layout["page"] <= layout["window"], layout  # the page itself never scrolls sideways
    assert layout["clipped"] == [], layout
    assert "scroll" in layout["scrolling"], layout  # the wide result scrolls inside its box


@needs_chromium
def test_the_screenshot_shows_the_report(dpc, tmp_path):
    image_module = pytest.importorskip("PIL.Image", reason="Pillow (installed with matplotlib) decodes the PNG")
    shot = tmp_path / "report.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,3000", write(tmp_path, "r.html", dpc.to_html()))
    with image_module.open(shot) as image:
        assert image.size == (1200, 3000)
        histogram = image.convert("L").histogram()
        top = image.convert("L").crop((0, 0, 1200, 600)).histogram()  # the heading, question and answer
    pixels = 1200 * 3000
    assert sum(histogram[:128]) > 0.005 * pixels  # dark pixels: text, borders and badges
    assert max(histogram) < 0.97 * pixels  # not one colour
    assert sum(1 for count in histogram if count) > 40  # many shades: text, tinted boxes, badges
    assert sum(top[:128]) > 0.005 * 1200 * 600


def save_picture(path: Path = ROOT / "docs" / "report.png") -> None:
    """docs/report.png: the DPC run's page, a 1000-pixel-wide screenshot cut to the content and quantised."""
    from PIL import Image

    with tempfile.TemporaryDirectory() as directory:
        tmp = Path(directory)
        report = dpc_report(tmp, solver=SOLVER.replace(" </pre><script>alert('solver')</script>", ""))
        shot = tmp / "shot.png"
        chromium(tmp, f"--screenshot={shot}", "--window-size=1000,3600", write(tmp, "r.html", report.to_html()))
        with Image.open(shot) as image:
            rgb = image.convert("RGB")
            content = rgb.convert("L").point(lambda v: 0 if v > 250 else 255)  # white: background
            bottom = (content.getbbox() or (0, 0, rgb.width, rgb.height))[3]
            picture = rgb.crop((0, 0, rgb.width, min(rgb.height, bottom + 16))).quantize(colors=64)
    path.parent.mkdir(exist_ok=True)
    picture.save(path, optimize=True)
    print(f"{path}: {picture.size[0]}x{picture.size[1]}, {path.stat().st_size // 1024} KiB")


if __name__ == "__main__":
    save_picture()
