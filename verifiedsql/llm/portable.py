"""Text that reads the same in every checkout: the Python environment's path (``sys.prefix``), which a
sandboxed traceback names in every pandas frame, is masked in cache keys and counted at a fixed width where
a traceback is cut, so a prompt recorded in one checkout replays in another."""

from __future__ import annotations

import sys

PYTHON_PREFIX = "<python-prefix>"
# Where a traceback is cut to its tail, the environment's path counts as this many characters, whatever its
# real length. 16 is the length of the path the committed caches were recorded under (/work/main/.venv), so
# their prompts are unchanged; any fixed number would make the cut the same in every checkout.
PREFIX_WIDTH = 16


def environment_prefix() -> str:
    """The virtual environment's path (``sys.prefix``); "" outside a virtual environment."""
    return sys.prefix if sys.prefix != sys.base_prefix else ""


def portable(payload: str, prefix: str | None = None) -> str:
    """``payload`` with the virtual environment's path masked."""
    prefix = environment_prefix() if prefix is None else prefix
    return payload.replace(prefix, PYTHON_PREFIX) if len(prefix) > 1 else payload


def portable_tail(text: str, chars: int, prefix: str | None = None) -> str | None:
    """The end of ``text`` that is ``chars`` long when each occurrence of the environment's path counts as
    ``PREFIX_WIDTH`` characters; None when the whole text is no longer than that. A cut inside the path keeps
    as many of its last characters as are left."""
    prefix = environment_prefix() if prefix is None else prefix
    parts = text.split(prefix) if len(prefix) > 1 else [text]
    if sum(map(len, parts)) + PREFIX_WIDTH * (len(parts) - 1) <= chars:
        return None
    kept: list[str] = []
    left = chars
    for part in reversed(parts):  # the text is longer than ``chars``, so the cut falls before the first part ends
        if len(part) >= left:
            kept.append(part[len(part) - left:])
            break
        kept.append(part)
        left -= len(part)
        if PREFIX_WIDTH >= left:
            kept.append(prefix if left == PREFIX_WIDTH else prefix[max(len(prefix) - left, 0):])
            break
        kept.append(prefix)
        left -= PREFIX_WIDTH
    return "".join(reversed(kept))
