"""Schema compression (compress_schema): table grouping, sample trimming, table linking, the option."""

from __future__ import annotations

import sqlite3
import time

import fakes
import pytest
import sqlalchemy as sa
from backends import load_shop, shop_rows
from fakes import ScriptedChatModel, fenced

from verifiedsql.bench.strategies import strategy_options
from verifiedsql.config import LLMSettings, Options
from verifiedsql.db.database import Database
from verifiedsql.db.schema import Column, ForeignKey, Schema, Table, render_schema
from verifiedsql.errors import ConfigurationError, LLMError, PromptTooLongError
from verifiedsql.llm.prompts import generation_messages
from verifiedsql.profiles import profile_for
from verifiedsql.report import VerificationReport
from verifiedsql.stages.common.grouping import render_group
from verifiedsql.stages.reforce.compress import compress_schema, estimate_tokens, group_tables

SHARD_COLUMNS = ("visit_id", "visitor_id", "country", "device", "pageviews", "revenue", "channel", "landing_page")


def table(name: str, columns: tuple[str, ...] | list[str], samples: int = 3, types: str = "TEXT",
          foreign_keys: tuple[ForeignKey, ...] = ()) -> Table:
    return Table(name, tuple(Column(c, types, primary_key=i == 0, samples=tuple(f"{c}-{k}" for k in range(samples)))
                             for i, c in enumerate(columns)), foreign_keys)


def schema_of(tables: list[Table]) -> Schema:
    return Schema(tuple(tables))


def dates(count: int) -> list[str]:
    return [f"2016{month:02d}{day:02d}" for month in range(1, 13) for day in range(1, 29)][:count]


# --- grouping ---------------------------------------------------------------------------------------

def test_date_shards_collapse_into_one_group_with_the_first_as_representative():
    shards = [table(f"ga_sessions_{d}", SHARD_COLUMNS) for d in dates(30)]
    monthly = [table(f"events_2021_{m:02d}", ("id", "kind", "at")) for m in range(1, 4)]
    groups = group_tables(schema_of([*shards, table("users", ("id", "name")), *monthly]))
    assert [g.names[0] for g in groups] == ["ga_sessions_20160101", "users", "events_2021_01"]
    sessions, users, events = groups
    assert sessions.is_group and len(sessions.tables) == 30 and not users.is_group
    assert events.names == ("events_2021_01", "events_2021_02", "events_2021_03")
    text = render_group(sessions)
    assert text.count("CREATE TABLE") == 1 and text.startswith("CREATE TABLE ga_sessions_20160101 (")
    assert "-- 29 more table(s) with the same columns: ga_sessions_<X> for X in 20160102, 20160103" in text
    assert "-- 2 more table(s) with the same columns: events_2021_02, events_2021_03" in render_group(events)


def test_numeric_shards_and_affixes_group():
    columns = ("id", "amount", "region")
    schema = schema_of([table("t1", columns), table("t2", columns), table("t10", columns),
                    table("sales_q1", columns), table("sales_q2", columns), table("sales_q3", columns),
                    table("users", ("id", "email")), table("tmp_users_v2", ("id", "email")),
                    table("users_backup", ("id", "email")), table("Sales2020", columns)])
    groups = {g.representative.name: g.names for g in group_tables(schema)}
    assert groups == {
        "t1": ("t1", "t2", "t10"),
        "sales_q1": ("sales_q1", "sales_q2", "sales_q3", "Sales2020"),
        "users": ("users", "tmp_users_v2", "users_backup"),
    }


def test_different_columns_are_not_grouped_and_near_ones_say_the_difference():
    schema = schema_of([table("sales_q1", ("id", "amount")), table("sales_q2", ("id", "total", "region")),
                    table("orders", ("id", "customer")), table("customers", ("id", "customer"))])
    assert all(not g.is_group for g in group_tables(schema))  # different columns / different names
    wide = [f"c{i}" for i in range(10)]
    near = schema_of([table("log_2021", wide), table("log_2022", [*wide, "source"]), table("log_2023", wide),
                  table("log_2024", [*wide[:8], "x", "y"])])
    groups = group_tables(near)
    assert [g.names for g in groups] == [("log_2021", "log_2022", "log_2023"), ("log_2024",)]
    text = render_group(groups[0])
    assert "-- 1 more table(s) with the same columns: log_2023" in text
    assert "-- 1 more table(s) with these columns, except + source TEXT: log_2022" in text


def test_grouping_is_deterministic_and_follows_schema_order():
    shards = [table(f"events_{d}", ("id", "kind")) for d in dates(12)]
    forward = group_tables(schema_of(shards))
    assert forward == group_tables(schema_of(shards))
    backward = group_tables(schema_of(shards[::-1]))
    assert backward[0].representative.name == "events_20160112"


def test_estimate_tokens_is_chars_over_four_rounded_up():
    assert [estimate_tokens(t) for t in ("", "abcd", "abcde", "x" * 400)] == [0, 1, 2, 100]


# --- compression --------------------------------------------------------------------------------------

_WORD_TEXT = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
              "quebec romeo sierra tango uniform victor whiskey xray yankee zulu amber cobalt crimson ivory "
              "jade lemon maroon olive pearl ruby sapphire silver topaz violet")
WORDS = _WORD_TEXT.split()


def big_schema() -> Schema:
    """5,000 tables: 40 families of 100 date-sharded tables and 1,000 unrelated tables."""
    tables = []
    for family in WORDS[:39] + ["web_traffic"]:
        tables += [table(f"{family}_{d}", SHARD_COLUMNS if family == "web_traffic" else
                         (f"{family}_id", f"{family}_code", "created_on", "status", "weight", "note"))
                   for d in dates(100)]
    for i in range(1_000):
        a, b = WORDS[i % 40], WORDS[(i // 40) % 25 + 15]
        tables.append(table(f"{a}_{b}_{chr(97 + i // 400)}x", (f"{a}_key", f"{b}_ref", f"m{i}_value", "label")))
    tables[-1] = table("accounts", ("account_id", "owner", "opened_on"))
    return schema_of(tables)


def test_5000_tables_compress_under_budget_with_the_named_table_kept():
    schema = big_schema()
    assert len(schema.tables) == 5_000
    start = time.perf_counter()
    compressed = compress_schema(schema, "Which country had the most pageviews on the web traffic shards, and "
                                 "who owns accounts?", 6_000)
    seconds = time.perf_counter() - start
    print(f"\n5,000 tables: {compressed.tokens_before} -> {compressed.tokens_grouped} (grouped) -> "
          f"{compressed.tokens_after} tokens, ratio {compressed.ratio:.1f}x, {len(compressed.groups)} groups, "
          f"{len(compressed.tables_kept)} tables kept, steps {compressed.steps}, {seconds:.2f} s")
    assert compressed.tokens_after <= 6_000 < compressed.tokens_grouped < compressed.tokens_before
    assert compressed.ratio >= 50
    assert len(compressed.groups) == 40
    assert compressed.steps[:4] == ("grouping", "samples trimmed to 2", "samples trimmed to 1", "samples removed")
    assert "lexical linking" in compressed.steps
    assert "CREATE TABLE web_traffic_20160101 (" in compressed.text and "accounts" in compressed.tables_kept
    assert "web_traffic_20160410" in compressed.tables_kept and compressed.tables_dropped
    assert set(compressed.tables_kept).isdisjoint(compressed.tables_dropped)
    assert len(compressed.tables_kept) + len(compressed.tables_dropped) == 5_000
    figures = compressed.figures()
    assert figures["tables_total"] == 5_000 and figures["ratio"] == round(compressed.ratio, 2)


def test_a_named_table_is_never_dropped_even_over_budget():
    schema = big_schema()
    question = "List the rows of lima_tango_ax."  # lima and tango score many other tables as high
    report = VerificationReport(question=question, dialect="sqlite")
    compressed = compress_schema(schema, question, 20, report=report)
    assert "lima_tango_ax" in compressed.tables_kept and "CREATE TABLE lima_tango_ax (" in compressed.text
    assert compressed.over_budget and "over the budget" in report.notes[-1]
    within = compress_schema(schema, "How many rows does echo_20160405 have?", 2_000)
    assert "echo_20160405" in within.tables_kept and not within.over_budget


def shop_schema(samples: int = 3) -> Schema:
    return schema_of([
        table("customers", ("id", "name", "country"), samples),
        table("orders", ("id", "customer_id", "amount", "status"), samples,
              foreign_keys=(ForeignKey(("customer_id",), "customers", ("id",)),)),
        table("sensors", ("id", "reading", "unit"), samples),
        table("weather", ("id", "temperature", "wind"), samples),
    ])


def test_samples_are_trimmed_before_any_table_is_dropped():
    schema = shop_schema()
    full = estimate_tokens(render_schema(schema))
    bare = estimate_tokens(render_schema(schema, with_samples=False))
    fits = compress_schema(schema, "Total amount per country?", bare)
    assert fits.steps == ("grouping", "samples trimmed to 2", "samples trimmed to 1", "samples removed")
    assert fits.tables_dropped == () and fits.text == render_schema(schema, with_samples=False)
    untouched = compress_schema(schema, "Total amount per country?", full)
    assert untouched.steps == ("grouping",) and untouched.text == render_schema(schema)
    linked = compress_schema(schema, "Total amount per country of the orders?", bare - 20)
    assert linked.steps[3:5] == ("samples removed", "lexical linking")
    assert {"orders", "customers"} <= set(linked.tables_kept) and linked.tables_dropped


def test_fk_neighbours_of_the_best_scorer_come_before_other_tables():
    schema = shop_schema(samples=0)
    orders_and_customers = estimate_tokens(render_schema(schema_of(list(schema.tables[:2]))))
    linked = compress_schema(schema, "What is the mean amount per status?", orders_and_customers)
    assert linked.tables_kept == ("customers", "orders")  # customers scores 0 but orders references it


def test_the_model_links_tables_only_when_lexical_scoring_finds_nothing():
    schema = shop_schema()
    budget = estimate_tokens(render_schema(schema_of(list(schema.tables[:2])), with_samples=False))
    fake = ScriptedChatModel(lambda request: "Y" if "CREATE TABLE sensors" in request.messages[1]["content"] else "N")
    report = VerificationReport(question="q", dialect="sqlite")
    vague = compress_schema(schema, "How hot did it get last week?", budget, llm=fake, report=report)
    assert [r.purpose for r in fake.requests] == ["link"] * 4
    assert all(r.temperature == 0 and r.max_tokens <= 8 for r in fake.requests)
    assert [c.purpose for c in report.llm_calls] == ["link"] * 4
    assert vague.steps[4:6] == ("lexical linking", "model linking") and "sensors" in vague.tables_kept
    assert "weather" in vague.tables_dropped  # the model said N, and the budget holds two tables
    fake.requests.clear()
    clear = compress_schema(schema, "What is the average temperature?", budget, llm=fake, report=report)
    assert fake.requests == [] and "model linking" not in clear.steps and "weather" in clear.tables_kept


def test_a_failing_or_refusing_model_leaves_the_budget_filled_in_schema_order():
    schema = shop_schema()
    budget = estimate_tokens(render_schema(schema_of(list(schema.tables[:2])), with_samples=False))

    def broken(request: object) -> str:
        raise LLMError("the server is down")

    report = VerificationReport(question="q", dialect="sqlite")
    failed = compress_schema(schema, "How hot did it get last week?", budget, llm=ScriptedChatModel(broken),
                             report=report)
    refused = compress_schema(schema, "How hot did it get last week?", budget, llm=ScriptedChatModel(lambda r: "N"))
    assert failed.tables_kept == refused.tables_kept == ("customers", "orders")
    assert "stopped asking" in report.notes[0] and len(report.llm_calls) == 0


# --- the option and the public API -------------------------------------------------------------------

QUESTION = "How many orders have status 'shipped'?"
ANSWER = "SELECT COUNT(*) FROM orders WHERE status = 'shipped'"
SHIPPED = sum(row["status"] == "shipped" for row in shop_rows()["orders"])


def ask(url: str, **options: object) -> tuple[VerificationReport, list[tuple], ScriptedChatModel]:
    rows, report, fake = fakes.ask(url, QUESTION, lambda request: fenced(ANSWER), candidates=1, **options)
    return report, rows, fake


def test_off_by_default_and_on_with_room_to_spare_leaves_the_prompt_unchanged(tmp_path):
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    load_shop(sa.create_engine(url)).dispose()
    assert not Options(llm=LLMSettings()).compress_schema
    schema_text = render_schema(Database(sa.create_engine(url), Options(llm=LLMSettings())).reflect())
    expected = generation_messages(profile_for("sqlite"), schema_text, QUESTION)
    report, rows, fake = ask(url)
    assert fake.requests[0].messages == expected and report.schema_compression is None
    assert "schema:" not in report.summary()
    report, rows, fake = ask(url, compress_schema=True)
    assert fake.requests[0].messages == expected and report.schema_compression["steps"] == ["grouping"]
    assert rows == [(SHIPPED,)]


def test_a_sharded_sqlite_database_answers_through_the_public_api(tmp_path):
    path = tmp_path / "sharded.db"
    load_shop(sa.create_engine(f"sqlite:///{path}")).dispose()
    with sqlite3.connect(path) as conn:
        for d in dates(300):
            conn.execute(f"CREATE TABLE page_views_{d} (view_id INTEGER PRIMARY KEY, url TEXT, country TEXT, "
                         "seconds INTEGER)")
            conn.execute(f"INSERT INTO page_views_{d} VALUES (1, '/home', 'Brazil', 12), (2, '/shop', 'Japan', 40)")
    report, rows, fake = ask(f"sqlite:///{path}", compress_schema=True, prompt_budget_tokens=400)
    figures = report.schema_compression
    print(f"\nsharded SQLite: {figures}")
    assert rows == [(SHIPPED,)]
    assert figures["tables_total"] == 302 and figures["groups"] == 1 and figures["ratio"] > 10
    assert figures["tokens_after"] <= 400 and "lexical linking" in figures["steps"]
    prompt = fake.requests[0].messages[1]["content"]
    assert "CREATE TABLE orders (" in prompt and "CREATE TABLE customers (" in prompt and "page_views" not in prompt
    assert f"schema: {figures['tokens_before']} -> {figures['tokens_after']} tokens" in report.summary()


def sharded_shop(path) -> str:
    """The shop database with 300 date-sharded tables beside it; its URL."""
    load_shop(sa.create_engine(f"sqlite:///{path}")).dispose()
    with sqlite3.connect(path) as conn:
        for d in dates(300):
            conn.execute(f"CREATE TABLE page_views_{d} (view_id INTEGER PRIMARY KEY, url TEXT, country TEXT, "
                         "seconds INTEGER)")
    return f"sqlite:///{path}"


def model_with_context(tokens: int) -> ScriptedChatModel:
    """A model whose server refuses a prompt over a window of ``tokens`` (characters / 4), saying its size."""
    def reply(request):
        length = sum(len(message["content"]) for message in request.messages)
        if length > 4 * tokens:
            return PromptTooLongError(f"HTTP 400: This model's maximum context length is {tokens} tokens",
                                      context_tokens=tokens)
        return fenced(ANSWER)

    return ScriptedChatModel(reply)


def test_a_schema_over_the_context_window_is_compressed_and_the_question_answered(tmp_path):
    url = sharded_shop(tmp_path / "sharded.db")
    rows, report, model = fakes.ask(url, QUESTION, model_with_context(1_500), candidates=2, prompt_budget_tokens=400)
    assert rows == [(SHIPPED,)] and report.schema_compression is not None
    lengths = [sum(len(m["content"]) for m in request.messages) for request in model.requests]
    fitted = {request.seed for request, length in zip(model.requests, lengths) if length <= 6_000}
    assert lengths[0] > 6_000 and fitted == {0, 1}  # refused, then both candidates asked again compressed (the two
    # go out side by side, so a refused request of the first round may reach the model after a compressed one)
    assert any("compressed to fit the model's context window (the model refused" in note for note in report.notes)


def test_a_window_the_model_states_compresses_the_schema_before_the_first_call(tmp_path):
    """The embedded model's window is known (``context_tokens``): no call is refused first."""
    url = sharded_shop(tmp_path / "sharded.db")
    model = model_with_context(1_500)
    model.context_tokens = 1_500  # type: ignore[attr-defined]
    rows, report, model = fakes.ask(url, QUESTION, model, candidates=2)
    lengths = [sum(len(m["content"]) for m in request.messages) for request in model.requests]
    assert rows == [(SHIPPED,)] and len(lengths) == 2 and all(length <= 6_000 for length in lengths)
    assert any("over the window of 1,500" in note for note in report.notes)


def test_the_schema_is_compressed_to_fit_the_window_the_server_states(tmp_path):
    """No budget given: the window of 3,000 model tokens, less the answer's 512, leaves a budget of 944."""
    url = sharded_shop(tmp_path / "sharded.db")
    rows, report, model = fakes.ask(url, QUESTION, model_with_context(3_000), candidates=1)
    assert rows == [(SHIPPED,)] and 0 < report.schema_compression["tokens_after"] <= 944


def test_a_prompt_that_does_not_fit_even_compressed_is_a_typed_error(tmp_path):
    url = sharded_shop(tmp_path / "sharded.db")
    with pytest.raises(PromptTooLongError):
        fakes.ask(url, QUESTION, model_with_context(150), candidates=1)
    with pytest.raises(PromptTooLongError):  # with compression on, the refusal is the caller's to see
        fakes.ask(url, QUESTION, model_with_context(150), candidates=1, compress_schema=True)


def test_options_and_strategy():
    with pytest.raises(ConfigurationError):
        Options(llm=LLMSettings(), prompt_budget_tokens=0)
    options = strategy_options("+compress", {"llm": LLMSettings()})
    assert options.compress_schema and options.candidates == 5 and options.prompt_budget_tokens == 6_000
