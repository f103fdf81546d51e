"""The resumable run loop of ``bench spider`` and ``bench scope``.

Questions are answered question by question (all strategies for one question, then the next), so the
strategies share one candidate pool through the record/replay cache and a killed run has complete
comparisons for what it finished. Each finished (strategy, question) is appended to the run's JSONL file
and skipped on the next start.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence, TypeVar

from ..config import Options
from ..db.database import Database
from ..llm import chat_model_for
from ..llm.base import ChatModel
from ..llm.models import MODELS
from ..pipeline import Pipeline
from .engines import gold_connection, open_target
from .store import RecordStore
from .strategies import strategy_options

if TYPE_CHECKING:
    from .spider import SpiderConfig

Progress = Callable[[str], None]


def print_progress(line: str) -> None:
    """The default ``Progress``: the line on stderr."""
    print(line, file=sys.stderr, flush=True)


class Question(Protocol):
    @property
    def id(self) -> int: ...

    @property
    def db_id(self) -> str: ...


Q = TypeVar("Q", bound=Question)


class SpiderDatabases:
    """One Database and gold connection per Spider database, opened on first use."""

    def __init__(self, config: SpiderConfig) -> None:
        self.config = config
        self._open: dict[str, tuple[Database, Any]] = {}

    def options(self, strategy: str) -> Options:
        return strategy_options(strategy, self.config.base_options())

    def get(self, db_id: str) -> tuple[Database, Any]:
        if db_id not in self._open:
            cfg = self.config
            engine = open_target(cfg.engine, cfg.data_dir, db_id, cfg.out_dir / "engines", cfg.pg_url)
            database = Database(engine, self.options(cfg.strategies[0]))
            database.reflect()  # once per database, before timing, as a long-lived engine would
            self._open[db_id] = (database, gold_connection(cfg.data_dir, db_id))
        return self._open[db_id]

    def close(self) -> None:
        for database, gold in self._open.values():
            database.engine.dispose()
            gold.close()


@dataclass(frozen=True)
class RecordedRun:
    """A run's name (after the model that answered), the model's name and its records."""

    name: str
    model: str
    store: RecordStore


def answer_all(config: SpiderConfig, questions: Sequence[Q], name: Callable[[str], str],
               answer: Callable[[Pipeline, Q, Any], dict[str, Any]], describe: Callable[[dict[str, Any]], str],
               llm: ChatModel | None, progress: Progress, count_done: bool = False) -> RecordedRun:
    """Answer every (question, strategy) not recorded yet, in ``questions``' order, and record each.

    ``name`` names the run after the model; ``answer(pipeline, question, gold connection)`` gives a record's
    fields (less strategy, engine and model); ``describe(record)`` ends its progress line. ``count_done`` puts
    how many are recorded already on the first line. ``config.report_only`` answers nothing."""
    if llm is None and not config.report_only:
        progress("preparing the model (first use installs it)...")
        llm = chat_model_for(strategy_options(config.strategies[0], config.base_options()))
    model = llm.name if llm is not None else MODELS[config.model].alias
    run_name = name(model)
    run = RecordedRun(run_name, model, RecordStore(config.out_dir / f"{run_name}.jsonl"))
    todo = [] if config.report_only else [
        (q, s) for q in questions for s in config.strategies if not run.store.done(s, q.id)]
    done = sum(run.store.done(s, q.id) for q in questions for s in config.strategies)
    progress(f"{len(questions)} questions x {len(config.strategies)} strategies: "
             + (f"{done} done, " if count_done else "")
             + ("report only" if config.report_only else f"{len(todo)} to run"))
    databases = SpiderDatabases(config)
    started = time.perf_counter()
    try:
        for count, (question, strategy) in enumerate(todo, 1):
            assert llm is not None  # only --report-only runs without a model, and it runs nothing
            database, gold = databases.get(question.db_id)
            pipeline = Pipeline(database, llm, databases.options(strategy))
            record = {"strategy": strategy, "engine": config.engine, "model": model,
                      **answer(pipeline, question, gold)}
            run.store.append(record)
            progress(f"[{count}/{len(todo)} {time.perf_counter() - started:7.1f}s] {describe(record)}")
    finally:
        databases.close()
    return run
