"""Command line: ``verifiedsql ask URL "question"``, ``verifiedsql llm install|serve`` and ``verifiedsql bench``.

``verifiedsql ask`` answers through the library's public path (``verifiedsql.create_engine``, then
``conn.execute(verifiedsql.ask(...))``), and every option ``create_engine`` takes is one of its flags,
generated from the ``Options`` dataclass (README, Options)."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import json
import re
import sys
import time
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Sequence

from .bench.cli import add_bench_commands
from .config import LOCAL_MODELS, LLMSettings, Options
from .errors import ConfigurationError, NoAnswerError, NoDataError, UnverifiedAnswerError, VerifiedSQLError
from .llm.base import ChatModel, ChatRequest, ChatResponse
from .llm.commands import add_llm_commands, run_llm_command
from .report import VerificationReport

EXIT_NO_DATA = 4
EXIT_STATUSES = ("exit status: 0 answered; 2 an error, or no query ran (NoAnswerError); 3 the answer is below "
                 "--require; 4 the database holds no data for the question (NoDataError)")
# the status of an answer (the --json object's "status") -> the exit status
STATUS_EXIT = {"answered": 0, "unverified": 3, "no_data": EXIT_NO_DATA, "no_answer": 2, "error": 2}
FLAG_ALIASES = {"local_model": ("--model",)}  # flags an option has besides its own name
FLAG_CHOICES = {"local_model": LOCAL_MODELS}  # a str option whose values are known
FLAG_NOTES = {"llm_api_key": "prefer the environment variable, which other users cannot read in the process list"}
HELP_FALLBACK = {"cache_path": "the record/replay cache file, used as cache_mode says"}  # not a row of the table


class ProgressChatModel:
    """Wraps a model client and tells stderr about each call, so a slow local model shows life."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner
        self.calls = 0
        self.started = time.perf_counter()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def complete(self, request: ChatRequest) -> ChatResponse:
        self.calls += 1
        print(f"  [{self.elapsed:5.1f}s] model call {self.calls}: {request.purpose}...", file=sys.stderr, flush=True)
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


# ------------------------------------------------------------------------------------------ option flags


@dataclass(frozen=True)
class OptionFlag:
    """One keyword option of ``create_engine`` as a flag: an ``Options`` field, or an LLM setting by the
    keyword ``Options.build`` takes for it (``llm_base_url``, ``local_model``, ...)."""

    name: str
    kind: Any  # the field's type, ``X | None`` unwrapped
    default: Any  # the dataclass default; dataclasses.MISSING for none

    @property
    def flags(self) -> tuple[str, ...]:
        return ("--" + self.name.replace("_", "-"), *FLAG_ALIASES.get(self.name, ()))


def llm_keyword(setting: str) -> str:
    """The ``Options.build`` keyword of an ``LLMSettings`` field: ``local_*`` as it is, the rest ``llm_*``."""
    return setting if setting.startswith("local_") else f"llm_{setting}"


def _unwrap_optional(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return annotation


def option_flags() -> list[OptionFlag]:
    """Every option ``create_engine`` takes, in the order ``Options`` declares them; the ``llm`` field is
    replaced by the keywords of its settings."""
    flags: list[OptionFlag] = []
    for cls in (Options, LLMSettings):
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if cls is Options and f.name == "llm":
                continue
            name = llm_keyword(f.name) if cls is LLMSettings else f.name
            flags.append(OptionFlag(name, _unwrap_optional(hints[f.name]), f.default))
    return flags


def _readme_text() -> str:
    """The README: the checkout's, else the one in the package metadata (an installed wheel)."""
    checkout = Path(__file__).resolve().parents[1] / "README.md"
    if checkout.is_file():
        return checkout.read_text(encoding="utf-8")
    try:
        return str(importlib.metadata.metadata("verifiedsql").json.get("description", ""))
    except importlib.metadata.PackageNotFoundError:
        return ""


def first_clause(text: str, at_least: int = 40) -> str:
    """The first clause of a README table cell: up to a ``;`` outside parentheses, or a ``:`` or ``.`` outside
    parentheses once ``at_least`` characters are in; backticks dropped."""
    depth = 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth or text[i + 1:i + 2] != " ":
            continue
        if char == ";" or (char in ":." and i >= at_least and text[i - 3:i] not in ("e.g", "i.e")):
            text = text[:i]
            break
    return text.replace("`", "").strip()


@dataclass(frozen=True)
class ReadmeRow:
    """An option's row of the README's options table."""

    first: str  # the row's first option (``dpc`` for ``dpc_votes``)
    default: str  # the default cell, backticks dropped
    meaning: str  # the first clause of the meaning cell


def readme_option_help(readme: str | None = None) -> dict[str, ReadmeRow]:
    """Option name -> its row of the README's options table."""
    text = _readme_text() if readme is None else readme
    start = re.search(r"^### Options[ \t]*$", text, re.MULTILINE)
    rows: dict[str, ReadmeRow] = {}
    if start is None:
        return rows
    for line in text[start.end():].splitlines():
        if line.startswith("#"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        names = re.findall(r"`([^`]+)`", cells[0]) if line.startswith("| `") and len(cells) >= 3 else []
        for name in names:
            rows[name] = ReadmeRow(names[0], cells[1].replace("`", ""), first_clause("|".join(cells[2:])))
    return rows


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def _metavar(option: OptionFlag) -> str:
    if option.kind is Path:
        return "FILE"
    if option.kind is str:
        return "URL" if option.name.endswith("_url") else "KEY" if option.name.endswith("_key") else "NAME"
    return "N" if option.kind is int else "SECONDS" if option.name.endswith("_s") else "X"


def _help(option: OptionFlag, switches: set[str], rows: dict[str, ReadmeRow]) -> str:
    fallback = HELP_FALLBACK.get(option.name, "see README, Options")
    row = rows.get(option.name, ReadmeRow(option.name, "", fallback))
    meaning = row.meaning
    if row.first != option.name and row.first in switches:  # dpc_votes in the row of dpc: a setting of dpc
        meaning = f"a setting of --{row.first.replace('_', '-')} (README, Options)"
    text = meaning + (f"; {FLAG_NOTES[option.name]}" if option.name in FLAG_NOTES else "")
    if re.search(r"\benv\b|\bby model\b", row.default):  # the environment or the model decides: the README says
        text += f" (default: {row.default})"
    elif option.default is not dataclasses.MISSING:
        text += f" (default: {_shown(option.default)})"
    return text.replace("%", "%%")


def add_option_flags(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """One flag per option (``option_flags``): ``--name``/``--no-name`` for a switch, the choices of a
    ``Literal``, a typed value otherwise; the help from the README's options table. Unset flags stay out of
    the namespace, so the options' own defaults and environment fallbacks apply."""
    rows = readme_option_help()
    options = option_flags()
    switches = {option.name for option in options if option.kind is bool}
    for option in options:
        common: dict[str, Any] = {"dest": option.name, "default": argparse.SUPPRESS,
                                  "help": _help(option, switches, rows)}
        choices = FLAG_CHOICES.get(option.name)
        if option.kind is bool:
            parser.add_argument(*option.flags, action=argparse.BooleanOptionalAction, **common)
        elif typing.get_origin(option.kind) is Literal or choices:
            parser.add_argument(*option.flags, choices=list(choices or typing.get_args(option.kind)), **common)
        elif option.kind in (int, float, str, Path):
            parser.add_argument(*option.flags, type=option.kind, metavar=_metavar(option), **common)
        else:  # a new field of a type no flag can give
            raise TypeError(f"Options.{option.name}: no command-line flag for type {option.kind!r}")


def option_values(args: argparse.Namespace) -> dict[str, Any]:
    """The options given on the command line, as ``create_engine`` keywords."""
    values = {option.name: getattr(args, option.name) for option in option_flags() if hasattr(args, option.name)}
    if getattr(args, "cache", None) is not None:
        values["cache"] = args.cache
    return values


# ------------------------------------------------------------------------------------------ ask


@dataclass
class Outcome:
    """What ``verifiedsql ask`` found: the answer (or the best one below --require), the report, the error."""

    question: str
    status: str = "answered"  # a key of STATUS_EXIT
    columns: list[str] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    report: VerificationReport | None = None
    error: BaseException | None = None

    @property
    def exit_status(self) -> int:
        return STATUS_EXIT[self.status]

    def to_json(self) -> dict[str, Any]:
        """The documented ``--json`` object (docs: Using it, Command line)."""
        report = self.report
        return {
            "status": self.status,
            "question": self.question,
            "sql": report.sql if report else None,
            "columns": self.columns,
            "rows": self.rows,
            "confidence": report.confidence if report else None,
            "truncated": report.truncated if report else False,
            "error": None if self.error is None else {"type": type(self.error).__name__, "message": str(self.error)},
            "report": report.to_dict() if report else None,
        }


def open_engine(args: argparse.Namespace, llm: ChatModel) -> Any:
    """The verified engine ``verifiedsql ask`` asks through: ``verifiedsql.create_engine`` with the options
    given on the command line and ``llm`` as the model."""
    from .engine import create_engine

    return create_engine(args.url, llm=llm, **option_values(args))


def answer(args: argparse.Namespace, progress: bool = True) -> Outcome:
    """Ask ``args.question`` through the public engine path; every outcome, errors included, comes back."""
    import sqlalchemy as sa

    from .engine import ask
    from .llm import chat_model_for

    outcome = Outcome(args.question)
    model: ChatModel | None = None
    engine = None
    try:
        options = Options.build(option_values(args))
        url = sa.make_url(args.url)
        if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:") \
                and not Path(url.database).exists():
            raise ConfigurationError(f"no SQLite database at {url.database}; check the path in the URL.")
        if progress and options.llm.uses_embedded_model and options.cache_mode != "replay":
            print("preparing the model (first use installs it)...", file=sys.stderr, flush=True)
        model = chat_model_for(options)
        engine = open_engine(args, ProgressChatModel(model) if progress else model)
        with engine.connect() as conn:
            result = conn.execute(ask(args.question))
            outcome.columns = list(result.keys())
            outcome.rows = [list(row) for row in result.all()]
        outcome.report = result.verification
    except NoDataError as error:  # no table or column holds what was asked: a question for another source
        outcome.status, outcome.report, outcome.error = "no_data", error.report, error
    except NoAnswerError as error:
        outcome.status, outcome.report, outcome.error = "no_answer", error.report, error
    except UnverifiedAnswerError as error:  # the best answer is kept, and the status says so
        outcome.status, outcome.report, outcome.error = "unverified", error.report, error
        outcome.columns, outcome.rows = list(error.columns), [list(row) for row in error.rows]
    except (VerifiedSQLError, sa.exc.SQLAlchemyError) as error:  # a bad URL or option, an unreachable model
        outcome.status, outcome.error = "error", error
        report = getattr(error, "report", None)
        outcome.report = report if isinstance(report, VerificationReport) else None
    finally:
        if engine is not None:
            engine.dispose()
        close = getattr(model, "close", None)  # the model is ours, not the engine's: e.g. the cache file
        if callable(close):
            close()
    return outcome


def _ask(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    outcome = answer(args, progress=not args.quiet)
    if outcome.error is not None:
        label = "no data" if outcome.status == "no_data" else "error"
        print(f"{label}: {outcome.error}", file=sys.stderr)
    if args.html:
        if outcome.report is not None:
            Path(args.html).write_text(outcome.report.to_html(), encoding="utf-8")
        else:
            print(f"no report to write to {args.html}: the question never reached the pipeline", file=sys.stderr)
    if args.json:
        print(json.dumps(outcome.to_json(), default=str, indent=2))
    elif outcome.status in ("answered", "unverified") and outcome.report is not None:
        print(format_table(outcome.columns, outcome.rows))
        print()
        print(outcome.report.summary())
    if not args.quiet:
        print(f"  [{time.perf_counter() - started:5.1f}s] {outcome.status.replace('_', ' ')}", file=sys.stderr)
    return outcome.exit_status


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="verifiedsql", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    ask = commands.add_parser(
        "ask", help="answer a question about a database", epilog=EXIT_STATUSES,
        description="Answer a question through verifiedsql.create_engine(URL, **options). Each option of the "
                    "README's options table is a flag of the same name, with dashes.")
    ask.add_argument("url", help="SQLAlchemy URL, e.g. sqlite:///examples/shop.db")
    ask.add_argument("question")
    ask.add_argument("--json", action="store_true",
                     help="print one JSON object: status, question, sql, columns, rows, confidence, truncated, "
                          "error, report (docs: Using it, Command line)")
    ask.add_argument("--html", metavar="FILE", help="write the report as an HTML page to FILE")
    ask.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    ask.add_argument("--cache", metavar="FILE",
                     help="record/replay cache file, read-write: short for --cache-path FILE --cache-mode readwrite")
    add_option_flags(ask.add_argument_group("options (README, Options)"))
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
