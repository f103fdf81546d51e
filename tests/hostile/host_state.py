"""What the test process holds on the host (descendant processes, open file descriptors, Python threads,
temporary files and directories), so that a test can show that hostile work left nothing behind.

Temporary paths are those ``tempfile.mkdtemp``/``mkstemp`` made in this process while the
``record_temp_paths`` fixture is active (import it into the test module): a glob of the shared temp
directory would also see other processes' files.
"""

from __future__ import annotations

import functools
import gc
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

_MADE: list[str] = []  # every temporary path made in this process while record_temp_paths is active


def _recorded(make: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(make)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        made = make(*args, **kwargs)
        _MADE.append(made if isinstance(made, str) else made[1])  # mkstemp: (fd, path)
        return made

    return wrapper


@pytest.fixture
def record_temp_paths(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Record the paths ``tempfile.mkdtemp`` and ``tempfile.mkstemp`` make (``HostState.temp_files``)."""
    monkeypatch.setattr(tempfile, "mkdtemp", _recorded(tempfile.mkdtemp))
    monkeypatch.setattr(tempfile, "mkstemp", _recorded(tempfile.mkstemp))
    yield
    _MADE.clear()


def descendants(pid: int | None = None) -> set[int]:
    """Every living process below ``pid`` (default: this one), however deep."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if fields[0] not in (b"Z", b"X"):
            parents[int(entry)] = int(fields[1])
    found: set[int] = set()
    frontier = {os.getpid() if pid is None else pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


@dataclass(frozen=True)
class HostState:
    """One snapshot; ``leaks(later)`` names what ``later`` holds beyond it."""

    processes: frozenset[int]
    fds: frozenset[str]  # "fd -> target"
    threads: frozenset[int]
    temp_files: frozenset[str]  # recorded temporary paths that still exist

    @classmethod
    def now(cls) -> HostState:
        """A snapshot; what only garbage holds still counts (``settled`` collects it first)."""
        fds = set()
        for fd in os.listdir("/proc/self/fd"):
            try:
                fds.add(f"{fd} -> {os.readlink(f'/proc/self/fd/{fd}')}")
            except OSError:
                pass  # the fd listdir itself used
        return cls(frozenset(descendants()), frozenset(fds), frozenset(t.ident or 0 for t in threading.enumerate()),
                   frozenset(path for path in list(_MADE) if os.path.exists(path)))

    def leaks(self, later: HostState) -> list[str]:
        """What ``later`` holds that this snapshot did not (an empty list: nothing leaked)."""
        found = [f"process {pid}: {_cmdline(pid)}" for pid in sorted(later.processes - self.processes)]
        found += [f"open fd {fd}" for fd in sorted(later.fds - self.fds)]
        found += [f"thread {t.name}" for t in threading.enumerate() if t.ident in later.threads - self.threads]
        found += [f"temporary file {path}" for path in sorted(later.temp_files - self.temp_files)]
        return found


def settled(before: HostState, patience_s: float = 10.0) -> list[str]:
    """The leaks against ``before`` once short-lived helpers (daemon threads, reaped jails) have had
    ``patience_s`` to finish; an empty list when nothing leaked."""
    deadline = time.monotonic() + patience_s
    while True:
        gc.collect()  # unreferenced connections and pipes close now, not at some later collection
        found = before.leaks(HostState.now())
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")[:200]
    except OSError:
        return "?"
