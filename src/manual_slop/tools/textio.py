"""Reading and writing project files as text without losing what makes them theirs.

A :class:`TextFile` remembers how a file was stored — encoding (UTF-8, UTF-8 with a BOM,
or Latin-1 for bytes that are not UTF-8, which round-trips every byte), its line-ending
style and size — so an edit writes it back the same way. Binary files (a NUL byte in
the first 8 KiB) are refused with a clear message; missing files, folders and permission
problems become :class:`~manual_slop.tools.errors.ToolInputError` naming the path.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from manual_slop.atomic_io import atomic_write_bytes
from manual_slop.tools.errors import ToolInputError

__all__ = [
    "BINARY_SNIFF_BYTES",
    "TextFile",
    "decode",
    "detect_newline",
    "is_binary",
    "iter_lines",
    "read_bytes",
    "read_text",
    "to_newline",
    "unified_diff",
    "write_text",
]

BINARY_SNIFF_BYTES = 8192
DIFF_LIMIT_CHARS = 200_000


def is_binary(data: bytes) -> bool:
    """A NUL byte near the start means binary (what git and grep assume too)."""
    return b"\x00" in data[:BINARY_SNIFF_BYTES]


def detect_newline(text: str) -> str:
    """The file's dominant line ending: ``\\r\\n``, ``\\r`` or ``\\n`` (the default)."""
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    cr = text.count("\r") - crlf
    if crlf and crlf >= lf and crlf >= cr:
        return "\r\n"
    if cr > lf:
        return "\r"
    return "\n"


def to_newline(text: str, newline: str) -> str:
    """``text`` with every line ending (``\\r\\n``, ``\\r``, ``\\n``) turned into ``newline``."""
    unified = text.replace("\r\n", "\n").replace("\r", "\n")
    return unified if newline == "\n" else unified.replace("\n", newline)


@dataclass(frozen=True, slots=True)
class TextFile:
    """A decoded text file and how it was stored."""

    path: Path
    text: str
    encoding: str  # "utf-8", "utf-8-sig" or "latin-1"
    newline: str
    size: int

    @property
    def lossy_note(self) -> str:
        """A note for the model when the file was not UTF-8."""
        if self.encoding == "latin-1":
            return "[note: this file is not valid UTF-8; it is shown decoded as Latin-1]\n"
        return ""

    def encode(self, text: str) -> bytes:
        """``text`` in this file's encoding; ToolInputError when it cannot be represented."""
        try:
            return text.encode(self.encoding)
        except UnicodeEncodeError as exc:
            raise ToolInputError(
                f"the new text has {exc.object[exc.start : exc.end]!r}, which this {self.encoding} file "
                "cannot store"
            ) from None


def _os_error(path: Path, shown: str, exc: OSError) -> ToolInputError:
    if isinstance(exc, FileNotFoundError):
        return ToolInputError(f"no such file: {shown}")
    if isinstance(exc, IsADirectoryError):
        return ToolInputError(f"{shown} is a directory, not a file (use list_directory)")
    if isinstance(exc, PermissionError):
        return ToolInputError(f"permission denied: {shown}")
    return ToolInputError(f"cannot read {shown}: {exc.strerror or exc}")


def read_bytes(path: Path, shown: str, limit: int | None = None) -> tuple[bytes, int]:
    """Up to ``limit`` bytes of a regular file and its full size."""
    try:
        if path.is_dir():
            raise IsADirectoryError(str(path))
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            data = handle.read() if limit is None else handle.read(limit)
    except OSError as exc:
        raise _os_error(path, shown, exc) from None
    return data, size


def decode(data: bytes) -> tuple[str, str]:
    """``(text, encoding)``: UTF-8 (with or without BOM), else Latin-1 (lossless)."""
    if data.startswith(b"\xef\xbb\xbf"):
        try:
            return data[3:].decode("utf-8"), "utf-8-sig"
        except UnicodeDecodeError:
            pass
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as exc:
        if exc.start >= len(data) - 3 and exc.reason == "unexpected end of data":
            # A read limit cut a multi-byte character in half: drop the fragment.
            return data[: exc.start].decode("utf-8"), "utf-8"
        return data.decode("latin-1"), "latin-1"


def read_text(path: Path, shown: str, limit: int | None = None) -> TextFile:
    """Read a text file (at most ``limit`` bytes); refuses binary files."""
    data, size = read_bytes(path, shown, limit)
    if is_binary(data):
        raise ToolInputError(
            f"{shown} is a binary file ({size:,} bytes); only text files can be read or edited"
        )
    text, encoding = decode(data)
    return TextFile(path, text, encoding, detect_newline(text), size)


def iter_lines(path: Path, shown: str) -> Iterator[str]:
    """The lines of a text file with their endings, streamed (for huge files)."""
    head, _ = read_bytes(path, shown, BINARY_SNIFF_BYTES)
    if is_binary(head):
        raise ToolInputError(f"{shown} is a binary file; only text files can be read")
    _, encoding = decode(head)
    try:
        with open(
            path, encoding="latin-1" if encoding == "latin-1" else "utf-8-sig", errors="replace", newline=""
        ) as handle:
            yield from handle
    except OSError as exc:
        raise _os_error(path, shown, exc) from None


def write_text(path: Path, data: bytes) -> None:
    """Replace the file atomically (its permissions are kept); parents are created."""
    try:
        atomic_write_bytes(path, data)
    except OSError as exc:
        raise ToolInputError(f"cannot write {path}: {exc.strerror or exc}") from None


def unified_diff(old: str, new: str, shown: str) -> str:
    """A unified diff of the change for the approval dialog (``--- a/path`` / ``+++ b/path``)."""
    old_lines = to_newline(old, "\n").splitlines(keepends=True)
    new_lines = to_newline(new, "\n").splitlines(keepends=True)
    fromfile = f"a/{shown}" if old_lines or old else "/dev/null"
    lines = difflib.unified_diff(old_lines, new_lines, fromfile, f"b/{shown}")
    text = "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
    if not text:
        return f"(no change to {shown})"
    if len(text) > DIFF_LIMIT_CHARS:
        text = text[:DIFF_LIMIT_CHARS] + f"\n... (diff cut at {DIFF_LIMIT_CHARS:,} characters)\n"
    return text
