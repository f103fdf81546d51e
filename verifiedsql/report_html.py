"""The verification report as HTML a person can read: one self-contained page (``render_page``) or a fragment
for a notebook cell (``render_fragment``). Inline CSS only: no scripts, no fonts, images or anything else
fetched, and a Content-Security-Policy that forbids them. Every value is escaped, since report values come
from model output and from the database."""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from verifiedsql.report import (
        Candidate,
        Consensus,
        DualParadigmTest,
        Exploration,
        Review,
        Trace,
        VerificationReport,
    )

ROOT_CLASS = "vsql-report"
MAX_ROWS = 100  # rows shown of one result or table; the rest are counted
# no network, no scripts: only the inline style below (a page's <meta> policy; ignored inside a notebook)
POLICY = "default-src 'none'; style-src 'unsafe-inline'"

_CSS = """
.R { color-scheme: light; overflow-wrap: break-word;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  color: #1f2328; background: #fff; max-width: 1100px; margin: 0 auto; padding: 12px 16px; }
.R h1 { font-size: 22px; margin: 4px 0 8px; }
.R h2 { font-size: 17px; margin: 22px 0 8px; padding-bottom: 4px; border-bottom: 1px solid #d0d7de; }
.R h3 { font-size: 14px; margin: 14px 0 6px; }
.R p { margin: 6px 0; }
.R nav { font-size: 13px; margin: 6px 0 4px; }
.R nav a { margin-right: 10px; color: #0969da; text-decoration: none; }
.R .question { font-size: 16px; margin: 8px 0; padding: 8px 12px; background: #f6f8fa;
  border-left: 4px solid #0969da; overflow-wrap: break-word; white-space: pre-wrap; }
.R pre { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
  background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 4px; padding: 6px 8px; margin: 4px 0;
  white-space: pre-wrap; overflow-wrap: break-word; overflow: auto; max-height: 30em; }
.R code { font: 12.5px ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; }
.R .scroll { overflow: auto; max-width: 100%; margin: 4px 0 8px; }
.R table { border-collapse: collapse; font-size: 13px; }
.R th, .R td { border: 1px solid #d0d7de; padding: 3px 7px; text-align: left; vertical-align: top;
  overflow-wrap: break-word; }
.R th { background: #f6f8fa; font-weight: 600; white-space: nowrap; }
.R td.num { text-align: right; font-variant-numeric: tabular-nums; }
.R td pre { margin: 0; min-width: 24ch; max-width: 70ch; }
.R tr.chosen td { background: #eef8f0; }
.R tr.total td { font-weight: 600; }
.R .null { color: #8c959f; font-style: italic; }
.R .muted { color: #57606a; }
.R .error { color: #a40e26; overflow-wrap: break-word; }
.R ul { margin: 4px 0; padding-left: 22px; }
.R dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 6px 0; }
.R dt { font-weight: 600; color: #57606a; }
.R dd { margin: 0; overflow-wrap: break-word; min-width: 0; }
.R details { margin: 4px 0; }
.R summary { cursor: pointer; color: #0969da; }
.R .grid { display: flex; flex-wrap: wrap; gap: 12px; }
.R .grid > div { min-width: 0; max-width: 100%; }
.R .badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: 600;
  border: 1px solid transparent; white-space: nowrap; }
.R .tier-verified, .R .v-for, .R .s-ok, .R .s-accepted, .R .s-decided, .R .s-resolved, .R .s-approve {
  background: #dafbe1; color: #116329; border-color: #aceebb; }
.R .tier-probable, .R .s-unanimous { background: #ddf4ff; color: #0550ae; border-color: #b6e3ff; }
.R .tier-doubtful, .R .s-fallback, .R .s-undecided, .R .s-issues, .R .s-skipped {
  background: #fff8c5; color: #7d4e00; border-color: #f5e0a0; }
.R .tier-unverified, .R .v-against, .R .s-error, .R .s-unsafe, .R .s-timeout, .R .s-invalid, .R .s-failed,
.R .s-rejected { background: #ffebe9; color: #a40e26; border-color: #ffcecb; }
.R .v-neutral, .R .s-unclear, .R .s-unavailable, .R .plain { background: #eaeef2; color: #424a53; }
""".replace(".R", f".{ROOT_CLASS}")


class Markup(str):
    """Text that already is HTML, built here from escaped values; anything else is escaped when inserted."""


def esc(value: object) -> Markup:
    """``value`` as HTML text: escaped unless it is ``Markup``; None is empty."""
    if isinstance(value, Markup):
        return value
    return Markup("" if value is None else html.escape(str(value), quote=True))


def tag(name: str, *children: object, cls: str | None = None, **attrs: object) -> Markup:
    """``<name ...>children</name>``, every attribute value and child escaped (``Markup`` children kept)."""
    pairs = {"class": cls, **attrs}
    rendered = "".join(f" {key.rstrip('_')}" if given is True else f' {key.rstrip("_")}="{esc(given)}"'
                       for key, given in pairs.items() if given is not None and given is not False)
    return Markup(f"<{name}{rendered}>{join(children)}</{name}>")


def join(parts: Iterable[object], sep: str = "") -> Markup:
    return Markup(sep.join(esc(part) for part in parts))


def data(cell: Any) -> Markup:
    """A database or result value: NULL marked as such."""
    return tag("span", "NULL", cls="null") if cell is None else esc(cell)


def badge(text: object, kind: str) -> Markup:
    return tag("span", text, cls=f"badge {kind}")


def status(text: object) -> Markup:
    return badge(text, f"s-{text}")


def pre(text: object) -> Markup:
    return tag("pre", text)


def details(summary: object, *body: object, open_: bool = False) -> Markup:
    return tag("details", tag("summary", summary), *body, open=open_)


def items(entries: Iterable[object]) -> Markup:
    listed = [tag("li", entry) for entry in entries]
    return tag("ul", *listed) if listed else Markup("")


def facts(pairs: Iterable[tuple[str, object]]) -> Markup:
    """A definition list of the pairs whose value is neither None nor empty."""
    shown = [(label, given) for label, given in pairs if given is not None and given != ""]
    return tag("dl", *(join([tag("dt", label), tag("dd", given)]) for label, given in shown))


def table(headers: Sequence[object], rows: Iterable[Sequence[object]], *, numeric: Sequence[int] = (),
          row_classes: Sequence[str | None] = ()) -> Markup:
    """A table in a box that scrolls when it is wider than the page (nothing is cut off)."""
    body = []
    for number, row in enumerate(rows):
        cells = (tag("td", cell, cls="num" if i in numeric else None) for i, cell in enumerate(row))
        body.append(tag("tr", *cells, cls=row_classes[number] if number < len(row_classes) else None))
    head = tag("thead", tag("tr", *(tag("th", h) for h in headers))) if headers else Markup("")
    return tag("div", tag("table", head, tag("tbody", *body)), cls="scroll")


def rows_table(rows: Sequence[Sequence[Any]], headers: Sequence[object] = ()) -> Markup:
    """Result or table rows, the first ``MAX_ROWS`` of them, with how many there are."""
    if not rows:
        return tag("p", "no rows", cls="muted")
    shown = table(headers, ([data(cell) for cell in row] for row in rows[:MAX_ROWS]))
    count = f"{len(rows)} row{'s' if len(rows) != 1 else ''}"
    if len(rows) > MAX_ROWS:
        count += f", the first {MAX_ROWS} shown"
    return join([shown, tag("p", count, cls="muted")])


def section(key: str, title: str, *body: object) -> Markup:
    return tag("section", tag("h2", title), *body, id=f"vsql-{key}")


def seconds(amount: float) -> str:
    return f"{amount:.3f} s"


# ------------------------------------------------------------------------------------------ sections


def _header(report: VerificationReport) -> Markup:
    flags = [badge("timed out", "s-timeout")] if report.timed_out else []
    if report.truncated:
        flags.append(badge("rows truncated", "s-fallback"))
    return join([
        tag("h1", "Verification report"),
        tag("div", report.question, cls="question"),
        tag("p", "confidence ", badge(report.confidence, f"tier-{report.confidence}"),
            *([" \u00b7 probability ", badge(f"{report.probability:.2f}", "plain")]
              if report.probability is not None else []),
            " \u00b7 vote ", badge(report.vote, "plain"), " \u00b7 dialect ", tag("code", report.dialect),
            *[join([" \u00b7 ", flag]) for flag in flags]),
    ])


def _answer(report: VerificationReport) -> Markup:
    sql = pre(report.sql) if report.sql else tag("p", "No SQL was chosen.", cls="error")
    evidence = table(["check", "verdict", "detail"], (
        [tag("code", e.check), badge(e.verdict, f"v-{e.verdict}"), e.detail] for e in report.evidence))
    return section("answer", "Answer", tag("h3", "Chosen SQL"), sql,
                   facts([("reason", report.reason)]),
                   tag("h3", "Evidence"), evidence if report.evidence else tag("p", "none", cls="muted"))


def _candidate_notes(candidate: Candidate) -> Markup:
    parts: list[object] = []
    if candidate.error:
        parts.append(tag("div", candidate.error, cls="error"))
    if candidate.checks:
        parts.append(tag("div", "checks passed: ", tag("code", ", ".join(candidate.checks))))
    if candidate.violations:
        parts.append(join([tag("div", "unmet requirements:"), items(candidate.violations)]))
    if candidate.fixes:
        parts.append(join([tag("div", "schema repair:"), items(tag("code", fix) for fix in candidate.fixes)]))
    for number, repair in enumerate(candidate.repairs, 1):
        rows = f", {repair.row_count} rows" if repair.row_count is not None else ""
        parts.append(details(join([f"repair {number}: ", status(repair.status), rows]), pre(repair.sql),
                             tag("div", repair.error, cls="error") if repair.error else "",
                             items(repair.violations), open_=True))
    if candidate.literals:
        parts.append(details(f"{len(candidate.literals)} literal check(s)", table(
            ["literal", "column", "outcome", "detail"],
            ([tag("code", c.literal), tag("code", c.column), status(c.outcome), c.detail]
             for c in candidate.literals)), open_=True))
    if candidate.attempts:
        parts.append(details(f"{len(candidate.attempts)} earlier attempt(s)",
                             *(pre(sql) for sql in candidate.attempts)))
    return join(parts)


def _candidate_rows(candidates: Sequence[Candidate], chosen_sql: str | None) -> Markup:
    rows = ([c.index, c.origin, status(c.status), "" if c.cluster is None else c.cluster,
             "" if c.row_count is None else f"{c.row_count}{' (truncated)' if c.truncated else ''}",
             pre(c.sql), _candidate_notes(c)] for c in candidates)
    classes = ["chosen" if chosen_sql is not None and c.sql == chosen_sql else None for c in candidates]
    return table(["#", "origin", "status", "cluster", "rows", "SQL", "errors, checks and repairs"], rows,
                 numeric=(0, 3, 4), row_classes=classes)


def _candidates(report: VerificationReport) -> Markup:
    ran = sum(c.status == "ok" for c in report.candidates)
    return section("candidates", "Candidates",
                   tag("p", f"{len(report.candidates)} candidate(s), {ran} ran; the chosen SQL's rows are "
                            "highlighted.", cls="muted"),
                   _candidate_rows(report.candidates, report.sql))


def _vote(report: VerificationReport) -> Markup:
    total = len(report.candidates) or 1
    chosen = {c.index for c in report.candidates if report.sql is not None and c.sql == report.sql}
    rows = [[cluster.index, ", ".join(str(m) for m in cluster.members), cluster.row_count,
             f"{len(cluster.members)}/{len(report.candidates)} ({100 * len(cluster.members) / total:.0f}%)",
             "chosen" if chosen & set(cluster.members) else ""] for cluster in report.clusters]
    classes = ["chosen" if row[4] else None for row in rows]
    return section("vote", "Vote", tag("p", "vote ", badge(report.vote, "plain")),
                   table(["cluster", "candidates", "rows", "share of all candidates", ""], rows,
                         numeric=(0, 2), row_classes=classes) if rows
                   else tag("p", "no candidate ran: no clusters", cls="muted"))


def _dpc(test: DualParadigmTest, candidates: Sequence[Candidate]) -> Markup:
    by_index = {c.index: c for c in candidates}

    def contender(role: str, index: int | None) -> Markup:
        if index is None:
            return Markup("")
        won = " (winner)" if index == test.winner else ""
        sql = by_index[index].sql if index in by_index else None
        return join([tag("h3", f"{role}: candidate {index}{won}"), pre(sql) if sql else ""])

    parts: list[object] = [
        facts([("status", status(test.status)), ("reason", test.reason),
               ("votes", ", ".join(f"{k}: {v}" for k, v in test.votes.items())),
               ("solver attempts", test.solver_attempts or None),
               ("cost", f"{test.tokens} tokens, {seconds(test.seconds)}")]),
        contender("Champion", test.champion), contender("Challenger", test.challenger),
    ]
    if test.slice_tables:
        how = f"cut by {test.slice_method}" if test.slice_method else ""
        if test.transpiled:
            how += "; transpiled with sqlglot to run on DuckDB"
        parts += [tag("h3", "Schema slice"), tag("p", how, cls="muted") if how else "",
                  table(["table", "columns"], ([tag("code", name), tag("code", ", ".join(columns))]
                                               for name, columns in test.slice_tables.items()))]
    if test.mdd_tables:
        parts += [tag("h3", "Minimal distinguishing database"),
                  tag("p", f"built by the {test.mdd_method} search in {test.mdd_tries} tr"
                           f"{'y' if test.mdd_tries == 1 else 'ies'}", cls="muted") if test.mdd_method else ""]
        for name, rows in test.mdd_tables.items():
            columns = next((cols for table_name, cols in test.slice_tables.items()
                            if table_name.lower() == name.lower()), [])
            headers = columns if rows and all(len(row) == len(columns) for row in rows) else []
            parts.append(join([tag("div", tag("code", name), cls="muted"), rows_table(rows, headers)]))
    results = [("champion", test.champion_result), ("challenger", test.challenger_result),
               ("pandas solver", test.solver_result)]
    if any(rows for _, rows in results) or test.solver_code:
        boxes = []
        for label, rows in results:
            score = test.scores.get(label)
            caption = label + (f" \u2014 BS-F1 against the solver's result: {score}" if score is not None else "")
            boxes.append(tag("div", tag("div", caption, cls="muted"), rows_table(rows)))
        parts += [tag("h3", "Results on the distinguishing database"), tag("div", *boxes, cls="grid")]
    if test.solver_code:
        parts += [tag("h3", "Solver code (pandas, run in the sandbox)"), pre(test.solver_code)]
    return section("dpc", "Dual-paradigm test (DPC)", *parts)


def _context(report: VerificationReport) -> Markup:
    parts: list[object] = []
    if report.value_matches:
        parts += [tag("h3", "Values found in the database"), table(
            ["term", "column", "stored value", "match"],
            ([m.term, tag("code", f"{m.table}.{m.column}"), data(m.value), m.kind] for m in report.value_matches))]
    if report.probes:
        parts += [tag("h3", "Probes"), table(["#", "SQL", "status", "rows", "error and preview"], (
            [i, pre(p.sql), status(p.status), "" if p.row_count is None else p.row_count,
             join([tag("div", p.error, cls="error") if p.error else "",
                   details("preview", pre(p.preview)) if p.preview else ""])]
            for i, p in enumerate(report.probes)), numeric=(0, 3))]
    findings = report.findings
    if findings.value_mappings or findings.relevant_columns or findings.dropped_mappings:
        parts.append(tag("h3", "Findings"))
        if findings.value_mappings:
            parts.append(table(["term", "stored as"], findings.value_mappings.items()))
        if findings.relevant_columns:
            parts.append(table(["table", "relevant columns"],
                               ([t, ", ".join(cols)] for t, cols in findings.relevant_columns.items())))
        if findings.dropped_mappings:
            parts.append(table(["term", "claimed value, never seen in a probe"], findings.dropped_mappings.items()))
    if report.constraints:
        parts += [tag("h3", "Constraints of the question"), items(report.constraints)]
    if report.schema_compression:
        parts += [tag("h3", "Schema compression"), facts(
            (str(k), ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else v)
            for k, v in report.schema_compression.items())]
    return section("context", "Context", *parts) if parts else Markup("")


def _exploration_rows(queries: Sequence[Exploration]) -> Markup:
    return table(["#", "SQL", "status", "rows", "correction", "error and preview"], (
        [i, pre(q.sql), status(q.status), "" if q.rows is None else q.rows, q.correction or "",
         join([tag("div", q.error, cls="error") if q.error else "",
               details("preview", pre(q.preview)) if q.preview else ""])]
        for i, q in enumerate(queries)), numeric=(0, 3, 4))


def _consensus(consensus: Consensus | None, exploration: Sequence[Exploration]) -> Markup:
    parts: list[object] = []
    if consensus is not None:
        parts.append(facts([("trigger", consensus.trigger), ("outcome", status(consensus.outcome)),
                            ("rounds", consensus.rounds), ("reason", consensus.reason)]))
        if consensus.first_round:
            parts.append(details(f"first round: {len(consensus.first_round)} candidate(s)",
                                 _candidate_rows(consensus.first_round, None)))
    if exploration:
        parts += [tag("h3", "Column exploration"), _exploration_rows(exploration)]
    return section("consensus", "Consensus", *parts) if parts else Markup("")


def _review(review: Review) -> Markup:
    rounds = []
    for r in review.rounds:
        verdicts = table(["reviewer", "profession", "verdict", "explanation"],
                         ([v.reviewer, v.profession, status(v.verdict), v.explanation] for v in r.verdicts))
        revision = join([tag("div", "revision:"), pre(r.revision)]) if r.revision else ""
        outcome = facts([("revision ran", status(r.status) if r.status else None), ("error", r.error),
                         ("rows", r.row_count)])
        rounds.append(details(f"round {r.number}", pre(r.sql), verdicts,
                              facts([("rebuttal", r.rebuttal)]), revision, outcome, open_=True))
    return section("review", "Review (R3)", facts([
        ("reviewed", f"candidate {review.reviewed}"),
        ("reviewers", f"{', '.join(review.professions)} ({review.professions_source})"),
        ("stopped", review.stop), ("result", "revised" if review.changed else "unchanged"),
        ("added candidate", review.candidate)]),
        tag("h3", "Reviewed SQL"), pre(review.initial_sql), *rounds,
        join([tag("h3", "Final SQL"), pre(review.final_sql)]) if review.changed else "")


def _count(number: int | None) -> str:
    return "" if number is None else str(number)


def _trace(trace: Trace) -> Markup:
    steps = table(["#", "kind", "rows in \u2192 out", "status", "enough?", "code", "problems of turned-down tries"], (
        [s.number, s.kind, f"{_count(s.rows_in)} \u2192 {_count(s.rows_out)}",
         status(s.status), s.sufficient or "", pre(s.code) if s.code else "", items(s.problems)]
        for s in trace.steps), numeric=(0,))
    parts: list[object] = [
        facts([("outcome", status(trace.outcome)), ("reason", trace.reason), ("stopped", trace.stop),
               ("added candidate", trace.candidate)]),
        tag("h3", "Candidate columns"),
        table(["table", "columns"],
              ([tag("code", t), tag("code", ", ".join(cols))] for t, cols in trace.columns.items())),
    ]
    if trace.truncated:
        parts.append(tag("p", "seen only in part (row bound): ", ", ".join(trace.truncated), cls="muted"))
    parts += [tag("h3", "Steps"), steps if trace.steps else tag("p", "no steps", cls="muted")]
    if trace.sql or trace.sql_problems:
        parts += [tag("h3", "SQL rebuilt from the trace"), pre(trace.sql) if trace.sql else "",
                  details(f"{len(trace.sql_problems)} turned-down reconstruction(s)", items(trace.sql_problems))
                  if trace.sql_problems else ""]
    parts.append(facts([
        ("same result as the last step", "yes" if trace.consistent else "no"),
        ("restated question", trace.reconstructed_question),
        ("similarity", f"{trace.similarity:.3f}" if trace.similarity is not None else None),
        ("similarity check", trace.similarity_check)]))
    return section("trace", "Execution trace (VET)", *parts)


def _costs(report: VerificationReport) -> Markup:
    by_purpose: dict[str, list[float]] = {}
    for call in report.llm_calls:
        totals = by_purpose.setdefault(call.purpose, [0, 0, 0, 0, 0.0])
        for i, amount in enumerate((1, int(call.cached), call.prompt_tokens, call.completion_tokens, call.seconds)):
            totals[i] += amount
    rows: list[list[object]] = [[p, int(t[0]), int(t[1]), int(t[2]), int(t[3]), seconds(t[4])]
                                for p, t in by_purpose.items()]
    rows.append(["total", len(report.llm_calls), sum(c.cached for c in report.llm_calls),
                 report.prompt_tokens, report.completion_tokens,
                 seconds(sum(c.seconds for c in report.llm_calls))])
    calls = details(f"every call ({len(report.llm_calls)})", table(
        ["#", "purpose", "model", "prompt", "completion", "seconds", "cached"],
        ([i, c.purpose, c.model, c.prompt_tokens, c.completion_tokens, seconds(c.seconds), "yes" if c.cached else ""]
         for i, c in enumerate(report.llm_calls)), numeric=(0, 3, 4, 5)))
    timings = table(["stage", "seconds"], [*([k, seconds(v)] for k, v in report.timings.items()),
                                           ["total", seconds(sum(report.timings.values()))]],
                    numeric=(1,), row_classes=[*([None] * len(report.timings)), "total"])
    return section("costs", "Timings and token costs",
                   tag("p", f"{len(report.llm_calls)} model call(s), {report.total_tokens} tokens "
                            f"({report.prompt_tokens} prompt, {report.completion_tokens} completion); "
                            f"{seconds(sum(report.timings.values()))} in all", cls="muted"),
                   tag("div", tag("div", tag("h3", "Model calls"),
                                  table(["purpose", "calls", "cached", "prompt tokens", "completion tokens", "seconds"],
                                        rows, numeric=(1, 2, 3, 4, 5),
                                        row_classes=[*([None] * len(by_purpose)), "total"]), calls),
                       tag("div", tag("h3", "Time per stage"), timings), cls="grid"))


def _notes(report: VerificationReport) -> Markup:
    parts: list[object] = []
    if report.warnings:
        parts += [tag("h3", "Warnings"), items(report.warnings)]
    if report.notes:
        parts += [tag("h3", "Notes"), items(report.notes)]
    return section("notes", "Notes and warnings", *parts) if parts else Markup("")


def _body(report: VerificationReport) -> Markup:
    sections: list[tuple[str, str, Markup]] = [
        ("answer", "Answer", _answer(report)),
        ("candidates", "Candidates", _candidates(report)),
        ("vote", "Vote", _vote(report)),
        ("dpc", "DPC", _dpc(report.dpc, report.candidates) if report.dpc else Markup("")),
        ("context", "Context", _context(report)),
        ("consensus", "Consensus", _consensus(report.consensus, report.exploration)),
        ("review", "Review", _review(report.review) if report.review else Markup("")),
        ("trace", "Trace", _trace(report.trace) if report.trace else Markup("")),
        ("costs", "Costs", _costs(report)),
        ("notes", "Notes", _notes(report)),
    ]
    shown = [(key, title, body) for key, title, body in sections if body]
    nav = tag("nav", *(tag("a", title, href=f"#vsql-{key}") for key, title, _ in shown))
    return tag("div", _header(report), nav, *(body for _, _, body in shown), cls=ROOT_CLASS)


def render_fragment(report: VerificationReport) -> str:
    """The report as an HTML fragment (its style scoped to it), for a notebook cell (``_repr_html_``)."""
    return f"<style>{_CSS}</style>\n{_body(report)}"


def render_page(report: VerificationReport) -> str:
    """The report as one self-contained HTML page: inline CSS, nothing fetched, no scripts."""
    title = f"verifiedsql report: {report.question}"
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{esc(POLICY)}\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>{esc(title[:200])}</title>\n<style>{_CSS}</style>\n</head>\n"
            f"<body style=\"margin:0;background:#fff\">\n{_body(report)}\n</body>\n</html>\n")
