"""Calibrate VET's question-similarity threshold for the offline embedding model on Spider dev.

Positive pairs: consecutive dev questions on the same database with the same gold query (Spider's
paraphrases). Negative pairs: 2,000 seeded random pairs of questions on the same database with different
gold queries. Prints, per threshold, the share of each kind that passes.

    .venv/bin/python benchmarks/similarity_threshold.py
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np

from verifiedsql.bench.data import DEFAULT_DATA_DIR
from verifiedsql.stages.vet.similarity import DEFAULT_THRESHOLD, offline_similarity


def main() -> int:
    model = offline_similarity()
    if model is None:
        print("wordllama is not installed: pip install 'verifiedsql[similarity]'", file=sys.stderr)
        return 1
    dev = json.loads((Path(DEFAULT_DATA_DIR) / "dev.json").read_text(encoding="utf-8"))
    same = [model.similarity(a["question"], b["question"]) for a, b in zip(dev, dev[1:])
            if a["db_id"] == b["db_id"] and a["query"].strip().lower() == b["query"].strip().lower()
            and a["question"] != b["question"]]
    by_db: dict[str, list[dict]] = {}
    for item in dev:
        by_db.setdefault(item["db_id"], []).append(item)
    rng, different = random.Random(0), []
    while len(different) < 2000:
        a, b = rng.sample(by_db[rng.choice(sorted(by_db))], 2)
        if a["query"].strip().lower() != b["query"].strip().lower():
            different.append(model.similarity(a["question"], b["question"]))
    pos, neg = np.array(same), np.array(different)
    print(f"model: {model.name}; {len(pos)} paraphrase pairs, {len(neg)} different-question pairs")
    print("| threshold | paraphrases passing | different questions passing |\n|---:|---:|---:|")
    for threshold in (0.4, 0.5, 0.6, 0.7, 0.8):
        mark = " (default)" if threshold == DEFAULT_THRESHOLD else ""
        print(f"| {threshold}{mark} | {(pos >= threshold).mean():.1%} | {(neg >= threshold).mean():.1%} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
