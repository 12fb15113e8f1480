"""Plumbing shared by ``sloppy`` and its commands: the usage error, the parser that raises
it, the checks of numbers and ``.toml`` paths, the one way to talk on stderr, and the
two-stage handling of Ctrl+C."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from manual_slop.config import TomlFile
from manual_slop.schema import Schema

if TYPE_CHECKING:
    import logging

__all__ = [
    "PROG",
    "ArgParser",
    "RedactingFilter",
    "UsageError",
    "check_toml_file",
    "int_in_range",
    "log_to_stderr",
    "say",
    "two_stage_interrupts",
]

PROG = "sloppy"
MAX_TOML_BYTES = 16_000_000  # far above any real settings file; /dev/zero is not one


class UsageError(Exception):
    """Bad command-line input; reported in one line, exit code 2."""


class ArgParser(argparse.ArgumentParser):
    """An argument parser whose errors are :class:`UsageError` (argparse would exit itself)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message)


def int_in_range(low: int, high: int, expected: str) -> Callable[[str], int]:
    """An argparse ``type``: a whole number from ``low`` to ``high``; the error says
    "expected {expected}, got ..."."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {value}")
        return value

    return parse


def check_toml_file(path: Path, flag: str, schema: Schema | None = None) -> Path:
    """A .toml file we will read if it exists and write on exit: it or its folder must be
    usable, and an existing one must not belong to another program (``schema``)."""
    path = path.expanduser()
    if path.suffix.lower() != ".toml" and not path.is_dir():
        raise UsageError(
            f"{flag} {path}: expected a .toml file, got {path.suffix or 'a name without extension'}; "
            "the app neither reads nor changes it"
        )
    if not path.exists():
        parent = path.parent if str(path.parent) else Path(".")
        if not parent.is_dir():
            raise UsageError(f"{flag} {path}: folder {parent} does not exist")
        if not os.access(parent, os.W_OK):
            raise UsageError(f"{flag} {path}: folder {parent} is not writable, so the file cannot be created")
        return path
    if path.is_dir():
        raise UsageError(f"{flag} {path}: is a directory, expected a TOML file")
    info = path.stat()  # (follows a symlink) a FIFO or a device would block or never end
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{flag} {path}: not a regular file (a pipe, device or socket)")
    if info.st_size > MAX_TOML_BYTES:
        raise UsageError(
            f"{flag} {path}: {info.st_size:,} bytes; a settings file is at most {MAX_TOML_BYTES:,}"
        )
    foreign = TomlFile(path, schema).foreign_tables() if schema is not None else []
    if foreign:
        raise UsageError(
            f"{flag} {path}: not a Manual Slop file (it has [{'], ['.join(foreign[:4])}]); "
            "the app leaves it as it is"
        )
    try:
        with path.open("rb"):
            pass
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot be read ({exc.strerror})") from None
    return path


def say(message: str) -> None:
    """One line on stderr, prefixed with the program's name."""
    print(f"{PROG}: {message}", file=sys.stderr, flush=True)


class RedactingFilter:
    """Passes every record's message through the app's redactor (a log line is an output path).
    A logging filter by its ``filter`` method (logging accepts any such object), so this module
    does not import logging: ``sloppy --headless`` imports it once its Hook API listens."""

    def __init__(self, redact: Callable[[str], str]) -> None:
        self._redact = redact

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = self._redact(record.getMessage())
        record.args = None
        return True


def log_to_stderr(redact: Callable[[str], str]) -> None:
    """Libraries' warnings and errors as ``sloppy: LEVEL: message`` on stderr, redacted."""
    import logging

    logging.basicConfig(level=logging.WARNING, format=f"{PROG}: %(levelname)s: %(message)s")
    for handler in logging.getLogger().handlers:
        handler.addFilter(RedactingFilter(redact))


@contextlib.contextmanager
def two_stage_interrupts(on_first: Callable[[int], None], at_once: str) -> Iterator[list[int]]:
    """While inside: the first SIGINT/SIGTERM calls ``on_first(signum)`` (and is recorded in the
    yielded list) so the program can stop cleanly; a second one says
    ``second interrupt: {at_once}`` and exits at once with 128 + the signal's number. The
    previous handlers come back on leaving."""
    received: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        if received:
            os.write(2, f"{PROG}: second interrupt: {at_once}\n".encode())
            os._exit(128 + signum)
        received.append(signum)
        on_first(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
