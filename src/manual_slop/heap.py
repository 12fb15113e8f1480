"""Giving memory back to the system after a large piece of work (a compile of big files).

CPython frees objects at once, but glibc keeps freed heap pages for reuse, so the resident
size of the process stays at its peak. ``malloc_trim(0)`` hands the free pages back. Where
there is no glibc (macOS, Windows, musl) this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys

__all__ = ["release_memory"]


@functools.cache
def _malloc_trim():  # the C function, or None where there is none
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):
        return None


def release_memory() -> None:
    """Return the heap's free pages to the system (glibc only; cheap when there are none)."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
