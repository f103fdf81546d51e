"""Benchmark harness: Spider execution accuracy per strategy, with cost, latency and a report.

``run_spider`` (``verifiedsql.bench.spider``) is the entry point; ``verifiedsql bench spider`` and
``benchmarks/spider.py`` are thin command lines over it.
"""

from .strategies import STRATEGIES, strategy_options

__all__ = ["STRATEGIES", "strategy_options"]
