"""Every Python block of the README and of the docs pages runs as written, each as its own test case (named by
its file and line). Blocks that a page includes from the README (``--8<--``) run once, as the README's.

The blocks run in a scratch folder holding a copy of ``examples/shop.db``, against a scripted
OpenAI-compatible server (``fake_openai.FakeServer``) configured only through the documented environment
variables, so the documented fallback is tested too. A block may use what the blocks before it defined, as a
reader running them in order would: those of the same file run first, in the same namespace. The logging configuration a
block makes is undone afterwards. Blocks with more to check than "it runs" are listed in ``CHECKS``.
"""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeServer, Reply, completion

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
DOCUMENTS = [README, *sorted((ROOT / "docs").rglob("*.md"))]
ANSWER = "```sql\nSELECT country, COUNT(*) AS n FROM customers GROUP BY country\n```"  # 8 rows in shop.db


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """(line of the block's first code line, code) of every ```python block of a Markdown file."""
    text = path.read_text()
    return [(text.count("\n", 0, match.start(1)) + 1, match.group(1))
            for match in re.finditer(r"^```python\n(.*?)^```", text, re.DOTALL | re.MULTILINE)]


# (file, line, code) of every block, in reading order within each file
BLOCKS = [(path, line, code) for path in DOCUMENTS for line, code in python_blocks(path)]


def check_using_it(namespace: dict[str, Any], server: FakeServer) -> None:
    assert namespace["report"].vote == "unanimous"
    assert len(namespace["df"]) == 8 and namespace["cur"].verification is not None
    assert server.requests, "the example never reached the configured endpoint"


# a block containing the key is checked by the function after it runs
CHECKS: dict[str, Callable[[dict[str, Any], FakeServer], None]] = {
    'verifiedsql.create_engine("sqlite:///examples/shop.db")   # any SQLAlchemy URL': check_using_it,
}


@contextmanager
def logging_restored() -> Iterator[None]:
    """The logging configuration (root handlers, every logger's level) as it was before."""
    root = logging.getLogger()
    handlers, levels = root.handlers[:], {name: logger.level for name, logger in
                                          logging.Logger.manager.loggerDict.items()
                                          if isinstance(logger, logging.Logger)}
    root_level = root.level
    try:
        yield
    finally:
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
                handler.close()
        root.setLevel(root_level)
        for name, logger in logging.Logger.manager.loggerDict.items():
            if isinstance(logger, logging.Logger):
                logger.setLevel(levels.get(name, logging.NOTSET))


@pytest.fixture
def readme_world(tmp_path, monkeypatch) -> Iterator[FakeServer]:
    """A scratch folder with examples/shop.db, and a scripted model behind the documented variables."""
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "shop.db", tmp_path / "examples" / "shop.db")
    server = FakeServer()
    server.responder = lambda payload: Reply(body=completion(ANSWER))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VERIFIEDSQL_LLM_BASE_URL", server.url)
    monkeypatch.setenv("VERIFIEDSQL_LLM_API_KEY", "test")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    try:
        with logging_restored():
            yield server
    finally:
        server.close()


def run_block(path: Path, line: int, code: str, namespace: dict[str, Any]) -> None:
    """Run a block with its file's line numbers, so a traceback points at the page."""
    exec(compile("\n" * (line - 1) + code, str(path), "exec"), namespace)


def test_the_readme_has_python_examples():
    assert python_blocks(README), "the README has no Python example"
    assert all(any(key in code for *_, code in BLOCKS) for key in CHECKS), "a checked example is gone"
    assert len({path for path, *_ in BLOCKS}) > 3, "the docs pages' Python examples are not found"


@pytest.mark.parametrize(("path", "line", "code"), BLOCKS,
                         ids=[f"{path.relative_to(ROOT)}:{line}" for path, line, _ in BLOCKS])
def test_readme_example_runs(path, line, code, readme_world):
    namespace: dict[str, Any] = {"__name__": "__readme__"}
    for earlier_path, earlier_line, earlier in BLOCKS[:BLOCKS.index((path, line, code))]:
        if earlier_path == path:
            run_block(earlier_path, earlier_line, earlier, namespace)
    run_block(path, line, code, namespace)
    for key, check in CHECKS.items():
        if key in code:
            check(namespace, readme_world)
