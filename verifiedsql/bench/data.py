"""Spider dev data: loading ``dev.json`` and a seeded sample stratified by database."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigurationError

DEFAULT_DATA_DIR = Path("../shared/data/spider_dev")


@dataclass(frozen=True)
class Example:
    """One Spider question: ``id`` is its index in the original dev.json."""

    id: int
    db_id: str
    question: str
    gold: str


def load_examples(data_dir: Path) -> list[Example]:
    """Every question in ``data_dir/dev.json``, in file order."""
    path = Path(data_dir) / "dev.json"
    if not path.exists():
        raise ConfigurationError(
            f"Spider data not found at {path}; pass --data DIR (the folder holding dev.json and database/)."
        )
    raw = json.loads(path.read_text("utf-8"))
    return [Example(int(e["id"]), e["db_id"], e["question"], e["query"]) for e in raw]


def sqlite_path(data_dir: Path, db_id: str) -> Path:
    return Path(data_dir) / "database" / db_id / f"{db_id}.sqlite"


def stratified_sample(examples: list[Example], n: int, seed: int = 0) -> list[Example]:
    """``n`` examples, each database getting its proportional share (largest remainder), chosen
    with ``random.Random(seed)``; returned sorted by id. ``n >= len(examples)`` returns them all."""
    if n >= len(examples):
        return sorted(examples, key=lambda e: e.id)
    if n < 1:
        raise ConfigurationError("the sample size must be at least 1.")
    rng = random.Random(seed)
    groups: dict[str, list[Example]] = defaultdict(list)
    for example in examples:
        groups[example.db_id].append(example)
    total = len(examples)
    quotas = {db: n * len(group) / total for db, group in groups.items()}
    counts = {db: int(q) for db, q in quotas.items()}
    # Hand out the remaining places by largest remainder; ties broken by a seeded shuffle.
    order = sorted(groups)
    rng.shuffle(order)
    order.sort(key=lambda db: quotas[db] - counts[db], reverse=True)
    for db in order[: n - sum(counts.values())]:
        counts[db] += 1
    chosen = [e for db in sorted(groups) for e in rng.sample(groups[db], counts[db])]
    return sorted(chosen, key=lambda e: e.id)
