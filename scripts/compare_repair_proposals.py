"""Differential check of the deterministic repair (``verifiedsql.stages.repair``) between two checkouts.

Every failing candidate in the committed records (benchmarks/runs/*/*.jsonl) is repaired on the schema of its
Spider database (reflected from the SQLite file, with samples), and what comes out is written as JSON:

* ``proposals``: ``proposals()`` for the record's engine and for PostgreSQL, DuckDB and Snowflake (the pure
  function: schema, dialect, SQL and error in, repaired SQLs and their fixes out);
* ``runs``: on SQLite, ``repair_failure()`` with each repair run on the Spider file itself (read-only, a
  statement stopped after a fixed number of SQLite VM steps, so the outcome does not depend on the machine's
  speed): the loop over rounds and runs, and the repair that ran.

Run it once per checkout and compare the two files byte for byte::

    PYTHONPATH=/work/main .venv/bin/python scripts/compare_repair_proposals.py /tmp/main.json
    PYTHONPATH=$PWD .venv/bin/python scripts/compare_repair_proposals.py /tmp/here.json
    cmp /tmp/main.json /tmp/here.json

It imports the modules by name, so it runs on the layout before and after issue 36 moved them.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import importlib
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import sqlalchemy as sa

SPIDER = Path("/work/shared/data/spider_dev/database")
DIALECTS = {"sqlite": "sqlite", "postgresql": "postgres", "duckdb": "duckdb", "snowflake": "snowflake"}
STEPS = 2_000_000  # SQLite VM steps one repair may run before it counts as a timeout


def _module(*names: str) -> Any:
    """The first of ``names`` (relative to the package) that imports: the layout before or after the move."""
    for name in names:
        try:
            return importlib.import_module("verifiedsql." + name)
        except ModuleNotFoundError:
            continue
    raise SystemExit(f"none of {names} imports")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="where the JSON goes")
    parser.add_argument("--runs", default="benchmarks/runs/*/*.jsonl", help="the records (a glob)")
    args = parser.parse_args()
    database = _module("db.database", "database")
    config = _module("config")
    repair = _module("stages.repair")
    generate = _module("stages.generate")
    schemas: dict[str, Any] = {}

    def schema(db: str) -> Any:
        if db not in schemas:
            engine = sa.create_engine(f"sqlite:///{SPIDER / db / db}.sqlite")
            reader = database.Database(engine, config.Options())
            schemas[db] = reader.with_samples(reader.reflect())
        return schemas[db]

    inputs: dict[tuple[str, str, str, str], None] = {}  # (db, engine, sql, error), in the records' order
    failing = 0
    for path in sorted(glob.glob(args.runs)):
        for line in open(path, encoding="utf-8"):
            record = json.loads(line)
            for candidate in record.get("candidates", []):
                if candidate.get("status") != "error" or not candidate.get("sql") or "db_id" not in record:
                    continue
                failing += 1
                for engine in sorted({record.get("engine", "sqlite"), *DIALECTS}):
                    inputs.setdefault((record["db_id"], engine, candidate["sql"], candidate.get("error") or ""))

    proposals, runs = [], []
    for db, engine, sql, error in inputs:
        found = repair.proposals(schema(db), DIALECTS[engine], engine, sql, error)
        proposals.append([db, engine, sql, error, [[p.sql, list(p.fixes)] for p in found]])
        if engine != "sqlite":
            continue
        with sqlite3.connect(f"file:{SPIDER / db / db}.sqlite?mode=ro", uri=True) as connection:
            def run(statement: str, connection: sqlite3.Connection = connection) -> Any:
                connection.set_progress_handler(lambda: 1, STEPS)
                try:
                    connection.execute(statement).fetchall()
                except sqlite3.OperationalError as failure:
                    if str(failure) == "interrupted":
                        return generate.Execution(None, False, "timeout", str(failure))
                    return generate.Execution(None, False, "error", str(failure))
                except sqlite3.Error as failure:
                    return generate.Execution(None, False, "error", str(failure))
                return generate.Execution(None, False, "ok", None)

            done = repair.repair_failure(schema(db), "sqlite", "sqlite", sql, error, run)
        runs.append([db, sql, error, None if done is None else [done.sql, list(done.fixes)]])

    text = json.dumps({"proposals": proposals, "runs": runs}, sort_keys=True, indent=0)
    args.out.write_text(text, encoding="utf-8")
    print(f"{failing} failing candidates, {len(proposals)} (database, engine, SQL, error) inputs, "
          f"{sum(1 for p in proposals if p[4])} with proposals, {sum(len(p[4]) for p in proposals)} proposals; "
          f"{len(runs)} SQLite repair loops, {sum(1 for r in runs if r[3])} repaired; "
          f"sha256 {hashlib.sha256(text.encode()).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
