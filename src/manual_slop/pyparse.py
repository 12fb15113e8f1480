"""``ast.parse`` safe to call from several threads at once.

CPython 3.11 keeps the depth counter of its AST-to-object conversion in per-interpreter
state, not per thread. A garbage collection in the middle of a conversion may run Python
code (a ``gc`` callback, a finalizer) and so switch threads; a second thread converting a
tree then corrupts the first one's counter and ``ast.parse`` raises
``SystemError: AST constructor recursion depth mismatch``. Context aggregation, MMA
workers' Tier 3 context, the tools and the memory chunker all parse on their own threads,
so every parse in the app goes through :func:`parse`, which serializes them. Parsing holds
the GIL anyway: the lock costs no parallelism.
"""

from __future__ import annotations

import ast
import threading
from typing import Any

__all__ = ["parse"]

_PARSE_LOCK = threading.Lock()  # declared singleton: one interpreter-wide AST state to protect


def parse(source: str | bytes, filename: str = "<unknown>", **kwargs: Any) -> ast.Module:
    """``ast.parse(source, filename, **kwargs)``, one thread at a time."""
    with _PARSE_LOCK:
        return ast.parse(source, filename=filename, **kwargs)
