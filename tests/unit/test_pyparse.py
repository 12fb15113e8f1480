"""pyparse.parse: ast.parse that threads can share (CPython 3.11's AST state is per interpreter)."""

from __future__ import annotations

import ast
import gc
import threading
import time
from pathlib import Path

from manual_slop import pyparse

SOURCE = (Path(__file__).resolve().parents[2] / "src/manual_slop/mma/dag.py").read_text()


def test_concurrent_parses_with_thread_switches_inside_gc_never_corrupt_the_ast_state() -> None:
    # a gc callback that yields the GIL makes a collection inside the AST conversion switch
    # threads: with bare ast.parse this raised "AST constructor recursion depth mismatch"
    errors: list[BaseException] = []
    stop = time.monotonic() + 1.0

    def work() -> None:
        try:
            while time.monotonic() < stop:
                assert isinstance(pyparse.parse(SOURCE, "dag.py"), ast.Module)
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    def yield_gil(phase: str, info: dict) -> None:
        time.sleep(0)

    threshold = gc.get_threshold()
    gc.callbacks.append(yield_gil)
    gc.set_threshold(100)
    try:
        threads = [threading.Thread(target=work) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(yield_gil)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []


def test_parse_keeps_ast_parse_errors_and_filename() -> None:
    try:
        pyparse.parse("def f(:\n", "broken.py")
    except SyntaxError as exc:
        assert exc.filename == "broken.py"
    else:
        raise AssertionError("a syntax error must raise")
