"""Command line: ``verifiedsql ask URL "question"`` and ``verifiedsql llm install|serve``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from .bench.cli import add_bench_commands
from .errors import NoAnswerError, NoDataError, UnverifiedAnswerError, VerifiedSQLError
from .llm.base import ChatModel, ChatRequest, ChatResponse
from .llm.commands import add_llm_commands, run_llm_command
from .report import CONFIDENCE_TIERS

EXIT_NO_DATA = 4
EXIT_STATUSES = ("exit status: 0 answered; 2 an error, or no query ran (NoAnswerError); 3 the answer is below "
                 "--require; 4 the database holds no data for the question (NoDataError)")


class ProgressChatModel:
    """Wraps a model client and tells stderr about each call, so a slow local model shows life."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.calls = 0
        self.started = time.perf_counter()

    @property
    def name(self) -> str:
        return self.inner.name

    def complete(self, request: ChatRequest) -> ChatResponse:
        self.calls += 1
        elapsed = time.perf_counter() - self.started
        print(f"  [{elapsed:5.1f}s] model call {self.calls}: {request.purpose}...", file=sys.stderr, flush=True)
        return self.inner.complete(request)


def format_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], limit: int = 50) -> str:
    """A plain-text table of at most ``limit`` rows."""
    shown = [["NULL" if v is None else str(v) for v in row] for row in rows[:limit]]
    widths = [max([len(c)] + [len(r[i]) for r in shown]) for i, c in enumerate(columns)]
    line = " | ".join(c.ljust(w) for c, w in zip(columns, widths))
    out = [line, "-+-".join("-" * w for w in widths)]
    out += [" | ".join(v.ljust(w) for v, w in zip(r, widths)) for r in shown]
    if len(rows) > limit:
        out.append(f"... {len(rows) - limit} more rows")
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out)


def _ask(args: argparse.Namespace) -> int:
    import sqlalchemy as sa

    from .config import Options
    from .database import Database
    from .llm import chat_model_for
    from .pipeline import Pipeline

    values: dict[str, Any] = {"candidates": args.candidates}
    if args.model:
        values["local_model"] = args.model
    if args.cache:
        values["cache"] = args.cache
    if args.schema:
        values["schema"] = args.schema
    if args.require:
        values["require"] = args.require
    if args.scope_check:
        values["scope_check"] = True
    options = Options.build(values)
    url = sa.make_url(args.url)
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:") \
            and not Path(url.database).exists():
        print(f"error: no SQLite database at {url.database}", file=sys.stderr)
        return 2
    engine = sa.create_engine(url)
    print("preparing the model (first use installs it)...", file=sys.stderr, flush=True)
    llm = ProgressChatModel(chat_model_for(options))
    pipeline = Pipeline(Database(engine, options), llm, options)
    try:
        answer = pipeline.answer(args.question)
    except NoDataError as error:  # no table or column holds what was asked: a question for another source
        print(f"no data: {error}", file=sys.stderr)
        if args.json:
            print(json.dumps(error.report.to_dict(), default=str, indent=2))
        return EXIT_NO_DATA
    except NoAnswerError as error:
        print(f"error: {error}", file=sys.stderr)
        if args.json:
            print(json.dumps(error.report.to_dict(), default=str, indent=2))
        return 2
    except UnverifiedAnswerError as error:  # the best answer is shown, marked, and the exit status says so
        print(f"error: {error}", file=sys.stderr)
        if args.json:
            print(json.dumps({"columns": error.columns, "rows": [list(r) for r in error.rows],
                              "verification": error.report.to_dict()}, default=str, indent=2))
        else:
            print(format_table(error.columns, error.rows))
            print()
            print(error.report.summary())
        return 3
    if args.json:
        payload = {"columns": list(answer.result.columns), "rows": [list(r) for r in answer.result.rows],
                   "verification": answer.report.to_dict()}
        print(json.dumps(payload, default=str, indent=2))
    else:
        print(format_table(answer.result.columns, answer.result.rows))
        print()
        print(answer.report.summary())
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="verifiedsql", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    ask = commands.add_parser("ask", help="answer a question about a database", epilog=EXIT_STATUSES)
    ask.add_argument("url", help="SQLAlchemy URL, e.g. sqlite:///examples/shop.db")
    ask.add_argument("question")
    ask.add_argument("--json", action="store_true", help="print rows and the full report as JSON")
    ask.add_argument("--model", choices=["1.5b", "0.5b"], help="embedded model size (default 1.5b)")
    ask.add_argument("--candidates", type=int, default=5, help="candidates to generate (default 5)")
    ask.add_argument("--cache", help="record/replay cache file (read-write)")
    ask.add_argument("--schema", help="database schema/namespace to use")
    ask.add_argument("--require", choices=list(CONFIDENCE_TIERS),
                     help="lowest confidence tier to accept; below it the exit status is 3 (default: none)")
    ask.add_argument("--scope-check", action="store_true",
                     help="below probable, ask the model whether the schema holds the data (off by default)")
    ask.set_defaults(handler=_ask)
    add_llm_commands(commands)
    add_bench_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler = getattr(args, "handler", None)
    try:
        if handler is not None:
            return handler(args)
        return run_llm_command(args)
    except VerifiedSQLError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
