"""A throw-away PostgreSQL 15 server on 127.0.0.1, for ``bench verify``'s PostgreSQL replay and the test suites
(``tests/pg_server.py``): Debian's server binaries, run as ``postgres`` (initdb refuses root) on a new folder."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _as_postgres(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["runuser", "-u", "postgres", "--", *command], check=True, capture_output=True, text=True)


def available() -> bool:
    """Whether the server binaries and ``runuser`` are here."""
    return (PG_BIN / "initdb").exists() and shutil.which("runuser") is not None


class PostgresServer:
    """A server of its own in a new ``prefix`` folder (run as ``postgres``; initdb refuses root), initialised
    but not started; ``start``/``stop`` may be called again, as an administrator restarting it would."""

    def __init__(self, prefix: str = "verifiedsql-pg-") -> None:
        self.root = Path(tempfile.mkdtemp(prefix=prefix))
        shutil.chown(self.root, "postgres", "postgres")
        self.data, self.port = self.root / "data", _free_port()
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"
        _as_postgres(str(PG_BIN / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")

    def start(self) -> None:
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c fsync=off"
        _as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.root / "log"),
                     "-w", "start")

    def stop(self) -> None:
        """Shut down now: open sessions are terminated, as in a restart by an administrator."""
        _as_postgres(str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        """Stop it if it runs, and delete its folder."""
        subprocess.run(["runuser", "-u", "postgres", "--", str(PG_BIN / "pg_ctl"), "-D", str(self.data),
                        "-m", "immediate", "stop"], capture_output=True, check=False)
        shutil.rmtree(self.root, ignore_errors=True)
