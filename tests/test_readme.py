"""The README's Python example runs as written, against a local fake OpenAI-compatible server
configured through the documented environment variables (so the documented fallback is tested too)."""

import re
import shutil
from pathlib import Path

from fake_openai import FakeServer, Reply, completion

ROOT = Path(__file__).parents[1]
ANSWER = "```sql\nSELECT country, COUNT(*) AS n FROM customers GROUP BY country\n```"


def readme_python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.DOTALL)


def test_readme_example_runs(tmp_path, monkeypatch):
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "shop.db", tmp_path / "examples" / "shop.db")
    server = FakeServer()
    server.script = [Reply(body=completion(ANSWER))]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VERIFIEDSQL_LLM_BASE_URL", server.url)
    monkeypatch.setenv("VERIFIEDSQL_LLM_API_KEY", "test")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    blocks = readme_python_blocks()
    assert blocks, "the README has no Python example"
    namespace: dict = {}
    try:
        exec(compile(blocks[0], "README.md", "exec"), namespace)
    finally:
        server.httpd.shutdown()
        server.httpd.server_close()
    assert namespace["report"].vote == "unanimous"
    assert len(namespace["df"]) == 8 and namespace["cur"].verification is not None
    assert server.requests, "the example never reached the configured endpoint"
