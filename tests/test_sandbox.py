"""The bubblewrap sandbox for model-written pandas: it computes, and every escape attempt is contained."""

from __future__ import annotations

import os
import shutil
import socket
import string
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from verifiedsql.errors import SandboxUnavailableError
from verifiedsql.guard import sandbox as sandbox_module
from verifiedsql.guard.sandbox import Sandbox, SandboxResult

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bubblewrap (bwrap) is not installed: `apt-get install bubblewrap` (CI installs it)")

REPO = Path(__file__).resolve().parent.parent
SMALL = {"memory_mb": 512, "cpu_seconds": 2, "wall_seconds": 8.0, "max_output_bytes": 4096,
         "max_file_mb": 1, "work_mb": 4, "max_processes": 8}


@dataclass
class Host:
    """What the host holds that the jail must not see or touch."""

    port: int
    connections: list[Any]
    marker: str
    secret: str
    sentinel: Path


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Host]:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.settimeout(0.2)
    connections: list[Any] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                connections.append(server.accept())
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    secret = "s3cr3t-" + uuid.uuid4().hex
    monkeypatch.setenv("VERIFIEDSQL_TEST_SECRET", secret)
    sentinel = tmp_path / "host-secret.txt"
    sentinel.write_text(secret)
    marker = "vsql-escape-" + uuid.uuid4().hex[:12]
    yield Host(server.getsockname()[1], connections, marker, secret, sentinel)
    stop.set()
    thread.join(timeout=2)
    server.close()
    for path in _host_paths(marker):
        assert not os.path.exists(path), f"the jail wrote {path} on the host"


def _host_paths(marker: str) -> list[str]:
    return [f"/usr/{marker}", f"/root/{marker}", f"/tmp/{marker}", str(REPO / marker),
            os.path.join(sys.prefix, marker), f"/{marker}"]


def _jail_pids() -> list[int]:
    """Host processes under a sandbox uid that outlived their run: below this process (its jail still runs), or
    below no living bwrap at all (escaped from its jail). The jails of other test processes running side by
    side (pytest-xdist workers) sit below their own bwrap and are not counted."""
    parents: dict[int, int] = {}
    jailed, jailers = set(), set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                name, fields = fh.read().split(b" (", 1)[1].rsplit(b")", 1)
            if fields.split()[0] in (b"Z", b"X"):  # exited, not yet reaped
                continue
            parents[int(entry)] = int(fields.split()[1])
            if os.stat(f"/proc/{entry}").st_uid >= 1_000_000_000:
                jailed.add(int(entry))
            elif name == b"bwrap":
                jailers.add(int(entry))
        except (FileNotFoundError, ProcessLookupError, IndexError):
            pass

    def ancestors(pid: int) -> set[int]:
        found: set[int] = set()
        while pid in parents and pid not in found:
            found.add(pid)
            pid = parents[pid]
        return found | {pid}

    return sorted(pid for pid in jailed
                  if os.getpid() in ancestors(pid) or not ancestors(pid) & jailers)


def _value(r: SandboxResult) -> Any:
    assert r.ok, r.error
    assert r.columns == ["result"]
    return r.rows[0][0]


def _blocked(*names: str) -> Callable[[SandboxResult, Host], None]:
    """The attempt raised one of the named exception types inside the jail."""

    def check(r: SandboxResult, h: Host) -> None:
        assert _value(r) in names, r

    return check


def _try(body: str) -> str:
    """Wrap ``body`` so that ``result`` is the exception type name, or "ESCAPED"."""
    indented = "\n".join("    " + line for line in body.strip().splitlines())
    return f"import os, sys, socket, subprocess\ntry:\n{indented}\n    result = 'ESCAPED'\n" \
           "except BaseException as exc:\n    result = type(exc).__name__\n"


def _no_secret(r: SandboxResult, h: Host) -> None:
    assert r.ok, r.error
    assert h.secret not in repr(r.rows) + r.stdout + r.stderr


def _only_jail_root(r: SandboxResult, h: Host) -> None:
    entries = set(_value(r).split(","))
    assert entries <= {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "tmp", "proc", "dev",
                       "sandbox", *(Path(p).parts[1] for p in (sys.prefix, sys.base_prefix))}, entries
    assert not entries & {"etc", "home", "var", "sys", "boot", "mnt", "opt", "srv"}


def _home_only_python(r: SandboxResult, h: Host) -> None:
    home = Path.home()
    allowed = {Path(p).relative_to(home).parts[0] for p in (sys.prefix, sys.base_prefix)
               if Path(p).is_relative_to(home)}
    seen = set(filter(None, _value(r).split(",")))
    assert seen <= allowed, seen
    assert set(os.listdir(home)) - allowed, "host home has nothing else: the test proves nothing"


def _exit_nonzero(r: SandboxResult, h: Host) -> None:
    assert isinstance(_value(r), int) and _value(r) != 0, r


def _few_processes(r: SandboxResult, h: Host) -> None:
    pids = [int(p) for p in _value(r).split(",")]
    assert len(pids) <= 5 and max(pids) < 100, pids  # the jail's own few processes, not the host's


def _incident(*kinds: str, ok: bool = False) -> Callable[[SandboxResult, Host], None]:
    def check(r: SandboxResult, h: Host) -> None:
        assert r.incident in kinds, r
        assert r.ok is ok, r
        assert r.seconds < SMALL["wall_seconds"] + 3
        assert not _jail_pids(), "jailed processes outlived the run"

    return check


def _wrote_x(r: SandboxResult, h: Host) -> None:
    assert _value(r) == "x"  # written and read back inside; the fixture checks the host's /tmp


def _output(r: SandboxResult, h: Host) -> None:
    assert r.incident == "output" and r.ok and len(r.stdout) == SMALL["max_output_bytes"], r.incident


def _no_connection(r: SandboxResult, h: Host) -> None:
    assert _value(r) in {"ConnectionRefusedError", "OSError", "TimeoutError"}, r
    assert not h.connections, "the jail reached the host's listening socket"


Check = Callable[[SandboxResult, Host], None]
ESCAPES: list[tuple[Any, ...]] = [
    ("read /etc/shadow", _try("open('/etc/shadow').read()"), _blocked("FileNotFoundError", "PermissionError")),
    ("read /etc/passwd", _try("open('/etc/passwd').read()"), _blocked("FileNotFoundError")),
    ("read a file in the host's /tmp", _try("open('$sentinel').read()"), _blocked("FileNotFoundError")),
    ("read a repository file", _try(f"open('{REPO / 'pyproject.toml'}').read()"),
     _blocked("FileNotFoundError")),
    ("list the host home directory",
     f"import os\nh = {str(Path.home())!r}\nresult = ','.join(os.listdir(h)) if os.path.isdir(h) else ''",
     _home_only_python),
    ("list / (only the jail's view)", "import os\nresult = ','.join(sorted(os.listdir('/')))", _only_jail_root),
    ("write into /usr", _try("open('/usr/$marker', 'w').write('x')"), _blocked("OSError", "PermissionError")),
    ("write into the venv", _try(f"open({os.path.join(sys.prefix, '$marker')!r}, 'w').write('x')"),
     _blocked("OSError", "PermissionError")),
    ("write into /root", _try("open('/root/$marker', 'w').write('x')"), _blocked("PermissionError", "OSError")),
    ("write into / ", _try("open('/$marker', 'w').write('x')"), _blocked("PermissionError", "OSError")),
    ("write into /tmp (lands in the throwaway tmpfs)",
     "open('/tmp/$marker', 'w').write('x')\nresult = open('/tmp/$marker').read()",
     _wrote_x),
    ("os.system touch in the repository", f"import os\nresult = os.system('touch {REPO}/$marker')",
     _exit_nonzero),
    ("subprocess cat /etc/shadow",
     "import subprocess\nresult = subprocess.run(['cat', '/etc/shadow'], capture_output=True).returncode",
     _exit_nonzero),
    ("ctypes libc system()",
     f"import ctypes\nresult = ctypes.CDLL(None).system(b'touch {REPO}/$marker /root/$marker; cat /etc/shadow')",
     _exit_nonzero),
    ("unshare a user namespace to read /etc/shadow",
     "import os\nresult = os.system('unshare -Ur cat /etc/shadow 2>/dev/null')", _exit_nonzero),
    ("setuid(0)", _try("os.setuid(0)"), _blocked("PermissionError")),
    ("mount a tmpfs over /usr", "import os\nresult = os.system('mount -t tmpfs none /usr 2>/dev/null')",
     _exit_nonzero),
    ("kill the host test process", _try(f"os.kill({os.getpid()}, 0)"), _blocked("ProcessLookupError")),
    ("list processes (pid namespace)",
     "import os\nresult = ','.join(p for p in os.listdir('/proc') if p.isdigit())", _few_processes),
    ("host env var in os.environ", "import os\nresult = repr(dict(os.environ))", _no_secret),
    ("read /proc/1/environ", _try("open('/proc/1/environ', 'rb').read()"), _blocked("PermissionError")),
    ("read the host's own /proc/<pid>/environ", _try(f"open('/proc/{os.getpid()}/environ').read()"),
     _blocked("FileNotFoundError", "PermissionError")),
    ("read the host disk device", _try("open('/dev/vda', 'rb').read(10)"), _blocked("FileNotFoundError")),
    ("connect to the host's listening socket on 127.0.0.1",
     _try("socket.create_connection(('127.0.0.1', $port), timeout=2)"), _no_connection),
    ("DNS lookup", _try("socket.getaddrinfo('example.com', 80)"), _blocked("gaierror")),
    ("HTTP request to a public address",
     _try("import urllib.request\nurllib.request.urlopen('http://1.1.1.1/', timeout=2)"),
     _blocked("URLError", "OSError")),
    ("fork bomb", "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
     _incident("cpu", "timeout"), {"max_processes": 4, "cpu_seconds": 1, "wall_seconds": 3.0}),
    ("memory bomb", "x = bytearray(4 * 1024 ** 3)", _incident("memory")),
    ("growing memory bomb", "x = []\nwhile True:\n    x.append(bytearray(50 * 1024 ** 2))", _incident("memory")),
    ("endless CPU loop", "while True:\n    pass", _incident("cpu"), {"cpu_seconds": 1}),
    ("endless sleep (wall clock)", "import time\ntime.sleep(600)", _incident("timeout"), {"wall_seconds": 2.5}),
    ("huge stdout", "print('x' * 10 ** 7)\nresult = 1", _output),
    ("huge file in the work dir", "open('big', 'wb').write(b'x' * 50 * 1024 ** 2)", _incident("file_size")),
    ("fill the work dir with many files",
     _try("for i in range(100):\n    open(f'f{i}', 'wb').write(b'x' * 1000 * 1000)"), _blocked("OSError")),
]


@needs_bwrap
@pytest.mark.parametrize("label,code,check,limits", [(*e, {})[:4] for e in ESCAPES], ids=[e[0] for e in ESCAPES])
def test_escape_is_contained(label: str, code: str, check: Check, limits: dict[str, Any], host: Host) -> None:
    code = string.Template(code).safe_substitute(
        marker=host.marker, port=host.port, sentinel=str(host.sentinel))
    result = Sandbox(**{**SMALL, **limits}).run_pandas(code, {})
    check(result, host)


@needs_bwrap
def test_pandas_groupby_merge() -> None:
    sales = pd.DataFrame({"shop": [1, 1, 2, 3], "amount": [10.5, 2.0, 7.0, None]})
    shops = pd.DataFrame({"id": [1, 2, 3], "city": ["Oslo", "Rome", "Rome"]})
    code = ("m = sales.merge(shops, left_on='shop', right_on='id')\n"
            "result = m.groupby('city', as_index=False)['amount'].sum().sort_values('city')")
    r = Sandbox(**SMALL).run_pandas(code, {"sales": sales, "shops": shops})
    assert r.ok, r.error
    assert (r.columns, r.rows) == (["city", "amount"], [("Oslo", 12.5), ("Rome", 7.0)])
    assert r.incident is None and not r.timed_out and r.seconds > 0


@needs_bwrap
def test_series_scalar_and_errors() -> None:
    box = Sandbox(**SMALL)
    t = {"weird name": pd.DataFrame({"a": [1, 2]}), "t": pd.DataFrame({"g": ["x", "y", "x"], "v": [1, 2, 3]})}
    assert box.run_pandas("result = t.groupby('g')['v'].sum()", t).rows == [("x", 4), ("y", 2)]
    assert box.run_pandas("result = int(tables['weird name']['a'].sum())", t).rows == [(3,)]
    missing = box.run_pandas("x = 1", t)
    assert not missing.ok and "`result`" in (missing.error or "")
    broken = box.run_pandas("result = t['nope']", t)
    assert not broken.ok and "KeyError" in (broken.error or "") and "<solver>" in (broken.error or "")
    assert "runner.py" not in (broken.error or "")


def test_unavailable_never_runs_unsandboxed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sandbox_module.shutil, "which", lambda name: None)
    flag = tmp_path / "ran"
    box = Sandbox(**SMALL)
    assert not box.available()
    with pytest.raises(SandboxUnavailableError, match="bubblewrap"):
        box.run_pandas(f"open({str(flag)!r}, 'w').write('x')\nresult = 1", {})
    assert not flag.exists()


@needs_bwrap
def test_available_where_bwrap_is_installed() -> None:
    assert Sandbox().available(), "bwrap is installed but cannot run a jail (user namespaces disabled?)"
