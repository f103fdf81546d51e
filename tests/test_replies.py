"""The one reader of model replies (llm.replies) and the one renderer of rows into prompts (llm.rows)."""

from __future__ import annotations

import pytest

from verifiedsql.db.schema import Column, ForeignKey, Table
from verifiedsql.llm.base import messages
from verifiedsql.llm.replies import (
    ERROR_TAIL_CHARS,
    Fence,
    error_tail,
    extract_json_object,
    extract_python,
    extract_sql,
    fences,
    first_json,
    follow_up,
    has_closed_fence,
    read_json,
    sql_answer,
    sql_blocks,
    without_fences,
    yes_no,
)
from verifiedsql.llm.rows import (
    DATA,
    PREVIEW,
    REVIEW,
    TableStyle,
    cell_text,
    frame_variable,
    render_dataframe,
    render_previews,
    render_rows,
)

# ------------------------------------------------------------------------------------------ fences


def test_fences_read_tags_bodies_and_an_unterminated_last_block() -> None:
    text = "Intro\n```SQL\nSELECT 1\n```\nthen\n``` python \nx = 1\n```\n```\nplain\n```\n```json\n{\"a\": 1"
    assert [(f.tag, f.body, f.closed) for f in fences(text)] == [
        ("sql", "SELECT 1\n", True), ("python", "x = 1\n", True), ("", "plain\n", True), ("json", '{"a": 1', False)]
    first = fences(text)[0]
    assert text[first.start:first.end] == "```SQL\nSELECT 1\n```"


def test_three_backticks_with_words_after_them_are_prose_unless_read_inline() -> None:
    text = "In a ```sql block:\n\n```sql\nSELECT 2\n```"
    assert fences(text) == [Fence("sql", "SELECT 2\n", True, 20, 39)]
    assert [(f.tag, f.body) for f in fences(text, inline=True)][0] == ("sql", "block:\n\n")
    assert fences("```sql SELECT 1```") == []
    assert [(f.tag, f.body, f.closed) for f in fences("```sql SELECT 1```", inline=True)] == [("sql", "SELECT 1", True)]
    assert fences("```python\r\nx = 1\r\n```")[0].tag == "python"


def test_closed_fence_and_text_without_fences() -> None:
    assert has_closed_fence("```sql\nSELECT 1\n```") and not has_closed_fence("```sql\nSELECT 1")
    assert not has_closed_fence("no code") and not has_closed_fence("````sql\nSELECT 1\n")
    assert without_fences("Because.\n```sql\nSELECT 1\n```\nDone.") == "Because.\n\nDone."
    assert without_fences("Kept. ```sql\nSELECT 1") == "Kept. "


# --------------------------------------------------------------------------------------------- SQL


@pytest.mark.parametrize(("reply", "sql"), [
    ("Sure!\n```sql\nSELECT 1;\n```\nDone.", "SELECT 1"),
    ("```\nSELECT a FROM t\n```", "SELECT a FROM t"),
    ("```sql\nDELETE FROM t;\n```", "DELETE FROM t"),  # whatever the block holds, for the guard to name
    ("```sql\nWITH a AS (SELECT 1) SELECT * FROM a", "WITH a AS (SELECT 1) SELECT * FROM a"),  # cut off
    ("```sql SELECT 2```", "SELECT 2"),
    ("The answer is: SELECT name FROM t WHERE x = 1", "SELECT name FROM t WHERE x = 1"),
    ("Here:\nSELECT 1;\n\n\n\nThat is all.", "SELECT 1"),
    ("We select the rows with a filter.", None),
    ("I am sorry, I cannot help with that.", None),
    ("```sql\n\n```", None),
    ("", None),
])
def test_extract_sql(reply: str, sql: str | None) -> None:
    assert extract_sql(reply) == sql


def test_extract_sql_keeps_its_inline_reading_of_a_prose_fence() -> None:
    """The recorded runs were made with this reading: the first three backticks open the block."""
    assert extract_sql("Here it is, in a ```sql block:\n\n```sql\nSELECT 1\n```") == "block:"


def test_sql_blocks_are_closed_sql_or_untagged_blocks() -> None:
    reply = ("```sql\nSELECT 1;\n```\n```python\nx = 1\n```\n```sqlite\nSELECT 2\n```\n```\nSELECT 3\n```\n"
             "```sql\n```\n```sql\nSELECT 4")
    assert sql_blocks(reply) == ["SELECT 1", "SELECT 2", "SELECT 3"]
    assert sql_blocks("In a ```sql block:\n\n```sql\nSELECT 5\n```") == ["SELECT 5"]


# ------------------------------------------------------------------------------------------ Python


@pytest.mark.parametrize(("reply", "code"), [
    ("```python\nresult = df\n```", "result = df"),
    ("```py\nresult = 1\n```", "result = 1"),
    ("```\nresult = 1\n```\n```python\nresult = 2\n```", "result = 2"),  # a python block first
    ("```python\n\n```\n```\nresult = 3\n```", "result = 3"),  # empty blocks do not count
    ("```python\nresult = 4", "result = 4"),  # cut off
    ("```sql\nSELECT 1\n```", None),
    ("In one ```python block:\n\n```python\nresult = 5\n```", "result = 5"),
    ("no code", None),
])
def test_extract_python(reply: str, code: str | None) -> None:
    assert extract_python(reply) == code


# -------------------------------------------------------------------------------------------- JSON


def test_json_objects_fenced_first_then_balanced_spans() -> None:
    text = 'I think {"a": "}{", "b": [1, {"c": 2}]} works, and {"d": 1}'
    assert read_json(text, dict) == {"a": "}{", "b": [1, {"c": 2}]}
    assert read_json('First {"x": 1}, then\n```json\n{"y": 2}\n```', dict) == {"y": 2}
    assert read_json('```json\n{"a": 1}', dict) == {"a": 1}  # cut off after the object
    assert read_json('[{"tables": {}}]', dict) == {"tables": {}}  # an object inside a list


def test_json_lists_and_either_kind() -> None:
    assert read_json('Sure:\n["SELECT 1", "SELECT 2"] and ["x"]', list) == ["SELECT 1", "SELECT 2"]
    assert read_json('{"queries": ["a", "b"]}', list) == ["a", "b"]  # a list inside an object
    assert read_json('{"queries": ["a"]}', (list, dict)) == {"queries": ["a"]}  # the first value of either
    assert read_json('[{"sql": "a"}]', (list, dict)) == [{"sql": "a"}]


def test_python_literals_are_read_as_data() -> None:
    assert read_json("<result>{'tables': {'t': [{'a': None, 'b': True}]}}</result>", dict) == {
        "tables": {"t": [{"a": None, "b": True}]}}
    assert read_json("['it''s', 'x']", list) == ["its", "x"]
    assert first_json("{'a': __import__('os').system('true')}", dict) is None  # not a literal: never run


def test_no_json_raises_or_gives_none() -> None:
    with pytest.raises(ValueError, match="holds no JSON object"):
        extract_json_object("no data here")
    with pytest.raises(ValueError, match="holds no JSON list"):
        read_json('{"a": 1}', list)
    with pytest.raises(ValueError, match="the JSON could not be parsed: Expecting"):
        extract_json_object('{"a": [1, 2}')
    assert first_json("{not json}", dict) is None and first_json("", (list, dict)) is None
    assert first_json('{"a": bad, "b": {"action": "done"}}', dict) is None  # no piece of a broken object
    assert first_json("{1, 2}", dict) is None  # a set is no object


def test_json_nested_too_deeply_is_no_value() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert first_json(deep, (list, dict)) is None
    with pytest.raises(ValueError, match="nested too deeply"):
        read_json('{"action": "probe", "columns": ' + deep + "}", dict)


# ----------------------------------------------------------------------------------- short answers


def test_yes_no() -> None:
    assert yes_no("YES") is True and yes_no(" no.") is False and yes_no("**Yes**") is True
    assert yes_no("Y") is True and yes_no("n") is False
    assert yes_no("Maybe, yes") is None and yes_no("") is None and yes_no("1.") is None


# ------------------------------------------------------------------------------------------- turns


def test_error_tail_keeps_the_end() -> None:
    assert error_tail("  no such column: x \n") == "no such column: x"
    long = "Traceback\n" + "x" * 3000 + "\nKeyError: 'y'"
    tail = error_tail(long)
    assert tail.startswith("...") and tail.endswith("KeyError: 'y'") and len(tail) == ERROR_TAIL_CHARS + 3


def test_follow_up_keeps_the_first_turn_and_the_latest_reply() -> None:
    first = messages("system", "question")
    turn = follow_up(first, sql_answer("SELECT 1"), "It failed.")
    assert turn == ({"role": "system", "content": "system"}, {"role": "user", "content": "question"},
                    {"role": "assistant", "content": "```sql\nSELECT 1\n```"},
                    {"role": "user", "content": "It failed."})
    again = follow_up(first, "second reply", "Still wrong.")
    assert len(again) == 4 and again[2]["content"] == "second reply"


# -------------------------------------------------------------------------------------------- rows


ROWS = tuple((i, f"name {i}") for i in range(12))


def test_cells_by_style() -> None:
    assert cell_text(None) == "NULL" and cell_text("it's") == '"it\'s"' and cell_text(1.5) == "1.5"
    assert cell_text("it's", PREVIEW) == "it's"
    assert cell_text("a|b\nc", REVIEW) == "a/b c"
    assert cell_text("x" * 59) == "'" + "x" * 56 + "..." and cell_text("x" * 58) == repr("x" * 58)  # 60 at most
    assert cell_text("x" * 41, PREVIEW) == "x" * 37 + "..."


def test_plain_rows_with_a_limit() -> None:
    assert render_rows(("id", "name"), ROWS[:2]) == "id | name\n0 | 'name 0'\n1 | 'name 1'"
    assert render_rows(("id", "name"), ROWS, 2) == "id | name\n0 | 'name 0'\n1 | 'name 1'\n... (10 more rows)"
    assert render_rows(("id",), ()) == "id\n(no rows)"
    assert render_rows((), ()) == "(no columns)\n(no rows)"
    assert render_rows(("id", "name"), ROWS, 5, PREVIEW).splitlines()[-2:] == ["4 | name 4", "(7 more rows)"]
    assert render_rows((), (), 5, PREVIEW) == "\n(no rows)"


def test_markdown_rows_say_when_the_row_cap_cut_them() -> None:
    table = render_rows(("n", "name"), ROWS, 10, REVIEW, truncated=True)
    assert table.splitlines()[:3] == ["| n | name |", "|---|---|", "| 0 | name 0 |"]
    assert table.endswith("| 9 | name 9 |\n(2 more rows, and more beyond the row cap)")
    assert render_rows(("n",), (), 10, REVIEW) == "| n |\n|---|\n(no rows)"
    assert render_rows(("n",), ((1,),), 10, REVIEW, truncated=True) == "| n |\n|---|\n| 1 |"


def test_a_style_is_a_value() -> None:
    wide = TableStyle(cell_chars=5, quote_text=False, more="[{n} hidden{beyond}]")
    assert render_rows(("a",), (("abcdefgh",), ("b",)), 1, wide) == "a\nab...\n[1 hidden]"
    assert DATA == TableStyle()


def test_dataframes_and_previews() -> None:
    orders = Table("order items", (Column("id", "INTEGER", False, True), Column("customer_id", "INTEGER")),
                   (ForeignKey(("customer_id",), "customers", ("id",)),))
    text = render_dataframe(orders, ["int64", "Int64"], ((1, None),), count_note="; 3 shown")
    assert text == ("DataFrame `tables['order items']` (table order items, 1 rows; 3 shown), columns:\n"
                    "  id: int64 (INTEGER, primary key)\n"
                    "  customer_id: Int64 (INTEGER, references customers.id)\n"
                    "id | customer_id\n1 | NULL")
    assert frame_variable("customers") == "customers" and frame_variable("result") == "tables['result']"
    assert render_previews([("SELECT 1", "a\n1"), ("SELECT 2", "b\n(no rows)")]) == (
        "- SELECT 1\n  a\n  1\n- SELECT 2\n  b\n  (no rows)")
