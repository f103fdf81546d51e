"""Questions on two databases unlike Spider's, with the embedded model: each question's outcome.

- ``awkward``: names with spaces, signs and non-ASCII letters (``"Customer Info"."City Name"``,
  ``"Preis (EUR)"``), a table and a column named by reserved words (``"order"``, ``"select"``), 300,000 rows;
- ``wide``: 50 tables of 12 columns, whose schema prompt (about 15,000 model tokens) is over the embedded
  server's 4,096-token window.

Each answer is compared with the SQL written here for its question (``None``: the data holds no answer, so
``NoDataError`` is the right outcome). Not a test: it runs the real model (about 1 minute a question on 2
cores). ``python benchmarks/unlike_spider.py [--model 0.5b|1.5b] [--cache FILE [--replay]]`` prints one line a
question: the database, the outcome (right or wrong, with the tier or the error), the seconds, the question.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import tempfile
import time
from pathlib import Path

import verifiedsql
from verifiedsql.errors import VerifiedSQLError

AWKWARD = [
    ("How many customers live in München?", "SELECT COUNT(*) FROM \"Customer Info\" WHERE \"City Name\" = 'München'"),
    ("What is the average price of products in the Garden category?",
     "SELECT AVG(\"Preis (EUR)\") FROM \"Produkt Übersicht\" WHERE category = 'Garden'"),
    ("Which city has the most customers?",
     "SELECT \"City Name\" FROM \"Customer Info\" GROUP BY 1 ORDER BY COUNT(*) DESC LIMIT 1"),
    ("How many orders used express shipping?", "SELECT COUNT(*) FROM \"order\" WHERE \"select\" = 'express'"),
    ("What is the total quantity ordered by the customer named Person 42?",
     "SELECT SUM(qty) FROM \"order\" JOIN \"Customer Info\" USING (\"Customer ID\") WHERE \"Full Name\" = 'Person 42'"),
    ("List the 3 most expensive products.",
     "SELECT Bezeichnung, \"Preis (EUR)\" FROM \"Produkt Übersicht\" ORDER BY 2 DESC LIMIT 3"),
    ("What is the capital of France?", None),
]
WIDE = [
    ("How many tickets have priority 5?", "SELECT COUNT(*) FROM ticket WHERE priority = 5"),
    ("How many invoices are closed?", "SELECT COUNT(*) FROM invoice WHERE status = 'closed'"),
    ("What is the total amount of all payments?", "SELECT SUM(amount) FROM payment"),
]
CITIES = ["Berlin", "München", "Köln", "Paris", "New York", "São Paulo"]
WIDE_TABLES = ["account", "branch", "invoice", "payment", "product", "vendor", "employee", "shipment", "warehouse",
               "region", "contract", "ticket", "campaign", "lead", "asset", "budget", "course", "student", "teacher",
               "room", "device", "sensor", "reading", "alert", "patient", "visit", "doctor", "drug", "claim", "policy"]


def build_awkward(path: Path) -> None:
    rng = random.Random(1)
    with sqlite3.connect(path) as db:
        db.executescript(
            'CREATE TABLE "Customer Info" ("Customer ID" INTEGER PRIMARY KEY, "Full Name" TEXT, "City Name" TEXT, '
            '"Sign-up Date" TEXT);'
            'CREATE TABLE "Produkt Übersicht" (pid INTEGER PRIMARY KEY, Bezeichnung TEXT, "Preis (EUR)" REAL, '
            'category TEXT);'
            'CREATE TABLE "order" ("order" INTEGER PRIMARY KEY, "Customer ID" INTEGER REFERENCES '
            '"Customer Info"("Customer ID"), pid INTEGER REFERENCES "Produkt Übersicht"(pid), qty INTEGER, '
            '"select" TEXT);')
        db.executemany('INSERT INTO "Customer Info" VALUES (?, ?, ?, ?)', [
            (i, f"Person {i}", rng.choice(CITIES), f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}")
            for i in range(1, 20_001)])
        db.executemany('INSERT INTO "Produkt Übersicht" VALUES (?, ?, ?, ?)', [
            (i, f"Item {i}", round(rng.uniform(1, 500), 2), rng.choice(["Books", "Garden", "Toys"]))
            for i in range(1, 501)])
        db.executemany('INSERT INTO "order" VALUES (?, ?, ?, ?, ?)', [
            (i, rng.randint(1, 20_000), rng.randint(1, 500), rng.randint(1, 9), rng.choice(["express", "standard"]))
            for i in range(1, 300_001)])


def build_wide(path: Path) -> None:
    rng = random.Random(2)
    with sqlite3.connect(path) as db:
        for name in WIDE_TABLES + [f"{t}_history" for t in WIDE_TABLES[:20]]:
            db.execute(f"CREATE TABLE {name} ({name}_id INTEGER PRIMARY KEY, name TEXT, status TEXT, created_at TEXT, "
                       "amount REAL, code TEXT, description TEXT, owner_name TEXT, category TEXT, priority INTEGER, "
                       "notes TEXT, updated_at TEXT)")
            db.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' * 12)})", [
                (j, f"{name} {j}", rng.choice(["open", "closed", "pending"]), f"2024-0{rng.randint(1, 9)}-1{j % 10}",
                 round(rng.uniform(1, 1000), 2), f"C{j:04d}", f"Description of {name} {j}", f"Owner {j % 7}",
                 rng.choice("ABC"), rng.randint(1, 5), "n/a", "2025-01-01") for j in range(1, 51)])


def run(path: Path, questions: list[tuple[str, str | None]], options: dict[str, object]) -> None:
    engine = verifiedsql.create_engine(f"sqlite:///{path}", **options)
    for question, gold in questions:
        start = time.perf_counter()
        expected = None if gold is None else sorted(sqlite3.connect(path).execute(gold).fetchall())
        try:
            with engine.connect() as conn:
                result = conn.execute(verifiedsql.ask(question))
                rows = sorted(tuple(row) for row in result.all())
            outcome = f"{'right' if rows == expected else 'wrong'} ({result.verification.confidence})"
        except VerifiedSQLError as error:
            right = gold is None and type(error).__name__ == "NoDataError"
            outcome = f"{'right' if right else 'wrong'} ({type(error).__name__})"
        print(f"{path.stem}\t{outcome}\t{time.perf_counter() - start:.0f} s\t{question}", flush=True)
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="0.5b", choices=["0.5b", "1.5b"])
    parser.add_argument("--cache", help="a record/replay cache file (recorded into, unless --replay)")
    parser.add_argument("--replay", action="store_true", help="answer from --cache only, never calling the model")
    args = parser.parse_args()
    mode = "replay" if args.replay else "readwrite"
    options: dict[str, object] = {"cache_path": args.cache, "cache_mode": mode} if args.cache else {}
    os.environ["VERIFIEDSQL_LOCAL_MODEL"] = args.model
    with tempfile.TemporaryDirectory() as folder:
        for name, build, questions in (("awkward", build_awkward, AWKWARD), ("wide", build_wide, WIDE)):
            path = Path(folder) / f"{name}.db"
            build(path)
            run(path, questions, options)


if __name__ == "__main__":
    main()
