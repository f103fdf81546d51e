"""``Database`` on all four engines: reflection, results, row cap, timeouts and the two safety layers.

The safety matrix runs every dangerous statement twice: through the statement guard (layer 1), and
with ``guard=False`` so that only the engine guard (layer 2) stands between it and the data. Both must
refuse it with ``UnsafeSQLError``; the data checksum must not change and no file may appear.

Known limitations (see ``verifiedsql/guard/readonly.py``): fakesnow honours neither
``STATEMENT_TIMEOUT_IN_SECONDS`` nor the connector's ``timeout=``, so the Snowflake timeout is not
tested; fakesnow's ``SHOW IMPORTED KEYS`` breaks snowflake-sqlalchemy's foreign-key reflection, so
Snowflake foreign keys are not checked; Snowflake's layer 2 statement check reuses the sqlglot guard.
"""

from __future__ import annotations

import shutil
import stat
import tempfile
from pathlib import Path
from typing import Iterator

import pytest
import sqlalchemy as sa
from backends import COUNTRIES, checksum, load_shop

from verifiedsql.config import LLMSettings, Options
from verifiedsql.db.database import Database
from verifiedsql.db.schema import render_schema
from verifiedsql.errors import OpenTransactionError, QueryError, QueryTimeoutError, UnsafeSQLError


def options(**values) -> Options:
    return Options(llm=LLMSettings(), **values)


@pytest.fixture
def target_dir() -> Iterator[Path]:
    """A world-writable directory outside pytest's private tmp tree, so the PostgreSQL server (user
    ``postgres``) could write there if a guard failed."""
    path = Path(tempfile.mkdtemp(prefix="verifiedsql-target-"))
    path.chmod(stat.S_IRWXU | stat.S_IRWXG | stat.S_IRWXO)
    (path / "secret.csv").write_text("secret,value\nkey,hunter2\n")
    yield path
    shutil.rmtree(path, ignore_errors=True)


# ------------------------------------------------------------------------------------------ reflection


def test_reflect_tables_types_keys_and_samples(shop_engine: sa.Engine) -> None:
    db = Database(shop_engine, options(sample_values=2))
    schema = db.reflect()
    assert db.reflect() is schema  # cached
    assert db.reflect(refresh=True) is not schema
    assert sorted(t.name.lower() for t in schema.tables) == ["customers", "orders"]

    customers, orders = schema.table("customers"), schema.table("orders")
    assert customers.primary_key == ("id",) and orders.primary_key == ("id",)
    assert any(word in customers.column("id").type.upper() for word in ("INT", "NUMBER", "DECIMAL(38, 0)"))
    assert customers.column("joined").type.upper().startswith("DATE")
    assert any(word in orders.column("amount").type.upper() for word in ("NUMERIC", "DECIMAL", "NUMBER"))
    if shop_engine.dialect.name != "snowflake":  # fakesnow breaks FK reflection (module docstring)
        assert [(fk.columns, fk.referred_table, fk.referred_columns) for fk in orders.foreign_keys] == [
            (("customer_id",), "customers", ("id",))
        ]
    for table in schema.tables:
        for column in table.columns:
            assert 1 <= len(column.samples) <= 2 and None not in column.samples
            assert len(set(column.samples)) == len(column.samples)
    assert set(customers.column("country").samples) <= set(COUNTRIES)


def test_reflect_samples_are_bounded_and_trimmed(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'big.sqlite'}")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE big (v INTEGER, t TEXT)")
        conn.exec_driver_sql(
            "INSERT INTO big WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < 4999) "
            "SELECT 4999 - i, CASE WHEN i = 0 THEN printf('%.500c', 'x') END FROM r"
        )
    schema = Database(engine, options(sample_values=5)).reflect()
    values = schema.table("big").column("v").samples
    assert len(values) == 5 and all(v >= 4000 for v in values)  # only the first 1000 rows are looked at
    (text,) = schema.table("big").column("t").samples
    assert len(text) <= 60 and text.endswith("...")


def test_reflect_named_schema(engine_factory) -> None:
    engine = engine_factory("postgresql")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE SCHEMA spider")
    load_shop(engine.execution_options(schema_translate_map={None: "spider"}))
    schema = Database(engine, options(schema="spider")).reflect()
    assert schema.namespace == "spider"
    assert sorted(t.name for t in schema.tables) == ["spider.customers", "spider.orders"]
    assert schema.table("spider.orders").foreign_keys[0].referred_table == "spider.customers"
    assert schema.table("spider.customers").column("country").samples
    # the prompt writes the qualified names as SQL does: "spider.orders" would name a table with a dot in it
    text = render_schema(schema)
    assert "CREATE TABLE spider.orders (" in text and "REFERENCES spider.customers(id)" in text
    assert '"spider.' not in text


# ------------------------------------------------------------------------------------------ run_query


def test_run_query_results(shop_engine: sa.Engine) -> None:
    db = Database(shop_engine, options())
    result = db.run_query(
        "SELECT country, COUNT(*) AS n FROM customers WHERE name LIKE 'Cust%' GROUP BY country "
        "ORDER BY n DESC, country"
    )
    assert [c.lower() for c in result.columns] == ["country", "n"]
    assert result.rows[0] == ("USA", 3) and result.row_count == 6 and not result.truncated
    total = db.run_query("SELECT SUM(amount) FROM orders WHERE status = 'shipped'").rows[0][0]
    assert float(total) > 0


def test_row_cap_flags_truncation(shop_engine: sa.Engine) -> None:
    capped = Database(shop_engine, options(row_cap=5)).run_query("SELECT id FROM orders ORDER BY id")
    assert capped.rows == tuple((i,) for i in range(1, 6)) and capped.truncated
    exact = Database(shop_engine, options(row_cap=25)).run_query("SELECT id FROM orders")
    assert exact.row_count == 25 and not exact.truncated


def test_database_error_carries_engine_text(shop_engine: sa.Engine) -> None:
    with pytest.raises(QueryError) as info:
        Database(shop_engine, options()).run_query("SELECT no_such_column FROM customers")
    assert "no_such_column" in str(info.value).lower()


SLOW = {
    "sqlite": "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT COUNT(*) FROM r",
    "duckdb": "SELECT SUM(a.range * b.range) FROM range(1000000) a, range(1000000) b",
    "postgresql": "SELECT COUNT(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b",
}


def test_timeout(shop_engine: sa.Engine) -> None:
    name = shop_engine.dialect.name
    if name not in SLOW:
        pytest.skip("fakesnow ignores STATEMENT_TIMEOUT_IN_SECONDS and timeout= (verifiedsql/guard/readonly.py)")
    db = Database(shop_engine, options(statement_timeout_s=0.5))
    with pytest.raises(QueryTimeoutError):
        db.run_query(SLOW[name])
    assert db.run_query("SELECT COUNT(*) FROM orders").rows == ((25,),)  # the connection still works


def test_in_memory_engines() -> None:
    for url in ("sqlite://", "duckdb:///:memory:"):
        engine = load_shop(sa.create_engine(url))
        db = Database(engine, options())
        assert db.run_query("SELECT COUNT(*) FROM customers").rows == ((10,),)
        assert db.reflect().table("orders").column("status").samples


# ------------------------------------------------------------------------------------------ safety

COMMON = {
    "insert": "INSERT INTO customers (id, name) VALUES (99, 'Mallory')",
    "update": "UPDATE customers SET name = 'Mallory'",
    "delete": "DELETE FROM orders",
    "create": "CREATE TABLE evil (a INTEGER)",
    "drop": "DROP TABLE orders",
    "alter": "ALTER TABLE customers ADD COLUMN evil INTEGER",
    "several statements": "SELECT 1; DELETE FROM orders",
}
SPECIFIC = {
    "sqlite": {
        "load_extension": "SELECT load_extension('{dir}/evil.so')",
        "attach": "ATTACH DATABASE '{dir}/evil.db' AS evil",
        "pragma writable_schema": "PRAGMA writable_schema = ON",
        "pragma table function": "SELECT * FROM pragma_function_list()",
    },
    "duckdb": {
        "read_csv": "SELECT * FROM read_csv('{dir}/secret.csv')",
        "replacement scan": "SELECT * FROM '{dir}/secret.csv'",
        "read_text": "SELECT content FROM read_text('{dir}/secret.csv')",
        "glob": "SELECT * FROM glob('{dir}/*')",
        "copy to": "COPY customers TO '{dir}/out.csv'",
        "install": "INSTALL httpfs",
        "load": "LOAD httpfs",
        "attach": "ATTACH '{dir}/evil.duckdb' AS evil",
        "checkpoint": "SELECT * FROM checkpoint()",
        "query()": "SELECT * FROM query('SELECT 1')",
    },
    "postgresql": {
        "cte insert": "WITH x AS (INSERT INTO customers (id, name) VALUES (99, 'M') RETURNING id) SELECT * FROM x",
        "cte delete": "WITH x AS (DELETE FROM orders RETURNING id) SELECT COUNT(*) FROM x",
        "pg_read_file": "SELECT pg_read_file('{dir}/secret.csv')",
        "lo_export": "SELECT lo_export(1234, '{dir}/lo.txt')",
        "copy to program": "COPY customers TO PROGRAM 'touch {dir}/pwned'",
        "copy to file": "COPY customers TO '{dir}/out.csv'",
        "set_config": "SELECT set_config('statement_timeout', '0', false)",
        "pg_sleep": "SELECT pg_sleep(0.1)",
        "for update": "SELECT * FROM customers FOR UPDATE",
        "select into": "SELECT * INTO stolen FROM customers",
    },
    "snowflake": {
        "put": "PUT file://{dir}/secret.csv @~",
        "copy into stage": "COPY INTO @~/out FROM customers",
        "copy into table": "COPY INTO customers FROM @~",
        "call": "CALL evil_procedure()",
        "merge": "MERGE INTO customers c USING orders o ON c.id = o.id WHEN MATCHED THEN DELETE",
    },
}
# Only real function calls must be named by function; other constructs need only be named at all.
NAMED_FUNCTIONS = {"load_extension", "read_csv", "read_text", "glob", "checkpoint", "pg_read_file",
                   "lo_export", "set_config", "pg_sleep"}


def _cases() -> list[tuple[str, str, str]]:
    cases = [(d, label, sql) for d in SPECIFIC for label, sql in COMMON.items()]
    cases += [(d, label, sql) for d, specific in SPECIFIC.items() for label, sql in specific.items()]
    return cases


def _files(path: Path) -> set[str]:
    return {str(p) for p in path.rglob("*")}


@pytest.mark.parametrize(("dialect", "label", "sql"), _cases(), ids=[f"{d}-{name}" for d, name, _ in _cases()])
def test_safety_matrix(dialect: str, label: str, sql: str, engine_factory, target_dir: Path, tmp_path: Path) -> None:
    engine = load_shop(engine_factory(dialect))
    db = Database(engine, options(statement_timeout_s=5))
    sql = sql.format(dir=target_dir)
    before, files_before, tmp_before = checksum(engine), _files(target_dir), _files(tmp_path)

    with pytest.raises(UnsafeSQLError) as statement:
        db.run_query(sql)
    with pytest.raises(UnsafeSQLError) as engine_layer:
        db.run_query(sql, guard=False)

    assert statement.value.layer == "statement" and statement.value.construct
    assert engine_layer.value.layer == "engine" and engine_layer.value.construct
    if label in NAMED_FUNCTIONS:
        assert label in statement.value.construct and label in engine_layer.value.construct
    assert checksum(engine) == before
    assert _files(target_dir) == files_before and _files(tmp_path) == tmp_before
    # the user's own connection is untouched: it can still write
    with engine.begin() as conn:
        conn.exec_driver_sql("DELETE FROM orders WHERE id = 25")
    assert db.run_query("SELECT COUNT(*) FROM orders").rows == ((24,),)


def test_engine_settings_restored(engine_factory) -> None:
    sqlite_engine = load_shop(engine_factory("sqlite"))
    Database(sqlite_engine, options()).run_query("SELECT 1")
    with sqlite_engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA query_only").scalar() == 0
        assert conn.exec_driver_sql("SELECT randomblob(4)").scalar()  # no authorizer left behind
    duck = load_shop(engine_factory("duckdb"))
    Database(duck, options()).run_query("SELECT 1")
    with duck.connect() as conn:
        assert conn.exec_driver_sql("SELECT current_setting('autoload_known_extensions')").scalar() is True


def test_postgres_open_transaction_is_refused(postgres_url: str) -> None:
    import psycopg

    from verifiedsql.guard.readonly import postgresql
    from verifiedsql.profiles import profile_for

    url = sa.make_url(postgres_url)
    with psycopg.connect(host=url.host, port=url.port, user=url.username, dbname=url.database) as raw:
        raw.execute("SELECT 1")
        with pytest.raises(OpenTransactionError, match="commit or roll back"):
            with postgresql(raw, "SELECT 1", profile_for("postgresql"), 1.0):
                pass


CONTROLS = {  # the same kind of statement, run with no verifiedsql in the way, does reach target_dir
    "sqlite": "ATTACH DATABASE '{dir}/control.db' AS control",
    "duckdb": "COPY customers TO '{dir}/control.csv'",
    "postgresql": "COPY customers TO '{dir}/control.csv'",
}


@pytest.mark.parametrize("dialect", sorted(CONTROLS))
def test_unguarded_control_reaches_target_dir(dialect: str, engine_factory, target_dir: Path) -> None:
    """Shows the safety matrix is meaningful: the engines can write to ``target_dir`` when unguarded."""
    engine = load_shop(engine_factory(dialect))
    with engine.begin() as conn:
        conn.exec_driver_sql(CONTROLS[dialect].format(dir=target_dir))
    assert any(p.name.startswith("control") for p in target_dir.iterdir())


def test_postgres_autocommit_connection(engine_factory) -> None:
    """A wrapped autocommit connection gets ``BEGIN READ ONLY`` and is left idle and autocommit."""
    import psycopg

    from verifiedsql.guard.readonly import postgresql
    from verifiedsql.profiles import profile_for

    engine = load_shop(engine_factory("postgresql"))
    url = engine.url
    profile = profile_for("postgresql")
    with psycopg.connect(host=url.host, port=url.port, user=url.username, dbname=url.database,
                         autocommit=True) as raw:
        with postgresql(raw, "SELECT COUNT(*) FROM orders", profile, 1.0) as cursor:
            assert cursor.fetchall() == [(25,)]
        with pytest.raises(UnsafeSQLError):
            with postgresql(raw, "SELECT * INTO stolen FROM orders", profile, 1.0):
                pass
        assert raw.autocommit and raw.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert raw.execute("SELECT to_regclass('stolen')").fetchone() == (None,)


def test_reflect_samples_in_one_query_per_batch_of_tables(shop_engine: sa.Engine, monkeypatch) -> None:
    """Both tables are read by one UNION ALL (``verifiedsql.db.samples``), each scanning its first 1,000 rows."""
    db = Database(shop_engine, options(sample_values=3))
    statements: list[str] = []
    run_on = Database._run_on

    def counting(self, conn, sql, cap, timeout_s, **engine):
        statements.append(sql)
        return run_on(self, conn, sql, cap, timeout_s, **engine)

    monkeypatch.setattr(Database, "_run_on", counting)
    schema = db.reflect()
    assert len(schema.tables) == 2 and len(statements) == 1
    assert statements[0].count("LIMIT 1000") == 2 and "UNION ALL" in statements[0]
    for table in schema.tables:
        assert all(1 <= len(c.samples) <= 3 for c in table.columns)


def test_distinct_samples_handle_unhashable_values() -> None:
    from verifiedsql.db.samples import distinct_values as _distinct_values

    values = [None, [1], [1], {"a": 1}, 2, 2, 2.0, "x", {"a": 1}, [2]]
    assert _distinct_values(values, 10) == [[1], {"a": 1}, 2, "x", [2]]
    assert _distinct_values(values, 2) == [[1], {"a": 1}]


def test_reflect_duplicate_foreign_key_without_warning(tmp_path: Path) -> None:
    """Spider's dog_kennels declares one foreign key twice; SQLAlchemy's warning about it is silenced."""
    import warnings

    engine = sa.create_engine(f"sqlite:///{tmp_path / 'dogs.sqlite'}")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE Owners (owner_id BIGINT, PRIMARY KEY (owner_id))")
        conn.exec_driver_sql(
            "CREATE TABLE Dogs (dog_id BIGINT, owner_id BIGINT NOT NULL, PRIMARY KEY (dog_id), "
            "FOREIGN KEY (owner_id) REFERENCES Owners (owner_id), FOREIGN KEY (owner_id) REFERENCES Owners (owner_id))"
        )
        conn.exec_driver_sql("INSERT INTO Owners VALUES (1)")
        conn.exec_driver_sql("INSERT INTO Dogs VALUES (7, 1)")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        schema = Database(engine, options(sample_values=2)).reflect()
    assert [t.name for t in schema.tables] == ["Dogs", "Owners"]
    assert [(fk.columns, fk.referred_table, fk.referred_columns) for fk in schema.table("Dogs").foreign_keys] == [
        (("owner_id",), "Owners", ("owner_id",))
    ]
    assert schema.table("Dogs").column("dog_id").samples == (7,)
