"""Hard time bounds for work that may not stop when asked: run it on a worker thread and give the caller
control back when its time is up, whatever the work is doing.

An engine stops a statement when its own timer fires (SQLite's progress handler, DuckDB's ``interrupt()``,
PostgreSQL's ``statement_timeout``), but not inside one long function call (a SQLite ``LIKE``, a DuckDB
``levenshtein`` on huge strings), and an HTTP read timeout never fires on a server that trickles its reply.
``run_within`` waits ``seconds`` plus ``GRACE_S`` for the worker, then abandons it: the caller gets
``on_timeout()`` raised, and the worker goes on to its end in the background, where it releases what it
holds (the work must own everything it touches: a duplicate connection, its own HTTP response). Abandoned
workers are daemon threads, so they never keep the process alive.
"""

from __future__ import annotations

import math
import threading
from typing import Callable, TypeVar

T = TypeVar("T")

GRACE_S = 0.5  # after the work's own time limit: how long its own interrupt gets before it is abandoned


class _Outcome:
    """What the worker left: its value or exception, and whether it finished."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: object = None
        self.error: BaseException | None = None


def run_within(work: Callable[[], T], seconds: float, on_timeout: Callable[[], BaseException], *,
               grace_s: float = GRACE_S, name: str = "verifiedsql-worker") -> T:
    """``work()`` on a daemon thread; its value, or its exception re-raised here. When it has not ended
    ``seconds + grace_s`` after the start, ``on_timeout()`` is raised here while the worker runs on to its own
    end. With no time limit (``seconds`` infinite) ``work()`` simply runs here."""
    if math.isinf(seconds):
        return work()
    outcome = _Outcome()

    def run() -> None:
        try:
            outcome.value = work()
        except BaseException as error:  # handed to the waiting caller, or dropped if it gave up
            outcome.error = error
        finally:
            outcome.done.set()

    worker = threading.Thread(target=run, name=name, daemon=True)
    worker.start()
    if not outcome.done.wait(max(0.0, seconds) + grace_s):
        raise on_timeout()
    if outcome.error is not None:
        raise outcome.error
    return outcome.value  # type: ignore[return-value]
