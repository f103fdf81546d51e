"""A SQLite statement past its time is stopped, not left running (issue 33, findings 4 and 7).

The statement: a table scan whose every row calls one slow LIKE (about 0.2 s a row). SQLite's progress
handler, which the guard sets every 1,000 VM steps, is reached only every hundred rows or so (seconds), while
an ``interrupt()`` is seen at the next row.

* Finding 4: on a file, the statement runs on a read-only connection of its own and holds a read lock while
  it runs. Left running after the watchdog gave up on it, it kept the user's INSERT + COMMIT right after the
  question failing with "database is locked".
* Finding 7: with no such connection (an in-memory database too large to copy, a file that cannot be opened
  again), the statement runs on the caller's connection and thread, where no watchdog held it to
  ``statement_timeout_s`` or ``question_timeout_s``.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fakes import ScriptedChatModel, fenced

import verifiedsql
import verifiedsql.dbapi
from verifiedsql.errors import VerifiedSQLError

SLOW = ("SELECT COUNT(*) AS hits FROM slow "
        "WHERE printf('%.*c', 300000 + x % 2, 'a') LIKE '%' || printf('%.*c', 1000, 'a') || 'b'")
OPTIONS: dict[str, Any] = {"candidates": 1, "max_refinements": 0, "probe": False, "verify": False,
                           "statement_timeout_s": 1.0, "question_timeout_s": 5.0, "llm_max_retries": 0}
SLACK_S = 1.0


def fill(conn: sqlite3.Connection, pad_bytes: int = 0) -> None:
    conn.execute("CREATE TABLE slow (x INTEGER)")
    conn.executemany("INSERT INTO slow VALUES (?)", [(i,) for i in range(200)])
    conn.execute("CREATE TABLE notes (body TEXT)")
    if pad_bytes:
        conn.execute("CREATE TABLE pad (b BLOB)")
        conn.execute("INSERT INTO pad VALUES (zeroblob(?))", (pad_bytes,))
    conn.commit()


def model() -> ScriptedChatModel:
    return ScriptedChatModel(lambda request: fenced(SLOW))


def ask(target: Any) -> float:
    """Ask the slow question through ``target`` (a wrapped engine or DB-API connection); its wall time. The
    question fails (its only candidate timed out), which is not what is tested here."""
    started = time.monotonic()
    try:
        if isinstance(target, sa.Engine):
            with target.connect() as conn:
                conn.execute(verifiedsql.ask("How many rows are slow?")).all()
        else:
            target.cursor().execute("How many rows are slow?", mode="question")
    except VerifiedSQLError:
        pass
    return time.monotonic() - started


# ----------------------------------------------------------------------------------------- finding 4


@pytest.mark.parametrize("api", ["engine", "dbapi"])
def test_the_users_write_right_after_a_timed_out_question_succeeds(tmp_path: Path, api: str) -> None:
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as conn:
        fill(conn)
    user = sqlite3.connect(path, timeout=2.0)  # the user's own connection, waiting up to 2 s for a lock
    if api == "engine":
        target: Any = verifiedsql.create_engine(f"sqlite:///{path}", llm=model(), **OPTIONS)
    else:
        target = verifiedsql.dbapi.connect(user, llm=model(), **OPTIONS)
    try:
        seconds = ask(target)
        assert seconds <= OPTIONS["question_timeout_s"] + SLACK_S
        written = time.monotonic()
        user.execute("INSERT INTO notes VALUES ('after the question')")
        user.commit()  # on 6c41955: "database is locked" while the abandoned statement runs on
        assert time.monotonic() - written < 2.0
        assert user.execute("SELECT body FROM notes").fetchall() == [("after the question",)]
    finally:
        if isinstance(target, sa.Engine):
            target.dispose()
        user.close()


# ----------------------------------------------------------------------------------------- finding 7


def caller_only_database(case: str, tmp_path: Path) -> sqlite3.Connection:
    """A connection no read-only duplicate can be made of: in memory and over 64 MiB, or a file removed
    since it was opened."""
    if case == "in-memory over 64 MiB":
        conn = sqlite3.connect(":memory:")
        fill(conn, pad_bytes=65 * 1024 * 1024)
        return conn
    path = tmp_path / "gone.sqlite"
    conn = sqlite3.connect(path)
    fill(conn)
    os.unlink(path)
    return conn


@pytest.mark.parametrize("case", ["in-memory over 64 MiB", "file removed after opening"])
def test_a_statement_on_the_callers_connection_keeps_to_the_budget(tmp_path: Path, case: str) -> None:
    conn = caller_only_database(case, tmp_path)
    wrapped = verifiedsql.dbapi.connect(conn, llm=model(), **OPTIONS)
    try:
        seconds = ask(wrapped)
        assert seconds <= OPTIONS["statement_timeout_s"] + 0.5 + SLACK_S, (
            f"statement_timeout_s=1 held the caller for {seconds:.1f} s")
        assert conn.execute("PRAGMA query_only").fetchone() == (0,)  # the connection's settings are its own
        assert conn.execute("SELECT COUNT(*) FROM slow").fetchone() == (200,)
        if case.startswith("in-memory"):  # (SQLite refuses writes to a file removed from under it)
            conn.execute("INSERT INTO notes VALUES ('after the question')")
            conn.commit()
            assert conn.execute("SELECT COUNT(*) FROM notes").fetchone() == (1,)
    finally:
        conn.close()
