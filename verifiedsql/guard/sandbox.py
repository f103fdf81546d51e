"""Run model-written pandas code inside a bubblewrap jail (see docs/environment.md, "Sandboxing model-written Python").

The jail has no network (own network namespace), no view of the host file system beyond read-only
system, Python and venv directories, no environment variables of the caller, and hard rlimits on address
space, CPU time, file size, open files and processes, plus a wall-clock timeout that kills the whole
process tree. The code never runs outside the jail: if ``bwrap`` cannot run, ``SandboxUnavailableError``.

Layout inside the jail::

    /sandbox/in    read-only: the tables (pickles written by us), the code and the runner
    /sandbox/work  writable, a size-capped tmpfs (the working directory); /tmp likewise
    a pipe fd      on which the runner writes the outcome as JSON (never a host file)

Nothing the jail writes reaches the host's disk, and nothing it writes is unpickled: the result comes
back as JSON (columns and rows). Run as root, the jail drops to a fresh unprivileged uid with
``setpriv`` so that RLIMIT_NPROC is enforced (the kernel never enforces it for host uid 0). The rlimits
are set hard (soft = hard) by the runner's first statements, before pandas or any model code; no
``preexec_fn`` (unsafe with threads in the host).
"""

from __future__ import annotations

import json
import math
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from typing import IO, Any, Callable

from ..errors import SandboxError, SandboxUnavailableError

__all__ = ["Incident", "Sandbox", "SandboxResult"]

Incident = str  # one of: "timeout", "cpu", "memory", "file_size", "output"

_MB = 1024 * 1024
# printed bytes that end a run: output past max_output_bytes is only cut short, but a flood would race the CPU limit
OUTPUT_FLOOD_BYTES = 64 * _MB
INCIDENT = "sandbox incident"  # an error that begins "sandbox incident (<kind>): " hit a jail limit
_IN = "/sandbox/in"
_WORK = "/sandbox/work"

_RUNNER = r'''
import errno, json, os, resource, sys
out = os.fdopen(int(sys.argv[1]), "w", encoding="utf-8")
for name, value in json.loads(sys.argv[2]).items():
    resource.setrlimit(getattr(resource, name), tuple(value))

def emit(obj):
    out.write(json.dumps(obj, allow_nan=False, default=str))
    out.flush()

def cell(v):
    import datetime, decimal, math
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return None if math.isnan(v) or math.isinf(v) else v
    if hasattr(v, "item") and not hasattr(v, "__len__"):
        try:
            return cell(v.item())
        except (ValueError, TypeError):
            pass
    if isinstance(v, decimal.Decimal):
        return cell(float(v))
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, bytes):
        return v.hex()
    try:
        import pandas as pd
        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    return str(v)

try:
    import linecache, traceback
    import numpy as np
    import pandas as pd
    meta = json.load(open("IN/meta.json"))
    tables = {name: pd.read_pickle(f"IN/t{i}.pkl") for i, name in enumerate(meta["tables"])}
    for name, frame in tables.items():  # small models often read "<table>.csv": let that work too
        if name.replace("_", "").isalnum():
            frame.to_csv(f"{name}.csv", index=False)
    code = open("IN/code.py", encoding="utf-8").read()
    linecache.cache["<solver>"] = (len(code), None, code.splitlines(True), "<solver>")
    ns = {"__name__": "__solver__", "pd": pd, "np": np, "tables": tables}
    ns.update({k: v for k, v in tables.items() if k.isidentifier()})
    exec(compile(code, "<solver>", "exec"), ns)
    if "result" not in ns:
        raise NameError("the code must assign its answer (a DataFrame) to a variable named `result`")
    res = ns["result"]
    if isinstance(res, pd.Series):
        res = res.to_frame()
    elif not isinstance(res, pd.DataFrame):
        res = pd.DataFrame({"result": [res]})
    if any(n is not None for n in res.index.names):
        res = res.reset_index()
    emit({"ok": True, "columns": [str(c) for c in res.columns],
          "rows": [[cell(v) for v in row] for row in res.itertuples(index=False, name=None)]})
except BaseException as exc:
    import traceback
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next  # show the model its own frames, not the runner's
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    emit({"ok": False, "error": text[-4000:], "memory": isinstance(exc, MemoryError),
          "file_size": isinstance(exc, OSError) and exc.errno == errno.EFBIG})
'''.replace("IN/", _IN + "/")


@dataclass
class SandboxResult:
    """Outcome of one run: ``columns``/``rows`` when ``ok``, else ``error`` (traceback tail or limit)."""

    ok: bool
    columns: list[str] = field(default_factory=list)
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    error: str | None = None
    timed_out: bool = False
    seconds: float = 0.0
    incident: Incident | None = None
    stdout: str = ""
    stderr: str = ""
    returncode: int | None = None

    def frame(self) -> Any:
        """The result as a pandas DataFrame (empty when the run failed)."""
        import pandas as pd  # type: ignore[import-untyped,unused-ignore]

        return pd.DataFrame([list(r) for r in self.rows], columns=self.columns)


class _Drain(threading.Thread):
    """Read a pipe to EOF, keeping at most ``cap`` bytes and counting the rest. With ``stop``, once the
    writer has sent more than ``stop_after`` bytes, ``stop()`` is called once (the jail is ended), so a
    flood of output costs bounded time instead of racing the CPU limit."""

    def __init__(self, stream: IO[bytes], cap: int, stop: Callable[[], None] | None = None,
                 stop_after: int = 0) -> None:
        super().__init__(daemon=True)
        self.stream, self.cap, self.data, self.total = stream, cap, bytearray(), 0
        self.stop, self.stop_after = stop, stop_after

    def run(self) -> None:
        try:
            while chunk := self.stream.read1(65536):  # type: ignore[attr-defined]
                self.total += len(chunk)
                if len(self.data) < self.cap:
                    self.data += chunk[: self.cap - len(self.data)]
                if self.stop is not None and self.total > self.stop_after:
                    self.stop()
                    self.stop = None
        except (OSError, ValueError):
            pass
        finally:
            self.stream.close()

    @property
    def truncated(self) -> bool:
        return self.total > self.cap

    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


def _system_binds() -> list[str]:
    """Read-only binds of /usr, the top-level lib/bin dirs (symlinks kept), the venv and Python home."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    roots: list[str] = []
    made: set[str] = set()
    for p in sorted({os.path.abspath(sys.prefix), os.path.abspath(sys.base_prefix)}, key=len):
        if p == "/usr" or p.startswith("/usr/") or any(p.startswith(r + "/") for r in roots):
            continue
        roots.append(p)
        parents = [d for d in _parents(p) if d not in made]
        made.update(parents)
        for d in parents:  # bwrap would create missing parents 0700: unreadable after the uid drop
            args += ["--perms", "0755", "--dir", d]
        args += ["--ro-bind", os.path.realpath(p), p]
    return args


def _parents(path: str) -> list[str]:
    """``/a/b/c`` -> ``["/a", "/a/b"]``."""
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def _reap_jail(info: bytes, patience: float = 5.0) -> None:
    """Kill the jail's pid 1 (which ends its whole pid namespace) and wait until it has exited."""
    try:
        meta = json.JSONDecoder().raw_decode(info.decode("utf-8"))[0]
        pid, pidns = int(meta["child-pid"]), int(meta["pid-namespace"])
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        try:
            if os.stat(f"/proc/{pid}/ns/pid").st_ino != pidns:
                return  # gone, and the number reused by another process
            with open(f"/proc/{pid}/stat", "rb") as fh:
                if fh.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                    return  # exited: the kernel has already torn its namespace down
            os.kill(pid, signal.SIGKILL)
        except (FileNotFoundError, ProcessLookupError):
            return
        except PermissionError:
            pass
        time.sleep(0.02)


_CELL = (type(None), bool, int, float, str)  # all the runner's cell() ever emits


def _payload(outcome: _Drain) -> dict[str, Any]:
    """The outcome pipe's JSON object; {} when it is missing, cut short or not one (the jailed code can
    write anything there: deeply nested JSON raises RecursionError, not ValueError)."""
    if not outcome.data or outcome.truncated:
        return {}
    try:
        payload = json.loads(outcome.data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return {}
    return payload if isinstance(payload, dict) else {}


def _table(payload: dict[str, Any]) -> tuple[list[str], list[tuple[Any, ...]]] | None:
    """Columns (text) and rows (scalar cells, one per column) of an ok payload; None if it is malformed."""
    columns, rows = payload.get("columns"), payload.get("rows")
    if not isinstance(columns, list) or not isinstance(rows, list) or \
            not all(isinstance(c, str) for c in columns):
        return None
    if not all(isinstance(r, list) and len(r) == len(columns) and all(isinstance(v, _CELL) for v in r)
               for r in rows):
        return None
    return columns, [tuple(r) for r in rows]


_PROBED: dict[tuple[Any, ...], bool] = {}


def _probe(command: list[str]) -> bool:
    try:
        done = subprocess.run(command, check=False, capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and done.stdout.strip() == b"ok"


@dataclass
class Sandbox:
    """Limits for one jailed run; ``run_pandas`` executes code over DataFrames and returns its ``result``.

    ``memory_mb`` and ``cpu_seconds`` are per process (rlimits), so the worst case in total is
    ``max_processes`` times as much; ``work_mb`` caps each of the two tmpfs (work dir and /tmp).
    """

    memory_mb: int = 1024
    cpu_seconds: int = 10
    wall_seconds: float = 30.0
    max_output_bytes: int = 64 * 1024
    max_file_mb: int = 16
    open_files: int = 64
    max_processes: int = 8
    work_mb: int = 64
    python: str = field(default_factory=lambda: sys.executable)

    def _command(self, argv: list[str]) -> list[str]:
        bwrap = shutil.which("bwrap") or "bwrap"
        cmd = [bwrap]
        as_root = os.geteuid() == 0
        if as_root:  # no user namespace, so that the uid dropped to below is a real, non-root kuid
            cmd += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                    "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
                    "--cap-add", "CAP_SETPCAP"]
        else:
            cmd += ["--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
        cmd += ["--die-with-parent", "--new-session",
                "--perms", "1777", "--size", str(self.work_mb * _MB), "--tmpfs", "/tmp"]
        cmd += _system_binds() + ["--perms", "0755", "--dir", "/sandbox"]
        cmd += ["--proc", "/proc", "--dev", "/dev",
                "--perms", "1777", "--size", str(self.work_mb * _MB), "--tmpfs", _WORK, "--chdir", _WORK,
                "--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME", _WORK,
                "--setenv", "TMPDIR", "/tmp", "--setenv", "LANG", "C.UTF-8",
                "--setenv", "PYTHONDONTWRITEBYTECODE", "1", "--setenv", "PYTHONNOUSERSITE", "1",
                "--setenv", "OPENBLAS_NUM_THREADS", "1", "--setenv", "OMP_NUM_THREADS", "1",
                "--setenv", "MKL_NUM_THREADS", "1", "--setenv", "NUMEXPR_MAX_THREADS", "1"]
        if as_root:
            uid = str(secrets.randbelow(1_000_000_000) + 1_000_000_000)  # fresh uid: own NPROC count
            cmd += ["--", shutil.which("setpriv") or "/usr/bin/setpriv", f"--reuid={uid}", f"--regid={uid}",
                    "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
        else:
            cmd += ["--"]
        return cmd + argv

    def within(self, seconds: float) -> Sandbox:
        """These limits with the wall-clock time (and the CPU time) cut to ``seconds``, for a run that must
        end before a deadline (the time left of the question's budget)."""
        wall = max(0.0, min(self.wall_seconds, seconds))
        return replace(self, wall_seconds=wall, cpu_seconds=max(1, min(self.cpu_seconds, math.ceil(wall))))

    def available(self) -> bool:
        """True when ``bwrap`` exists and a trivial jailed Python run works (cached per setup)."""
        if shutil.which("bwrap") is None or (os.geteuid() == 0 and shutil.which("setpriv") is None):
            return False
        key = (self.python, os.geteuid(), self.work_mb, shutil.which("bwrap"))  # not the random uid
        if key not in _PROBED:
            _PROBED[key] = _probe(self._command([self.python, "-I", "-c", "print('ok')"]))
        return _PROBED[key]

    def _limits(self) -> dict[str, list[int]]:
        mem, fsize = self.memory_mb * _MB, self.max_file_mb * _MB
        return {"RLIMIT_AS": [mem, mem], "RLIMIT_CPU": [self.cpu_seconds, self.cpu_seconds + 1],
                "RLIMIT_FSIZE": [fsize, fsize], "RLIMIT_NOFILE": [self.open_files, self.open_files],
                "RLIMIT_NPROC": [self.max_processes, self.max_processes], "RLIMIT_CORE": [0, 0]}

    def run_pandas(self, code: str, tables: dict[str, Any]) -> SandboxResult:
        """Run ``code`` with each table bound to a DataFrame of its name (and in ``tables``); return ``result``.

        ``pd`` and ``np`` are predefined. A Series becomes one column, a scalar a 1x1 frame; a named index
        is kept as columns. Raises ``SandboxUnavailableError`` if the jail cannot run (never runs unjailed).
        """
        if not self.available():
            raise SandboxUnavailableError(
                "bubblewrap (bwrap) is missing or cannot create namespaces here, so model-written Python is "
                "not run: install the 'bubblewrap' package (and, as non-root, allow unprivileged user "
                "namespaces); the pandas solver is skipped meanwhile")
        indir = tempfile.mkdtemp(prefix="verifiedsql-sandbox-")
        try:
            os.chmod(indir, 0o755)
            for i, frame in enumerate(tables.values()):
                frame.to_pickle(os.path.join(indir, f"t{i}.pkl"))
            with open(os.path.join(indir, "meta.json"), "w", encoding="utf-8") as fh:
                json.dump({"tables": list(tables)}, fh)
            with open(os.path.join(indir, "code.py"), "w", encoding="utf-8") as fh:
                fh.write(code)
            with open(os.path.join(indir, "runner.py"), "w", encoding="utf-8") as fh:
                fh.write(_RUNNER)
            for name in os.listdir(indir):
                os.chmod(os.path.join(indir, name), 0o644)
            return self._execute(indir)
        finally:
            shutil.rmtree(indir, ignore_errors=True)

    def _execute(self, indir: str) -> SandboxResult:
        read_fd, write_fd = os.pipe()  # the outcome pipe keeps its number in the jail (pass_fds)
        info_r, info_w = os.pipe()  # bwrap reports the jail's pid 1 here (not visible inside the jail)
        argv = [self.python, "-I", f"{_IN}/runner.py", str(write_fd), json.dumps(self._limits())]
        cmd = self._command(argv)
        at = cmd.index("--proc")
        cmd[at:at] = ["--ro-bind", indir, _IN]
        cmd[1:1] = ["--info-fd", str(info_w)]
        started = time.monotonic()
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, pass_fds=(write_fd, info_w),
                                    start_new_session=True)
        except OSError as exc:
            os.close(read_fd)
            os.close(info_r)
            raise SandboxError(f"could not start bwrap: {exc}") from exc
        finally:
            os.close(write_fd)
            os.close(info_w)
        def end_jail() -> None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        flood = max(OUTPUT_FLOOD_BYTES, self.max_output_bytes)
        drains = [_Drain(proc.stdout, self.max_output_bytes, end_jail, flood),  # type: ignore[arg-type]
                  _Drain(proc.stderr, self.max_output_bytes, end_jail, flood),  # type: ignore[arg-type]
                  _Drain(os.fdopen(read_fd, "rb"), max(self.max_file_mb * _MB, 1 * _MB)),
                  _Drain(os.fdopen(info_r, "rb"), 4096)]
        for d in drains:
            d.start()
        timed_out = False
        try:
            proc.wait(timeout=self.wall_seconds)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)  # bwrap's group; --die-with-parent ends the jail
                except ProcessLookupError:
                    pass
                proc.wait()
            drains[3].join(timeout=5)
            _reap_jail(bytes(drains[3].data))
        for d in drains[:3]:
            d.join(timeout=5)
        out, err, outcome, _ = drains
        return self._result(proc.returncode, timed_out, time.monotonic() - started, out, err, outcome)

    def _result(self, rc: int, timed_out: bool, seconds: float, out: _Drain, err: _Drain,
                outcome: _Drain) -> SandboxResult:
        payload = _payload(outcome)
        stderr = err.text()
        incident: Incident | None = None
        error: str | None = None
        if timed_out:
            incident, error = "timeout", f"the code ran longer than {self.wall_seconds:g} s and was killed"
        elif rc in (128 + signal.SIGXCPU, -signal.SIGXCPU):
            incident, error = "cpu", f"the code used more than {self.cpu_seconds} s of CPU and was killed"
        elif payload.get("memory") is True or (not payload and any(
                m in stderr for m in ("MemoryError", "Cannot allocate memory", "bad_alloc"))):
            incident = "memory"
            error = f"the code exceeded the {self.memory_mb} MB memory limit (MemoryError)"
        elif payload.get("file_size") is True or rc in (128 + signal.SIGXFSZ, -signal.SIGXFSZ):
            incident = "file_size"
            error = f"the code wrote a file larger than the {self.max_file_mb} MB limit"
        elif outcome.truncated:
            incident, error = "output", f"the result is larger than {self.max_file_mb} MB"
        elif out.truncated or err.truncated:
            incident = "output"  # printing too much is cut short; it fails no run on its own
            if payload.get("ok") is not True:
                error = f"the code printed more than {self.max_output_bytes} bytes (cut short)"
                if max(out.total, err.total) > max(OUTPUT_FLOOD_BYTES, self.max_output_bytes):
                    error += "; it kept printing and was stopped"
        ok = payload.get("ok") is True and incident in (None, "output") and not outcome.truncated
        rows: list[tuple[Any, ...]] = []
        columns: list[str] = []
        if ok:
            table = _table(payload)
            if table is None:
                ok, error = False, "the sandbox returned a malformed result"
            else:
                columns, rows = table
        elif error is None:
            tb = payload.get("error")
            error = str(tb) if tb else (
                f"the code ended without a result (exit status {rc}); stderr: {stderr[-2000:]}".rstrip())
        if error and incident and payload.get("error"):
            error = f"{error}\n{str(payload['error'])[-2000:]}"
        return SandboxResult(ok=ok, columns=columns, rows=rows, error=None if ok else error,
                             timed_out=timed_out, seconds=round(seconds, 3), incident=incident,
                             stdout=out.text(), stderr=stderr, returncode=rc)

