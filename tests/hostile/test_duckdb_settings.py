"""DuckDB's extension settings stay the user's (issue 33, finding 6).

The engine guard holds extension auto-install and auto-load off while a generated query runs. Both settings
are database-wide: two questions that overlap on one database must not put back each other's "off" (the
second read the first one's "off" as the user's value and left the database off for good), and the
query still running must keep them off until it ends. After every question the user's own values are back,
whatever they were, through both public APIs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from fakes import ScriptedChatModel, fenced

import verifiedsql
import verifiedsql.dbapi
from verifiedsql.config import LLMSettings, Options
from verifiedsql.db.database import Database

pytestmark = pytest.mark.timeout(120)

SETTINGS = ("autoinstall_known_extensions", "autoload_known_extensions")
COUNT = "SELECT COUNT(*) FROM t"


def settings(connection: Any) -> tuple[bool, ...]:
    """The two settings, read on a DB-API ``connection`` to the database."""
    cursor = connection.cursor()
    try:
        found = []
        for name in SETTINGS:
            cursor.execute(f"SELECT current_setting('{name}')")
            found.append(cursor.fetchone()[0])
        return tuple(found)
    finally:
        cursor.close()


def set_settings(connection: Any, values: tuple[bool, ...]) -> None:
    cursor = connection.cursor()
    for name, value in zip(SETTINGS, values, strict=True):
        cursor.execute(f"SET {name} = {str(value).lower()}")
    cursor.close()


@pytest.fixture
def path(tmp_path: Path) -> Iterator[Path]:
    file = tmp_path / "shop.duckdb"
    with duckdb.connect(str(file)) as raw:
        raw.execute("CREATE TABLE t AS SELECT range AS x FROM range(3)")
    yield file


@pytest.mark.parametrize("values", [(True, True), (False, True), (True, False)])
def test_a_question_leaves_the_users_settings(values: tuple[bool, bool], path: Path) -> None:
    model = ScriptedChatModel(lambda request: fenced(COUNT))
    engine = verifiedsql.create_engine(f"duckdb:///{path}", llm=model, candidates=1)
    user = engine.raw_connection()  # the user's own connection: the engine's share its database instance
    try:
        set_settings(user, values)
        with engine.connect() as conn:
            assert conn.execute(verifiedsql.ask("How many rows?")).all() == [(3,)]
        assert settings(user) == values
    finally:
        user.close()
        engine.dispose()
    raw = duckdb.connect(str(path))
    set_settings(raw, values)
    with verifiedsql.dbapi.connect(raw, llm=model, candidates=1) as wrapped:
        cursor = wrapped.cursor()
        cursor.execute("How many rows?", mode="question")
        assert cursor.fetchall() == [(3,)]
        assert settings(raw) == values


def _slow(rows: int) -> str:
    return f"SELECT count(*) FROM range({rows}) r(i) WHERE hash(i) % 7 = 3"


def _wait_for(condition: Any, seconds: float = 20.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.01)
    return False


def test_overlapping_questions_keep_the_settings_off_and_put_back_the_users(path: Path) -> None:
    """The first query turns the settings off; a second, longer one starts while it runs. When the first ends
    they stay off (the second still runs); when the second ends the user's values (on) are back."""
    engine = verifiedsql.create_engine(f"duckdb:///{path}")
    user = engine.raw_connection()
    database = Database(engine, Options(llm=LLMSettings(), statement_timeout_s=60))
    database.functions()
    errors: list[BaseException] = []

    def run(sql: str) -> None:
        try:
            database.run_query(sql)
        except BaseException as error:  # noqa: BLE001 -- reported by the test's thread
            errors.append(error)

    first = threading.Thread(target=run, args=(_slow(60_000_000),))
    second = threading.Thread(target=run, args=(_slow(400_000_000),))
    try:
        assert settings(user) == (True, True)
        first.start()
        assert _wait_for(lambda: settings(user) == (False, False)), "the first query never turned them off"
        second.start()
        first.join()
        if not second.is_alive():
            pytest.skip("the second query ended before the first: no overlap to check on this machine")
        assert settings(user) == (False, False), "the first query's end turned them on under the second"
        second.join()
        assert not errors, errors
        assert settings(user) == (True, True)
    finally:
        first.join()
        second.join()
        user.close()
        engine.dispose()
