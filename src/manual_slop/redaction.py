"""One redactor for every output path: the secrets the app knows never leave it.

The app knows three kinds of secret (:func:`known_secrets`):

- every string value in ``credentials.toml``, whatever its table or key;
- the provider key variables (``ANTHROPIC_API_KEY`` …) and every other environment
  variable whose name says it holds a credential (``*_TOKEN``, ``*SECRET*``, …);
- the Hook API's bearer token.

:meth:`Redactor.redact` replaces each of them with ``[REDACTED:<name>]``. A secret of at
least :data:`PIECE_CHARS` characters is also caught in pieces: any run of that many
characters copied from it counts (a model or a tool that prints half a key still prints
a key). The controller owns one redactor and runs every outgoing text through it: tool
results, the context sent to providers, comms and tool logs, discussions, events, Hook
API replies and the session log files (see ``docs/guide_hook_api.md#security``).

Matching is cheap for text that holds no secret: a regular expression first finds the
runs of characters that secrets are made of, and only runs of :data:`PIECE_CHARS` or
more are looked at piece by piece.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = [
    "CREDENTIAL_NAME",
    "MIN_SECRET_CHARS",
    "PIECE_CHARS",
    "NamedSecret",
    "Redactor",
    "environment_secrets",
    "known_secrets",
    "redaction_mark",
]

MIN_SECRET_CHARS = 8  # shorter values ("true", "1234") would mangle ordinary text
PIECE_CHARS = 12
# Environment variable names that hold credentials (shared with the shell's scrubbed environment).
CREDENTIAL_NAME = re.compile(r"API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|ACCESS_KEY|PRIVATE_KEY", re.I)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class NamedSecret:
    """A secret value and the name its redaction mark shows (never the value)."""

    name: str
    value: str


def redaction_mark(name: str) -> str:
    """What replaces a secret called ``name``."""
    return f"[REDACTED:{name}]"


@dataclass(frozen=True, slots=True)
class _Matcher:
    """An immutable snapshot of what to look for (swapped whole when secrets are added)."""

    wholes: tuple[tuple[str, str], ...]  # (needle, mark), longest needle first
    pieces: Mapping[str, str]  # every PIECE_CHARS-long slice of a long secret -> mark
    runs: re.Pattern[str] | None  # runs of secret characters at least PIECE_CHARS long
    # a secret holds a character JSON escapes (quote, backslash, control) or one beyond ASCII:
    # a value's JSON text may then show it (or a piece of it, or its \u-escaped form) escaped,
    # so :meth:`finds` on that text could miss it
    json_escapes: bool = False

    @property
    def longest(self) -> int:
        """Characters of the longest needle: no match reaches further back from where it ends."""
        return len(self.wholes[0][0])

    @classmethod
    def build(cls, secrets: Iterable[NamedSecret]) -> _Matcher | None:
        wholes: dict[str, str] = {}
        pieces: dict[str, str] = {}
        alphabet: set[str] = set()
        escapes = False
        for secret in secrets:
            mark = redaction_mark(secret.name)
            value = secret.value
            # (a non-ASCII secret: its \u-escaped form, doubled backslashes in JSON text, too)
            escapes = escapes or _JSON_ESCAPED.search(value) is not None or not value.isascii()
            for needle in {value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}:
                wholes.setdefault(needle, mark)
            if len(value) >= PIECE_CHARS:
                alphabet.update(value)
                for start in range(len(value) - PIECE_CHARS + 1):
                    pieces.setdefault(value[start : start + PIECE_CHARS], mark)
        if not wholes:
            return None
        ordered = tuple(sorted(wholes.items(), key=lambda item: len(item[0]), reverse=True))
        runs = None
        if alphabet:
            members = "".join(re.escape(ch) for ch in sorted(alphabet))
            runs = re.compile(f"[{members}]{{{PIECE_CHARS},}}")
        return cls(ordered, pieces, runs, escapes)

    def finds(self, text: str) -> bool:
        """True when :meth:`redact` would change ``text`` (a secret or a piece of one is in it)."""
        if any(needle in text for needle, _ in self.wholes):
            return True
        return self.runs is not None and any(self._spans(run.group()) for run in self.runs.finditer(text))

    def redact(self, text: str) -> str:
        for needle, mark in self.wholes:  # whole secrets first: each gets its own name
            if needle in text:
                text = text.replace(needle, mark)
        if self.runs is not None:
            text = self._redact_pieces(text)
        return text

    def _redact_pieces(self, text: str) -> str:
        out: list[str] = []
        last = 0
        for run in self.runs.finditer(text):  # type: ignore[union-attr]
            offset = run.start()
            for start, end, mark in self._spans(run.group()):
                out.append(text[last : offset + start])
                out.append(mark)
                last = offset + end
        if not out:
            return text
        out.append(text[last:])
        return "".join(out)

    def _spans(self, run: str) -> list[tuple[int, int, str]]:
        """Merged ``(start, end, mark)`` spans of ``run`` covered by pieces of a secret."""
        spans: list[tuple[int, int, str]] = []
        pieces = self.pieces
        for start in range(len(run) - PIECE_CHARS + 1):
            mark = pieces.get(run[start : start + PIECE_CHARS])
            if mark is None:
                continue
            end = start + PIECE_CHARS
            if spans and start <= spans[-1][1]:
                spans[-1] = (spans[-1][0], end, spans[-1][2])
            else:
                spans.append((start, end, mark))
        return spans


class Redactor:
    """Replaces known secrets (whole, JSON-escaped, or a piece of 12+ characters) with
    ``[REDACTED:<name>]``. Safe to use from any thread; :meth:`add` may run at any time."""

    def __init__(self, secrets: Iterable[NamedSecret | str] = ()) -> None:
        self._lock = threading.Lock()
        self._secrets: dict[str, NamedSecret] = {}
        self._matcher: _Matcher | None = None
        self.add(secrets)

    def add(self, secrets: Iterable[NamedSecret | str]) -> None:
        """Learn more secrets (a bare string is named ``secret``); values under 8 characters are ignored."""
        with self._lock:
            for secret in secrets:
                named = secret if isinstance(secret, NamedSecret) else NamedSecret("secret", str(secret))
                if len(named.value) >= MIN_SECRET_CHARS and named.value not in self._secrets:
                    self._secrets[named.value] = named
            self._matcher = _Matcher.build(self._secrets.values())

    @property
    def names(self) -> list[str]:
        """The names of the known secrets (sorted, without duplicates)."""
        return sorted({s.name for s in self._secrets.values()})

    def __bool__(self) -> bool:
        return self._matcher is not None

    def redact(self, text: str) -> str:
        """``text`` with every known secret, and every 12-character piece of one, replaced."""
        matcher = self._matcher  # one read: a concurrent add() swaps the whole snapshot
        if matcher is None or not text:
            return text
        return matcher.redact(text)

    def redact_appended(self, redacted: str, more: str) -> str:
        """``redacted + more`` redacted, when ``redacted`` already is: only the end of it that a
        secret could span into ``more`` is looked at again (a stream costs its length, not its
        length squared)."""
        matcher = self._matcher
        if matcher is None:
            return redacted + more
        keep = max(0, len(redacted) - matcher.longest)
        return redacted[:keep] + matcher.redact(redacted[keep:] + more)

    def redact_obj(self, value: T, *, copy: bool = True) -> T:
        """A copy of a JSON-like value (dicts, lists, tuples, strings) with every string redacted.

        ``copy=False``: ``value`` itself when it holds no secret (for a caller that copies it
        anyway, e.g. into a :func:`~manual_slop.events.json_snapshot`)."""
        matcher = self._matcher
        if matcher is None:
            return value
        if _holds_none(value, matcher):
            return _copy(value) if copy else value
        return _walk(value, matcher.redact)  # type: ignore[no-any-return]


# Characters json.dumps(ensure_ascii=False) writes escaped: a secret holding one may be missed
# in a value's JSON text, so such secrets always take the walk (as do non-ASCII ones: a value
# may hold their \u-escaped form, whose backslashes the JSON text doubles).
_JSON_ESCAPED = re.compile(r'["\\\x00-\x1f]')


def _holds_none(value: Any, matcher: _Matcher) -> bool:
    """True when no string in ``value`` holds a secret or a piece of one, decided on the JSON
    text of the whole value: one C call and one scan instead of a Python call per string (an
    MMA snapshot of 200 tickets holds some 2,000 strings; the walk took ~3 ms of a worker's
    GIL, the text ~0.3 ms). A secret in a string shows verbatim in the text (no secret holds a
    character JSON escapes, else this says False); a match that spans two strings or a number
    only sends the value the slow way. Values JSON cannot write take the walk as well."""
    if matcher.json_escapes or isinstance(value, str):
        return False
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return False
    return not matcher.finds(text)


def _copy(value: Any) -> Any:
    """What :func:`_walk` returns for a value whose strings need no redaction (the same copy)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_copy(v) for v in value)
    return value


def _walk(value: Any, redact: Any) -> Any:
    if isinstance(value, str):
        return redact(value) if value else value
    if isinstance(value, dict):
        return {(redact(k) if isinstance(k, str) else k): _walk(v, redact) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, redact) for v in value]
    if isinstance(value, tuple):
        return tuple(_walk(v, redact) for v in value)
    return value


# =========================================================================================
# what the app knows
# =========================================================================================
def environment_secrets(
    environ: Mapping[str, str], provider_variables: Iterable[str] = ()
) -> list[NamedSecret]:
    """Values of the provider key variables and of every variable named like a credential.

    A value that is an existing path (``GOOGLE_APPLICATION_CREDENTIALS=/home/…/creds.json``)
    names where a secret lives; it is not one, and redacting it would mangle file listings.
    """
    wanted = set(provider_variables)
    found: list[NamedSecret] = []
    for name, value in sorted(environ.items()):
        if not value or (name not in wanted and not CREDENTIAL_NAME.search(name)):
            continue
        if name not in wanted and _is_existing_path(value):
            continue
        found.append(NamedSecret(name, value))
    return found


def _is_existing_path(value: str) -> bool:
    if os.sep not in value and "/" not in value:
        return False
    try:
        return os.path.exists(value)
    except (OSError, ValueError):
        return False


def known_secrets(
    file_secrets: Iterable[tuple[str, str]],
    environ: Mapping[str, str],
    provider_variables: Iterable[str],
    hook_token: str = "",
) -> list[NamedSecret]:
    """Everything the redactor of an app must know: ``credentials.toml`` values (as
    ``(dotted key, value)``), credential environment variables, the hook token."""
    secrets = [NamedSecret(f"credentials.{key}", value) for key, value in file_secrets]
    secrets += environment_secrets(environ, provider_variables)
    if hook_token:
        secrets.append(NamedSecret("hook_token", hook_token))
    return secrets
