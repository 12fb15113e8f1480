"""The project index: chunks of the project's files in chromadb, searched by meaning.

``index()`` is incremental: a manifest keeps each file's sha256, so an unchanged file costs
one read and one hash, and only new or edited files are chunked
(:mod:`~manual_slop.memory.chunking`) and embedded (:mod:`~manual_slop.memory.embedder`)
in batches of :data:`BATCH` chunks. A file is written in one step once all its chunks have
vectors (new chunks upserted, then the old ones deleted), so a cancelled or failed run
leaves every file either fully re-indexed or as it was. Files that left the set, or that
became unreadable or refused by the path policy, are removed.

The manifest is only a cache of what chromadb holds: it is marked incomplete before a
run's first write and saved complete at the end, and an incomplete or unreadable manifest
is rebuilt from the chunks' metadata. The collection's metadata records the embedder that
built it (``Embedder.name``: model, int8 path, window); a collection built by another
embedder or by none recorded, or a manifest of another :data:`INDEX_FORMAT` (chunking or
embedded text changed), is dropped, so the next run indexes everything anew rather than
mixing vectors.

Queries never wait for indexing; chromadb writes and the manifest share one lock.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
from chromadb.config import Settings
from chromadb.errors import NotFoundError

from manual_slop.atomic_io import atomic_write_text
from manual_slop.memory.chunking import Chunk, chunk_text, skip_reason
from manual_slop.memory.embedder import Embedder, MiniLMEmbeddingFunction, default_embedder
from manual_slop.tools.textio import decode

__all__ = ["BATCH", "INDEX_FORMAT", "IndexBusy", "IndexProgress", "IndexReport", "Passage", "ProjectIndex"]

BATCH = 64
MAX_TOP_K = 100
COLLECTION = "project"
EMBEDDER_KEY = "embedder"  # collection metadata: the id of the embedder that built it
# Bump when chunking or the embedded text changes: an index of another format is rebuilt.
INDEX_FORMAT = 1


class IndexBusy(RuntimeError):
    """Another process (the app, or ``sloppy index``) is building this index right now."""


@contextlib.contextmanager
def _one_process(lock_file: Path) -> Iterator[None]:
    """Hold the index's lock file for one run; closing the file releases it, also when the
    process is killed."""
    handle = lock_file.open("a+b")
    try:
        try:
            if os.name == "nt":
                import msvcrt

                msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
            else:
                import fcntl

                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise IndexBusy(
                f"another process is building the index in {lock_file.parent}; try again when it ends"
            ) from None
        yield
    finally:
        handle.close()


@dataclass(frozen=True, slots=True)
class Passage:
    """One search hit: lines ``start_line``-``end_line`` of ``source``; higher score is closer."""

    source: str
    start_line: int
    end_line: int
    text: str
    score: float  # 1 - cosine distance

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class IndexProgress:
    """Sent after each batch: files looked at so far out of all, chunks embedded, last file."""

    files_done: int
    files_total: int
    chunks_added: int
    path: str


@dataclass(slots=True)
class IndexReport:
    """What one :meth:`ProjectIndex.index` run did (paths as shown, relative to the base dir)."""

    indexed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # path -> reason
    removed: list[str] = field(default_factory=list)
    chunks_added: int = 0
    seconds: float = 0.0
    cancelled: bool = False

    @property
    def files_done(self) -> int:
        return len(self.indexed) + len(self.unchanged) + len(self.skipped)


@dataclass(slots=True)
class _Entry:
    sha256: str
    chunks: int


@dataclass(slots=True)
class _FileWork:
    """A changed file on its way in: its chunks and, batch by batch, their vectors."""

    key: str
    sha256: str
    chunks: list[Chunk]
    vectors: list[Any] = field(default_factory=list)
    scheduled: int = 0

    @property
    def complete(self) -> bool:
        return len(self.vectors) == len(self.chunks)


class ProjectIndex:
    """A persistent, incremental semantic index of project files under ``cache_dir/index``."""

    def __init__(
        self,
        cache_dir: Path,
        *,
        refuse: Callable[[str], str | None] | None = None,
        embedder: Embedder | None = None,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self._embedder = embedder or default_embedder()
        self._refuse = refuse
        self._redact = redact  # known secrets are cut from chunks before they are embedded or stored
        self._folder = Path(cache_dir) / "index"
        self._folder.mkdir(parents=True, exist_ok=True)
        self._manifest_path = self._folder / "manifest.json"
        self._write_lock = threading.Lock()  # chromadb writes and self._files
        self._run_lock = threading.Lock()  # one index() run at a time
        self._client = chromadb.PersistentClient(
            path=str(self._folder), settings=Settings(anonymized_telemetry=False)
        )
        self._rebuilt = False  # the collection was dropped on opening (another embedder or format)
        self._collection = self._open_collection()
        self._files = self._load_manifest()
        self._dirty = False
        self._closed = False

    # -- indexing ------------------------------------------------------------------------

    def index(
        self,
        paths: Sequence[str | Path],
        *,
        base_dir: Path,
        progress: Callable[[IndexProgress], None] | None = None,
        cancel: threading.Event | None = None,
        refuse: Callable[[str], str | None] | None = None,
    ) -> IndexReport:
        """Bring the index in line with ``paths`` (files; relative ones are under ``base_dir``);
        ``refuse`` replaces the index's own path check for this run (the project's current policy)."""
        started = time.perf_counter()
        report = IndexReport()
        with self._run_lock, _one_process(self._folder / "index.lock"):
            # another process may have changed the index since this one opened it
            with self._write_lock:
                self._files = self._load_manifest()
            targets = _targets(paths, Path(base_dir))
            try:
                self._remove([key for key in list(self._files) if key not in targets], report)
                works = self._changed_files(targets, report, cancel, refuse or self._refuse)
                pending: deque[_FileWork] = deque()
                exhausted = False
                while cancel is None or not cancel.is_set():
                    while not exhausted and sum(len(w.chunks) - w.scheduled for w in pending) < BATCH:
                        work = next(works, None)
                        exhausted = work is None
                        if work is not None:
                            pending.append(work)
                    if not pending:
                        break
                    self._embed_batch(pending)
                    last = self._commit_ready(pending, report)
                    if progress is not None:
                        progress(IndexProgress(report.files_done, len(targets), report.chunks_added, last))
                # Files still pending keep their previous chunks (or none): whole files only.
                report.cancelled = report.files_done < len(targets)
            finally:
                self._save_manifest()
        report.seconds = time.perf_counter() - started
        if progress is not None:
            progress(IndexProgress(report.files_done, len(targets), report.chunks_added, ""))
        return report

    def _changed_files(
        self,
        targets: dict[str, Path],
        report: IndexReport,
        cancel: threading.Event | None,
        refuse: Callable[[str], str | None] | None,
    ) -> Iterator[_FileWork]:
        """Each new or edited file, chunked; unchanged and skipped files go in the report."""
        for key, path in targets.items():
            if cancel is not None and cancel.is_set():
                return
            data, reason = self._read(path, refuse)
            if data is None:
                report.skipped[key] = reason or "unreadable"
                self._remove([key], report)
                continue
            digest = hashlib.sha256(data).hexdigest()
            entry = self._files.get(key)
            if entry is not None and entry.sha256 == digest:
                report.unchanged.append(key)
                continue
            text = decode(data)[0]  # UTF-8, else Latin-1
            if self._redact is not None:  # the digest stays the file's: change detection is unaffected
                text = self._redact(text)
            yield _FileWork(key, digest, chunk_text(key, text))

    def _read(
        self, path: Path, refuse: Callable[[str], str | None] | None
    ) -> tuple[bytes | None, str | None]:
        """The file's bytes, or None and why it may not or cannot be indexed."""
        reason = refuse(str(path)) if refuse is not None else None
        if reason is not None:
            return None, reason
        try:
            if not path.is_file():
                return None, "not found" if not path.exists() else "not a regular file"
            reason = skip_reason(path.stat().st_size)
            data = b"" if reason else path.read_bytes()
        except OSError as exc:
            return None, f"cannot read: {exc.strerror or exc}"
        reason = reason or skip_reason(len(data), data)
        return (None, reason) if reason else (data, None)

    def _embed_batch(self, pending: deque[_FileWork]) -> None:
        """Vectors for the next BATCH chunks waiting in ``pending``, in file order."""
        batch: list[tuple[_FileWork, Chunk]] = []
        for work in pending:
            while work.scheduled < len(work.chunks) and len(batch) < BATCH:
                batch.append((work, work.chunks[work.scheduled]))
                work.scheduled += 1
        if batch:
            vectors = self._embedder.embed([chunk.embedding_text() for _, chunk in batch])
            for (work, _), vector in zip(batch, vectors, strict=True):
                work.vectors.append(vector)

    def _commit_ready(self, pending: deque[_FileWork], report: IndexReport) -> str:
        """Write every fully embedded file at the front of ``pending``; the last one's path."""
        last = ""
        while pending and pending[0].complete:
            work = pending.popleft()
            self._write(work)
            report.indexed.append(work.key)
            report.chunks_added += len(work.chunks)
            last = work.key
        return last

    def _write(self, work: _FileWork) -> None:
        ids = [f"{work.key}#{n}" for n in range(len(work.chunks))]
        metadatas: list[Any] = [
            {
                "path": work.key,
                "start_line": chunk.start_line,
                "end_line": chunk.end_line,
                "symbol": chunk.symbol,
                "sha256": work.sha256,
            }
            for chunk in work.chunks
        ]
        with self._write_lock:
            self._mark_dirty()
            if ids:  # new chunks first: a query meanwhile sees the old file or the new one
                self._collection.upsert(
                    ids=ids,
                    embeddings=np.asarray(work.vectors, dtype=np.float32),
                    documents=[chunk.text for chunk in work.chunks],
                    metadatas=metadatas,
                )
            self._collection.delete(where={"$and": [{"path": work.key}, {"sha256": {"$ne": work.sha256}}]})
            self._files[work.key] = _Entry(work.sha256, len(ids))

    def _remove(self, keys: list[str], report: IndexReport) -> None:
        keys = [key for key in keys if key in self._files]
        if not keys:
            return
        with self._write_lock:
            self._mark_dirty()
            self._collection.delete(where={"path": {"$in": keys}})
            for key in keys:
                del self._files[key]
        report.removed.extend(keys)

    # -- reading -------------------------------------------------------------------------

    def query(self, text: str, top_k: int = 5) -> list[Passage]:
        """The ``top_k`` chunks closest in meaning to ``text``, best first."""
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
            raise ValueError(f"top_k must be an integer from 1 to {MAX_TOP_K}, got {top_k!r}")
        if not text.strip():
            return []
        # No count() first: on 100k chunks it costs more than the search (fewer hits come back).
        result = self._collection.query(
            query_embeddings=self._embedder.embed([text]),
            n_results=top_k,
            include=["documents", "metadatas", "distances"],
        )
        documents = (result["documents"] or [[]])[0]
        metadatas = (result["metadatas"] or [[]])[0]
        distances = (result["distances"] or [[]])[0]
        return [
            Passage(
                str(meta["path"]), _int(meta["start_line"]), _int(meta["end_line"]), doc, 1.0 - float(dist)
            )
            for doc, meta, dist in zip(documents, metadatas, distances, strict=True)
        ]

    def status(self) -> dict[str, Any]:
        """Files and chunks in the index, the embedding model and where the index lives."""
        with self._write_lock:
            files = len(self._files)
        return {
            "files": files,
            "chunks": self._collection.count(),
            "model": self._embedder.name,
            "path": str(self._folder),
        }

    def close(self) -> None:
        """Save the manifest and release chromadb's files (after a running index() ends: cancel
        it first); later calls do nothing."""
        with self._run_lock:
            if self._closed:
                return
            self._closed = True
            self._save_manifest()
            self._client.close()

    def __enter__(self) -> ProjectIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- the collection and its manifest ----------------------------------------------------

    def _open_collection(self) -> Any:
        """The collection, dropped first when another embedder built it (or one from before the
        embedder was recorded): vectors of another model, int8 path or window do not compare."""
        function = MiniLMEmbeddingFunction(self._embedder)
        try:
            collection = self._client.get_collection(COLLECTION, embedding_function=function)  # type: ignore[arg-type]
            if (collection.metadata or {}).get(EMBEDDER_KEY) == self._embedder.name:
                return collection
        except NotFoundError:
            return self._create_collection(function)
        except ValueError:  # chromadb: it was made with another embedding function
            pass
        self._client.delete_collection(COLLECTION)
        self._rebuilt = True
        return self._create_collection(function)

    def _create_collection(self, function: MiniLMEmbeddingFunction) -> Any:
        return self._client.create_collection(
            COLLECTION,
            configuration={"hnsw": {"space": "cosine"}},
            metadata={EMBEDDER_KEY: self._embedder.name},
            embedding_function=function,  # type: ignore[arg-type]
        )

    def _load_manifest(self) -> dict[str, _Entry]:
        """The manifest's files when it is complete and matches the collection, else rebuilt."""
        raw: dict[str, Any] = {}
        with contextlib.suppress(OSError, ValueError):
            raw = json.loads(self._manifest_path.read_text(encoding="utf-8"))
        if isinstance(raw, dict) and raw.get("format", INDEX_FORMAT) != INDEX_FORMAT:
            # Chunked or embedded another way: start again rather than mix two kinds of chunk.
            self._client.delete_collection(COLLECTION)
            self._collection = self._open_collection()
            self._rebuilt = True
        if self._rebuilt:  # once: later runs read the manifest this one writes
            self._rebuilt = False
            self._write_manifest(complete=True, files={})
            return {}
        with contextlib.suppress(AttributeError, KeyError, TypeError, ValueError):
            if raw["complete"]:
                files = {key: _Entry(str(sha), int(n)) for key, (sha, n) in raw["files"].items()}
                if sum(entry.chunks for entry in files.values()) == self._collection.count():
                    return files
        return self._manifest_from_chunks()

    def _manifest_from_chunks(self) -> dict[str, _Entry]:
        hashes: dict[str, set[str]] = {}
        counts: dict[str, int] = {}
        metadatas = self._collection.get(include=["metadatas"])["metadatas"] or []
        for meta in metadatas:
            key = str(meta["path"])
            hashes.setdefault(key, set()).add(str(meta["sha256"]))
            counts[key] = counts.get(key, 0) + 1
        # Two versions of one file (a write cut short): an empty hash makes the next run redo it.
        return {key: _Entry(next(iter(h)) if len(h) == 1 else "", counts[key]) for key, h in hashes.items()}

    def _mark_dirty(self) -> None:
        if not self._dirty:
            self._dirty = True
            self._write_manifest(complete=False, files={})

    def _save_manifest(self) -> None:
        with self._write_lock:
            if self._dirty:
                self._write_manifest(complete=True, files=self._files)
                self._dirty = False

    def _write_manifest(self, *, complete: bool, files: dict[str, _Entry]) -> None:
        document = {
            "format": INDEX_FORMAT,
            "model": self._embedder.name,
            "complete": complete,
            "files": {key: [entry.sha256, entry.chunks] for key, entry in files.items()},
        }
        atomic_write_text(self._manifest_path, json.dumps(document, separators=(",", ":")))


def _int(value: object) -> int:
    return value if isinstance(value, int) else int(str(value))


def _targets(paths: Sequence[str | Path], base_dir: Path) -> dict[str, Path]:
    """Shown path (relative to ``base_dir`` when inside it) -> absolute path, first wins."""
    base = Path(os.path.normpath(base_dir.absolute()))
    targets: dict[str, Path] = {}
    for raw in paths:
        path = Path(raw)
        absolute = Path(os.path.normpath(path if path.is_absolute() else base / path))
        try:
            key = absolute.relative_to(base).as_posix()
        except ValueError:
            key = absolute.as_posix()
        targets.setdefault(key, absolute)
    return targets
