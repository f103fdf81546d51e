from verifiedsql.db.schema import Column, Table, render_table
from verifiedsql.llm.prompts import generation_messages, refinement_messages
from verifiedsql.llm.replies import extract_sql
from verifiedsql.profiles import profile_for


def test_extracts_fenced_sql():
    assert extract_sql("Sure!\n```sql\nSELECT 1;\n```\nDone.") == "SELECT 1"


def test_extracts_unfenced_sql_after_prose():
    assert extract_sql("The answer is: SELECT name FROM t WHERE x = 1") == "SELECT name FROM t WHERE x = 1"


def test_extracts_unterminated_fence():
    assert extract_sql("```sql\nWITH a AS (SELECT 1) SELECT * FROM a") == "WITH a AS (SELECT 1) SELECT * FROM a"


def test_prose_without_sql_is_none():
    assert extract_sql("I am sorry, I cannot help with that.") is None
    assert extract_sql("") is None


def test_generation_prompt_carries_dialect_hints_schema_and_question():
    profile = profile_for("postgresql")
    system, user = generation_messages(profile, "CREATE TABLE t (a INT);", "How many?")
    assert "PostgreSQL" in system["content"] and "ILIKE" in system["content"]
    assert "CREATE TABLE t" in user["content"] and "How many?" in user["content"]


def test_refinement_prompt_shows_failed_sql_and_error():
    msgs = refinement_messages(profile_for("sqlite"), "schema", "q", "SELECT nope", "no such column: nope")
    assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
    assert "SELECT nope" in msgs[-1]["content"] and "no such column" in msgs[-1]["content"]


def test_fenced_non_query_is_returned_for_the_guard_to_refuse():
    assert extract_sql("```sql\nDELETE FROM t;\n```") == "DELETE FROM t"


def test_every_request_of_a_default_question_shares_the_generation_prefix(shop_engine):
    """Samples, refinements and repairs of one question start with the same messages, byte for byte, so the
    embedded server's prefix cache serves them (issue 14, time to first token)."""
    from fakes import ScriptedChatModel, ask, by_seed

    broken, good = "SELECT nme FROM customers", "SELECT name FROM customers WHERE country = 'Brazil'"
    model = ScriptedChatModel(by_seed({0: good, 1: broken, 2: good, 3: "SELECT * FROM nowhere", 4: good},
                                      refine=good))
    ask(shop_engine, "Who are the customers from Brazil?", model, schema_repair=False)
    prefix = model.requests[0].messages
    assert {r.purpose for r in model.requests} == {"generate", "refine"}
    assert all(r.messages[:len(prefix)] == prefix for r in model.requests)


def test_the_schema_prompt_quotes_names_that_need_quotes_on_any_engine():
    """Spaces, signs and words that some engine reserves (``order`` on all four, ``user`` on PostgreSQL) are
    quoted in the DDL the model reads; plain names are not."""
    table = Table("order", (Column("select", "TEXT", primary_key=True), Column("user", "TEXT"),
                            Column("Unit Price", "REAL"), Column("qty", "INTEGER")))
    assert render_table(table, with_samples=False) == (
        'CREATE TABLE "order" (\n  "select" TEXT PRIMARY KEY,\n  "user" TEXT,\n  "Unit Price" REAL,\n'
        "  qty INTEGER\n);")
