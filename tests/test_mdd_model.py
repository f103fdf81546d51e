"""The model tester: JSON data checked against the slice, loaded into a scratch database, and fed back
until the two candidates disagree on it."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest
from fakes import ScriptedChatModel

from verifiedsql.db.schema import Column, ForeignKey, Table
from verifiedsql.errors import LLMError, QueryError
from verifiedsql.llm.base import ChatRequest
from verifiedsql.llm.replies import extract_json_object
from verifiedsql.report import VerificationReport
from verifiedsql.results import ResultSet
from verifiedsql.stages.common.frames import column_kind
from verifiedsql.stages.common.slices import Rows, SchemaSlice
from verifiedsql.stages.dpc.mdd_model import (
    coerce_value,
    parse_tables,
    synthesize_mdd,
)
from verifiedsql.stages.dpc.prompts import render_slice

CUSTOMERS = Table("customers", (Column("id", "INTEGER", nullable=False, primary_key=True),
                                Column("name", "VARCHAR(40)", samples=("Ann",)), Column("city", "TEXT")))
ORDERS = Table(
    "orders",
    (Column("id", "INTEGER", nullable=False, primary_key=True), Column("customer_id", "INTEGER"),
     Column("amount", "REAL"), Column("placed", "DATE")),
    (ForeignKey(("customer_id",), "customers", ("id",)),),
)
SLICE = SchemaSlice((CUSTOMERS, ORDERS), source_dialect="sqlite", scratch_dialect="sqlite")
QUESTION = "How many orders are over 100?"
SQL_A = "SELECT COUNT(*) FROM orders WHERE amount > 100"
SQL_B = "SELECT COUNT(*) FROM orders WHERE amount >= 100"


class SqliteScratch:
    """A stand-in for the scratch database: the slice's tables in an in-memory SQLite."""

    def __init__(self, slice_: SchemaSlice) -> None:
        self.conn = sqlite3.connect(":memory:")
        self.loads: list[dict[str, Rows]] = []
        for table in slice_.tables:
            self.conn.execute(f"CREATE TABLE {table.name} ({', '.join(f'{c.name} {c.type}' for c in table.columns)})")

    def load(self, tables: dict[str, Rows]) -> None:
        self.loads.append(tables)
        for name, rows in tables.items():
            self.conn.execute(f"DELETE FROM {name}")
            if rows:
                marks = ", ".join("?" * len(rows[0]))
                self.conn.executemany(f"INSERT INTO {name} VALUES ({marks})", rows)

    def run(self, sql: str) -> ResultSet:
        try:
            cursor = self.conn.execute(sql)
        except sqlite3.Error as error:
            raise QueryError(f"the scratch database refused the query: {error}") from error
        return ResultSet(tuple(d[0] for d in cursor.description), tuple(cursor.fetchall()))


def reply(tables: dict[str, Any], prose: str = "The boundary 100 tells them apart.") -> str:
    return f"{prose}\n```json\n{json.dumps({'tables': tables})}\n```"


ANN = {"columns": ["id", "name"], "rows": [[1, "Ann"]]}
DISTINGUISHING = reply({"customers": ANN,
                        "orders": {"columns": ["amount", "id", "customer_id", "placed"],
                                   "rows": [[100, 10, 1, "2024-01-05"]]}})
AGREEING = reply({"customers": ANN, "orders": {"columns": ["id", "customer_id", "amount"],
                                               "rows": [[10, 1, 50], [11, 1, 200]]}})


def run(replies: list[str], **kwargs: Any) -> tuple[Any, ScriptedChatModel, VerificationReport, SqliteScratch]:
    llm, report, scratch = ScriptedChatModel(replies), VerificationReport(QUESTION, "sqlite"), SqliteScratch(SLICE)
    mdd = synthesize_mdd(llm, report, scratch, SLICE, QUESTION, SQL_A, SQL_B, dialect_name="SQLite", **kwargs)
    return mdd, llm, report, scratch


def feedback(request: ChatRequest) -> str:
    assert [m["role"] for m in request.messages] == ["system", "user", "assistant", "user"]
    return request.messages[-1]["content"]


def test_valid_json_makes_an_mdd_in_one_round() -> None:
    mdd, llm, report, scratch = run([DISTINGUISHING])
    assert mdd is not None and mdd.method == "model" and mdd.tries == 1
    assert mdd.tables == {"customers": ((1, "Ann", None),), "orders": ((10, 1, 100.0, "2024-01-05"),)}
    assert mdd.result_a.rows == ((0,),) and mdd.result_b.rows == ((1,),) and mdd.score < 0.99
    request = llm.requests[0]
    assert (request.purpose, request.temperature, request.seed, request.max_tokens) == ("mdd", 0.0, 1, 1024)
    prompt = request.messages[1]["content"]
    assert "CREATE TABLE orders" in prompt and "REFERENCES customers(id)" in prompt
    assert SQL_A in prompt and SQL_B in prompt and QUESTION in prompt
    assert "SQLite" in request.messages[0]["content"] and "at most 30 rows" in request.messages[0]["content"]
    assert [c.purpose for c in report.llm_calls] == ["mdd"] and scratch.loads == [mdd.tables]


def test_malformed_json_is_fed_back_then_fixed() -> None:
    mdd, llm, _, _ = run(['```json\n{"tables": {"orders": {"columns": ["id"] "rows": [[1]]}}}\n```', DISTINGUISHING])
    assert mdd is not None and mdd.tries == 2 and "unreadable JSON" in mdd.notes[0]
    assert "could not be parsed" in feedback(llm.requests[1])
    assert llm.requests[1].messages[2]["content"].startswith("```json") and llm.requests[1].seed == 2


def test_foreign_and_primary_key_violations_are_fed_back() -> None:
    broken = reply({"customers": {"columns": ["id", "name"], "rows": [[1, "Ann"], [1, "Bob"]]},
                    "orders": {"columns": ["id", "customer_id", "amount"], "rows": [[10, 9, 100]]}})
    mdd, llm, _, scratch = run([broken, DISTINGUISHING])
    text = feedback(llm.requests[1])
    assert "primary key id=1 is used by an earlier row" in text
    assert "customer_id=9 has no row in customers" in text
    assert mdd is not None and mdd.tries == 2 and len(scratch.loads) == 1  # invalid data is never loaded


def test_agreeing_data_gets_discriminative_feedback_then_succeeds() -> None:
    mdd, llm, _, _ = run([AGREEING, DISTINGUISHING])
    text = feedback(llm.requests[1])
    assert "both queries return the same result" in text
    assert "Query A returned:\nCOUNT(*)\n1" in text and "Query B returned:\nCOUNT(*)\n1" in text
    assert mdd is not None and mdd.tries == 2 and "results agree" in mdd.notes[0]


def test_gives_up_after_the_rounds() -> None:
    mdd, llm, report, _ = run([AGREEING] * 5)
    assert mdd is None and len(llm.requests) == 3 and [r.seed for r in llm.requests] == [1, 2, 3]
    assert "no distinguishing data in 3 rounds" in report.notes[-1]


def test_a_failing_query_is_fed_back() -> None:
    llm, report = ScriptedChatModel([AGREEING, DISTINGUISHING]), VerificationReport(QUESTION, "sqlite")
    mdd = synthesize_mdd(llm, report, SqliteScratch(SLICE), SLICE, QUESTION, "SELECT nope FROM orders", SQL_B,
                         dialect_name="SQLite", rounds=1)
    assert mdd is None and "no such column" in report.notes[-1]


def test_a_model_error_ends_the_search_with_a_note() -> None:
    def fail(request: ChatRequest) -> str:
        raise LLMError("the model server is down")

    report = VerificationReport(QUESTION, "sqlite")
    assert synthesize_mdd(ScriptedChatModel(fail), report, SqliteScratch(SLICE), SLICE, QUESTION, SQL_A, SQL_B,
                          dialect_name="SQLite") is None
    assert "server is down" in report.notes[-1]


def test_parse_tables_checks_names_types_sizes_and_not_null() -> None:
    data = {"tables": {"shops": [], "orders": [{"id": 1, "amount": "lots", "placed": "5 Jan", "colour": 1}]}}
    _, problems = parse_tables(data, SLICE, 30)
    assert any("unknown table 'shops'" in p for p in problems)
    assert any("no column 'colour'" in p for p in problems)
    data = {"tables": {"orders": [{"id": None, "amount": "lots", "placed": "5 Jan"}]}}
    _, problems = parse_tables(data, SLICE, 30)
    assert any("amount (REAL): 'lots' is not a number" in p for p in problems)
    assert any("placed (DATE)" in p and "ISO date" in p for p in problems)
    _, problems = parse_tables({"tables": {"orders": [{"id": None}]}}, SLICE, 30)
    assert problems == ["table orders row 1: column id must not be NULL"]
    rows = {"columns": ["id"], "rows": [[i] for i in range(4)]}
    assert "at most 3" in parse_tables({"tables": {"customers": rows}}, SLICE, 3)[1][0]
    assert "tables" in parse_tables({"data": {}}, SLICE, 3)[1][0]


def test_parse_tables_accepts_row_objects_and_fills_missing_tables() -> None:
    tables, problems = parse_tables({"test_data": {"CUSTOMERS": [{"ID": "2", "city": "Oslo"}]}}, SLICE, 30)
    assert problems == [] and tables == {"customers": ((2, None, "Oslo"),), "orders": ()}


@pytest.mark.parametrize(("value", "type_name", "expected"), [
    (3.0, "INTEGER", 3), (" 7 ", "BIGINT", 7), (2, "REAL", 2.0), ("1.5", "NUMERIC(10,2)", 1.5),
    (5, "VARCHAR(10)", "5"), ("2024-01-05", "DATE", "2024-01-05"),
    ("2024-01-05T10:30:00", "TIMESTAMP", "2024-01-05 10:30:00"), ("yes", "BOOLEAN", True), (None, "INTEGER", None),
    ([1], "BLOB", ValueError), (True, "INTEGER", ValueError), (1.5, "INT", ValueError), (20240105, "DATE", ValueError),
])
def test_coerce_value(value: Any, type_name: str, expected: Any) -> None:
    if expected is ValueError:
        with pytest.raises(ValueError):
            coerce_value(value, column_kind(type_name))
    else:
        assert coerce_value(value, column_kind(type_name)) == expected


def test_column_kinds() -> None:
    kinds = {t: column_kind(t) for t in ("INTEGER", "NUMBER(38,0)", "DOUBLE PRECISION", "DATETIME", "DATE",
                                         "TIME", "BOOLEAN", "VARCHAR(20)", "POINT", "INTERVAL")}
    assert kinds == {"INTEGER": "int", "NUMBER(38,0)": "int", "DOUBLE PRECISION": "float", "DATETIME": "timestamp",
                     "DATE": "date", "TIME": "time", "BOOLEAN": "bool", "VARCHAR(20)": "text", "POINT": "any",
                     "INTERVAL": "any"}


def test_extract_json_object_finds_the_first_balanced_object() -> None:
    found = extract_json_object('I think {"a": "}{", "b": [1, {"c": 2}]} works, and {"d": 1}')
    assert found == {"a": "}{", "b": [1, {"c": 2}]}
    assert extract_json_object("<result>{'tables': {'t': [{'a': None}]}}</result>") == {"tables": {"t": [{"a": None}]}}
    with pytest.raises(ValueError, match="no JSON object"):
        extract_json_object("no data here")


def test_slice_text_marks_not_null_columns() -> None:
    users = Table("users", (Column("id", "INTEGER", nullable=False, primary_key=True),
                            Column("email", "TEXT", nullable=False), Column("nick", "TEXT")))
    assert render_slice((users,)).endswith(");\n-- NOT NULL: email")
