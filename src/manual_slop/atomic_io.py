"""Crash-safe file writes and the "move aside, never overwrite" rule for bad files.

Every persistent file the app owns is written through :func:`atomic_write_bytes`:
the new content goes to a temporary file in the same folder, is flushed and
fsynced, and then replaces the target with one ``os.replace``. A crash at any
instant leaves either the complete old file or the complete new one.

A file that cannot be parsed is renamed to ``NAME.corrupt-<timestamp>`` by
:func:`move_aside` so the user's data survives and the app can start fresh.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path

__all__ = ["atomic_write_bytes", "atomic_write_text", "move_aside", "sweep_stale_temps"]

_TEMP_SUFFIX = ".tmp"


def _temp_prefix(target: Path) -> str:
    return f".{target.name}."


def _fsync_directory(directory: Path) -> None:
    # Makes the rename itself durable; not supported on every platform (Windows).
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(
    path: str | os.PathLike[str], data: bytes, *, mode: int | None = None, durable: bool = True
) -> None:
    """Replace ``path`` with ``data`` so that readers never see a partial file.

    The new file gets ``mode`` when given, else the permissions of the file it replaces
    (``0600`` when there is none: the temporary file's own). ``durable=False`` skips the two
    ``fsync`` calls (1-30 ms on a busy disk): for a file that means nothing after a crash of
    the machine, such as a running server's port or token file.
    """
    target = Path(path)
    directory = target.parent
    directory.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(prefix=_temp_prefix(target), suffix=_TEMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temp_name, mode)
        else:
            with contextlib.suppress(OSError):
                # Keep the permissions of the file being replaced (credentials stay private).
                os.chmod(temp_name, target.stat().st_mode & 0o7777)
        os.replace(temp_name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    if durable:
        _fsync_directory(directory)


def atomic_write_text(
    path: str | os.PathLike[str],
    text: str,
    encoding: str = "utf-8",
    *,
    mode: int | None = None,
    durable: bool = True,
) -> None:
    """Text flavour of :func:`atomic_write_bytes` (newlines are written as given)."""
    atomic_write_bytes(path, text.encode(encoding), mode=mode, durable=durable)


def move_aside(path: str | os.PathLike[str], reason: str = "corrupt") -> Path:
    """Rename ``path`` to ``NAME.<reason>-<YYYYmmdd-HHMMSS>`` (never clobbering) and return it."""
    source = Path(path)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidate = source.with_name(f"{source.name}.{reason}-{stamp}")
    counter = 1
    while candidate.exists():
        counter += 1
        candidate = source.with_name(f"{source.name}.{reason}-{stamp}-{counter}")
    os.replace(source, candidate)
    return candidate


def sweep_stale_temps(path: str | os.PathLike[str], older_than_s: float = 60.0) -> list[Path]:
    """Delete temporary files a killed writer left next to ``path``; return what was removed.

    Only files older than ``older_than_s`` are touched so a concurrent writer's
    temp file is never pulled from under it.
    """
    target = Path(path)
    removed: list[Path] = []
    if not target.parent.is_dir():
        return removed
    now = time.time()
    for candidate in target.parent.glob(f"{_temp_prefix(target)}*{_TEMP_SUFFIX}"):
        try:
            if now - candidate.stat().st_mtime >= older_than_s:
                candidate.unlink()
                removed.append(candidate)
        except OSError:
            continue
    return removed
