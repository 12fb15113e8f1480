#!/usr/bin/env python3
"""The project index (chromadb + the offline int8 MiniLM embedder), measured in one run.

1. Index rate on real code: sorted top-level modules of the interpreter's standard library
   until about 1,000 chunks, through ``ProjectIndex.index`` (read, hash, chunk, embed, write)
   beside the embedder alone on the same chunk texts — the ratio is the pipeline's overhead.
   Then the same call again with nothing changed (the incremental path: read and hash only).
   Beside the embedder, on every third of those texts, in interleaved rounds: the float32
   graph as the model file ships (what the embedder ran before its int8 rewrite: texts
   batched by length under 512 tokens), and the embedder with a 192- or 128-token window.
2. Query latency (``ProjectIndex.query``, top_k=5, the labelled questions of
   ``tests/integration/rag_questions.json`` cycled): p50 and p99 at 1k chunks (all real),
   then 10k and 100k chunks. For those the real chunks are topped up with SYNTHETIC chunks:
   random unit vectors written straight into the collection (embedding 100k texts would take
   half an hour here). Random vectors have no cluster structure, the hard case for HNSW.
   "search" is chromadb alone with a precomputed query vector; "query" adds embedding it.
3. Growth: p50 at 10k / 1k and at 100k / 10k (a brute-force scan would give 10).

Run: ``.venv/bin/python scripts/bench_rag.py`` — takes about three minutes on two cores.
"""

from __future__ import annotations

import json
import statistics
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import chromadb
import numpy as np
import onnxruntime
from chromadb.config import Settings

from manual_slop.memory import embedder as embedder_module
from manual_slop.memory.chunking import chunk_bytes
from manual_slop.memory.embedder import default_embedder
from manual_slop.memory.index import COLLECTION, ProjectIndex

REAL_CHUNKS = 1_000
TIERS = (1_000, 10_000, 100_000)
QUERIES = 300
WARMUP = 5
WRITE_BATCH = 5_000
ROUNDS = 5
WINDOWS = (192, 128)
FLOAT32_TOKEN_BUDGET = 512  # texts x padded length per call, as the float32 embedder batched
QUESTIONS = Path(__file__).resolve().parents[1] / "tests" / "integration" / "rag_questions.json"


def real_corpus(root: Path) -> tuple[list[str], int]:
    """Sorted top-level stdlib modules until REAL_CHUNKS chunks (deterministic)."""
    files, chunks = [], 0
    for path in sorted(root.glob("*.py")):
        if chunks >= REAL_CHUNKS:
            break
        files.append(path.name)
        chunks += len(chunk_bytes(path.name, path.read_bytes()))
    return files, chunks


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def timed(fn: Callable[[int], Any], rounds: int) -> list[float]:
    """Seconds of each ``fn(n)`` for n in range(rounds)."""
    samples = []
    for n in range(rounds):
        started = time.perf_counter()
        fn(n)
        samples.append(time.perf_counter() - started)
    return samples


def float32_embed(session: Any, model: Any, texts: list[str]) -> None:
    """The embedder before int8: the shipped graph, texts sorted by length and batched."""
    encodings = [e.ids for e in model.tokenizer.encode_batch(texts)]
    order = sorted(range(len(encodings)), key=lambda i: len(encodings[i]))
    start = 0
    while start < len(order):
        stop = start + 1
        while stop < len(order) and (stop - start + 1) * len(encodings[order[stop]]) <= FLOAT32_TOKEN_BUDGET:
            stop += 1
        group = [encodings[i] for i in order[start:stop]]
        ids = np.zeros((len(group), max(map(len, group))), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, token_ids in enumerate(group):
            ids[row, : len(token_ids)], mask[row, : len(token_ids)] = token_ids, 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = session.run(None, feeds)[0]
        _ = (hidden * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)  # pooling counts too
        start = stop


def window_embed(model: Any, texts: list[str], window: int) -> None:
    """The embedder with at most ``window`` tokens per text ([SEP] kept last)."""
    for encoding in model.tokenizer.encode_batch(texts):
        ids = encoding.ids
        model._run(ids if len(ids) <= window else [*ids[: window - 1], ids[-1]])


def compare_embedders(texts: list[str], threads: int) -> dict[str, float]:
    """Median chunks/s of each way to embed ``texts``, measured in interleaved rounds."""
    model = embedder_module._loaded(threads)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.log_severity_level = threads, 3
    shipped = embedder_module._verified([embedder_module._MODEL], "embedding model")
    session = onnxruntime.InferenceSession(shipped, options, providers=["CPUExecutionProvider"])
    ways: dict[str, Callable[[], Any]] = {
        "int8, 256 tokens (the embedder)": lambda: model.embed(texts),
        "float32 as shipped, 256 tokens": lambda: float32_embed(session, model, texts),
        **{f"int8, {w} tokens": (lambda w=w: window_embed(model, texts, w)) for w in WINDOWS},
    }
    rates: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(ROUNDS):
        for name, way in ways.items():
            started = time.perf_counter()
            way()
            rates[name].append(len(texts) / (time.perf_counter() - started))
    return {name: statistics.median(samples) for name, samples in rates.items()}


def add_synthetic(collection: Any, start: int, count: int, rng: np.random.Generator) -> None:
    for offset in range(0, count, WRITE_BATCH):
        n = min(WRITE_BATCH, count - offset)
        vectors = rng.standard_normal((n, 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        ids = [f"synthetic/{start + offset + k:06}.py#0" for k in range(n)]
        meta = [
            {"path": i.split("#")[0], "start_line": 1, "end_line": 20, "symbol": "", "sha256": "0" * 64}
            for i in ids
        ]
        collection.add(ids=ids, embeddings=vectors, documents=["synthetic"] * n, metadatas=meta)


def main() -> None:
    root = Path(sysconfig.get_paths()["stdlib"])
    files, expected = real_corpus(root)
    questions = [q["q"] for q in json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]]
    queries = [questions[n % len(questions)] for n in range(QUERIES)]
    embedder = default_embedder()
    embedder.load()

    with tempfile.TemporaryDirectory() as folder:
        index = ProjectIndex(Path(folder))
        report = index.index(files, base_dir=root)
        rerun = index.index(files, base_dir=root)
        texts = [c.embedding_text() for f in files for c in chunk_bytes(f, (root / f).read_bytes())]
        started = time.perf_counter()
        for n in range(0, len(texts), 64):
            embedder.embed(texts[n : n + 64])
        bare = len(texts) / (time.perf_counter() - started)
        pipeline = report.chunks_added / report.seconds

        print(
            f"index rate: {len(files)} stdlib modules, {report.chunks_added} chunks "
            f"({embedder.threads} onnxruntime threads)"
        )
        print(f"  embedder alone            {bare:7.1f} chunks/s")
        print(f"  ProjectIndex.index        {pipeline:7.1f} chunks/s   ratio {pipeline / bare:.2f}")
        print(
            f"  re-run, nothing changed   {rerun.seconds * 1000:7.1f} ms for {len(rerun.unchanged)} files "
            f"({len(rerun.unchanged) / rerun.seconds:,.0f} files/s)"
        )
        sample = texts[::3]
        rates = compare_embedders(sample, embedder.threads)
        now = rates["int8, 256 tokens (the embedder)"]
        print(f"\nembedders on {len(sample)} of those texts, median of {ROUNDS} interleaved rounds")
        for name, rate in rates.items():
            print(f"  {name:<33} {rate:7.1f} chunks/s   ratio {rate / now:.2f}")

        client = chromadb.PersistentClient(
            path=str(Path(folder) / "index"), settings=Settings(anonymized_telemetry=False)
        )
        collection = client.get_collection(COLLECTION)
        vectors = embedder.embed(queries)
        rng = np.random.default_rng(7)
        print(f"\nlatency, top_k=5, {QUERIES} queries   query p50  query p99  search p50  search p99")
        query_p50: dict[int, float] = {}
        search_p50: dict[int, float] = {}
        for tier in TIERS:
            missing = tier - collection.count()
            note = "all real"
            if missing > 0:
                add_started = time.perf_counter()
                add_synthetic(collection, collection.count(), missing, rng)
                note = f"+{missing:,} synthetic, written in {time.perf_counter() - add_started:.0f} s"
            timed(lambda n: index.query(queries[n], top_k=5), WARMUP)  # the first search after writes
            query_samples = timed(lambda n: index.query(queries[n], top_k=5), QUERIES)
            search_samples = timed(
                lambda n: collection.query(query_embeddings=vectors[[n]], n_results=5), QUERIES
            )
            (q50, q99), (s50, s99) = percentiles(query_samples), percentiles(search_samples)
            query_p50[tier], search_p50[tier] = q50, s50
            print(
                f"  {collection.count():>7,} chunks{'':<19}{q50 * 1e3:6.1f} ms  {q99 * 1e3:6.1f} ms  "
                f"{s50 * 1e3:7.1f} ms  {s99 * 1e3:7.1f} ms   ({note})"
            )
        print("\ngrowth of p50 (a linear scan would give 10)")
        for label, p50 in (("query", query_p50), ("search", search_p50)):
            small, large = p50[10_000] / p50[1_000], p50[100_000] / p50[10_000]
            print(f"  {label:<7} 10k/1k {small:5.2f}   100k/10k {large:5.2f}")
        client.close()
        index.close()
    if expected != report.chunks_added:
        print(f"(note: {expected} chunks expected, {report.chunks_added} indexed)")


if __name__ == "__main__":
    main()
