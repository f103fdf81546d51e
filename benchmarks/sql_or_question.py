"""SQL or question: the confusion matrix of ``verifiedsql.dbapi``'s reading, per engine, in Markdown.

    .venv/bin/python benchmarks/sql_or_question.py            # every engine
    .venv/bin/python benchmarks/sql_or_question.py sqlite     # some engines only
    .venv/bin/python benchmarks/sql_or_question.py --misread  # also list every text read the wrong way

The corpus is tests/hostile/data/statements.toml (valid statements per engine, malformed statements per
engine, and plain questions for every engine). Each text is read by ``verifiedsql.guard.statements.classify``,
the function ``Cursor.execute`` calls in ``mode="auto"``: ``sql`` runs on the driver, ``question`` goes to
the model, ``malformed`` raises ``verifiedsql.dbapi.ProgrammingError``. Nothing runs and no model is
called: the readings need no database (each engine's parser works offline) and no network.
tests/hostile/test_sql_or_question.py checks the same corpus through real wrapped connections.
"""

from __future__ import annotations

import argparse
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from verifiedsql import backends  # noqa: E402
from verifiedsql.guard.statements import classify  # noqa: E402

CORPUS = ROOT / "tests" / "hostile" / "data" / "statements.toml"
ENGINES = backends.names()  # every registered engine (verifiedsql/backends/)
ROWS = (("statement", "sql", "valid statements"), ("question", "question", "questions"),
        ("malformed", "malformed", "malformed statements"))
COLUMNS = (("ran as SQL", "sql"), ("went to the model", "question"), ("ProgrammingError", "malformed"))


def texts_for(corpus: dict, engine: str) -> dict[str, list[str]]:
    """The corpus for one engine: row name -> texts."""
    def section(name: str) -> list[str]:
        return [sql for group in corpus[name] if engine in group["engines"] for sql in group["sql"]]

    return {"statement": section("statements"), "question": list(corpus["questions"]),
            "malformed": section("malformed")}


def matrix(engine: str, corpus: dict) -> tuple[list[str], list[tuple[str, str, str]], float]:
    """Markdown lines of one engine's matrix, the misread texts (row, reading, text), and µs per text."""
    lines = [f"**{engine}**", "", "| text \\ read as | " + " | ".join(c for c, _ in COLUMNS) + " | total |",
             "|---|" + "---:|" * (len(COLUMNS) + 1)]
    misread: list[tuple[str, str, str]] = []
    started, count = time.perf_counter(), 0
    for row, expected, label in ROWS:
        texts = texts_for(corpus, engine)[row]
        counts = {kind: 0 for _, kind in COLUMNS}
        for text in texts:
            kind = classify(text, engine).kind
            counts[kind] += 1
            count += 1
            if kind != expected:
                misread.append((row, kind, text))
        cells = [f"**{counts[kind]}**" if kind == expected else str(counts[kind]) for _, kind in COLUMNS]
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {len(texts)} |")
    return lines, misread, (time.perf_counter() - started) / max(count, 1) * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("engines", nargs="*", choices=[*ENGINES, []], default=[], help="default: all four")
    parser.add_argument("--misread", action="store_true", help="list every text read the wrong way")
    parser.add_argument("--corpus", type=Path, default=CORPUS,
                        help="another corpus of the same format (default: the one the rule was written with; "
                             "tests/hostile/data/statements_heldout.toml is a held-out one)")
    args = parser.parse_args()
    path = args.corpus.resolve()
    corpus = tomllib.loads(path.read_text("utf-8"))
    statements = {sql for group in corpus["statements"] for sql in group["sql"]}
    print(f"Corpus: {len(statements)} distinct valid statements, {len(corpus['questions'])} questions, "
          f"{sum(len(g['sql']) for g in corpus['malformed'])} malformed statements "
          f"({path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}).\n")
    wrong = 0
    for engine in args.engines or ENGINES:
        lines, misread, micros = matrix(engine, corpus)
        wrong += len(misread)
        print("\n".join(lines))
        print(f"\n{micros:.0f} µs per text on average.\n")
        if args.misread:
            for row, kind, text in misread:
                print(f"- {row} read as {kind}: {text!r}")
            print()
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
