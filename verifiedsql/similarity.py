"""Question similarity for VET's semantic check, offline: the static word embeddings that the ``wordllama``
package ships inside its wheel (256 dimensions, MIT licence), loaded from the package folder and never
downloaded. Without the package the check is reported as not run.

The threshold is calibrated on Spider dev with ``benchmarks/similarity_threshold.py`` (the paper's 0.7 is
for bge-m3, a different model): 0.6 keeps 96% of the paraphrase pairs that share a gold query and turns
down 88% of pairs of different questions on the same database."""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

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


@lru_cache(maxsize=1)
def offline_similarity() -> WordLlamaSimilarity | None:
    """The packaged model, loaded once (about 0.6 s); None when ``wordllama`` or its files are missing."""
    try:
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


def unavailable_reason() -> str:
    return ("not run: no offline embedding model; install the 'wordllama' package (it ships its weights) "
            "to enable it")
