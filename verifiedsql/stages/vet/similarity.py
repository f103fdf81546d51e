"""Question similarity for VET's semantic check, offline: the static word embeddings that the ``wordllama``
package ships inside its wheel (256 dimensions, MIT licence), loaded from the package folder and never
downloaded. Without the package the check is reported as not run.

The threshold is calibrated on Spider dev with ``benchmarks/similarity_threshold.py`` (the paper's 0.7 is
for bge-m3, a different model): 0.6 keeps 96.2% of the paraphrase pairs that share a gold query and turns
down 87.4% of pairs of different questions on the same database."""

from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Protocol

DEFAULT_THRESHOLD = 0.6
_WEIGHTS = ("weights", "l2_supercat_256.safetensors")
_TOKENIZER = ("tokenizers", "l2_supercat_tokenizer_config.json")
_LOCK = threading.Lock()


class Similarity(Protocol):
    """Anything that scores two texts in [-1, 1]; ``name`` says which model it is."""

    name: str

    def similarity(self, a: str, b: str) -> float: ...


class WordLlamaSimilarity:
    """Cosine similarity of wordllama's averaged token embeddings."""

    name = "wordllama l2_supercat 256d (offline, from the PyPI wheel)"

    def __init__(self, model: Any) -> None:
        self._model = model

    def similarity(self, a: str, b: str) -> float:
        with _LOCK:  # the tokenizer object is shared between threads
            return float(self._model.similarity(a, b))


@contextmanager
def _root_logging_untouched() -> Iterator[None]:
    """wordllama calls ``logging.basicConfig(level=INFO)`` on import, which would configure the application's
    root logger; with a handler in place for the import, that call does nothing."""
    root = logging.getLogger()
    guard = None if root.handlers else logging.NullHandler()
    if guard is not None:
        root.addHandler(guard)
    try:
        yield
    finally:
        if guard is not None:
            root.removeHandler(guard)


@lru_cache(maxsize=1)
def offline_similarity() -> WordLlamaSimilarity | None:
    """The packaged model, loaded once (about 0.6 s); None when ``wordllama`` or its files are missing."""
    try:
        with _root_logging_untouched():
            _import_wordllama()
        import wordllama  # type: ignore[import-untyped,unused-ignore]
        from safetensors import safe_open
        from wordllama.inference import WordLlamaInference  # type: ignore[import-untyped,unused-ignore]
        from wordllama.wordllama import WordLlama  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        return None
    root = Path(wordllama.__file__).parent
    weights, tokenizer = root.joinpath(*_WEIGHTS), root.joinpath(*_TOKENIZER)
    if not (weights.is_file() and tokenizer.is_file()):
        return None
    with safe_open(str(weights), framework="np", device="cpu") as handle:
        embedding = handle.get_tensor("embedding.weight")
    return WordLlamaSimilarity(WordLlamaInference(embedding, WordLlama.load_tokenizer(tokenizer)))


def _import_wordllama() -> None:
    import wordllama.inference  # type: ignore[import-untyped,unused-ignore]  # noqa: F401


def unavailable_reason() -> str:
    return ("not run: no offline embedding model; install the 'wordllama' package (it ships its weights) "
            "to enable it")
