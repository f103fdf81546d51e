"""Append-only JSONL of finished (strategy, question) records, so a killed run resumes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

RETRY_STATUSES = frozenset({"llm_error"})  # model failures are retried on the next run


def record_key(record: dict[str, Any]) -> tuple[str, int]:
    return record["strategy"], int(record["id"])


class RecordStore:
    """Records keyed by (strategy, question id); the last record of a key wins."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.records: dict[tuple[str, int], dict[str, Any]] = {}
        if self.path.exists():
            for record in self._read():
                self.records[record_key(record)] = record

    def _read(self) -> Iterator[dict[str, Any]]:
        with self.path.open(encoding="utf-8") as handle:
            for line in handle:
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:  # a line cut short by a kill
                    continue

    def done(self, strategy: str, question_id: int) -> bool:
        record = self.records.get((strategy, question_id))
        return record is not None and record.get("status") not in RETRY_STATUSES

    def append(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record, default=str, ensure_ascii=False)
        with self.path.open("a", encoding="utf-8") as handle:
            # A previous kill may have left a partial line: start on a fresh one.
            if handle.tell() > 0 and not self._ends_with_newline():
                handle.write("\n")
            handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        self.records[record_key(record)] = record

    def _ends_with_newline(self) -> bool:
        with self.path.open("rb") as handle:
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) == b"\n"

    def select(self, strategies: list[str], ids: set[int]) -> list[dict[str, Any]]:
        """The records of these strategies and questions, in question then strategy order."""
        chosen = [r for (s, i), r in self.records.items() if s in strategies and i in ids]
        return sorted(chosen, key=lambda r: (r["id"], strategies.index(r["strategy"])))
