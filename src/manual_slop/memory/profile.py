"""The passive profile: short statements of the user's preferences, learned and user-edited.

After a completed exchange (at most once per ``memory.profile_interval_s``) a sub-call reads
the exchange and the current profile and answers with new preference statements, one per
line, or ``NONE``. Lines are short, deduplicated and capped in number; the user can add,
edit or delete any line and switch the profile off (``memory.profile``). The profile goes
into every system prompt while it is on.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from manual_slop.memory.store import EventStore

__all__ = [
    "LEARN_PROMPT",
    "MAX_LINES",
    "MAX_LINE_CHARS",
    "Profile",
    "ProfileError",
    "ProfileLine",
    "parse_learned",
]

MAX_LINES = 40
MAX_LINE_CHARS = 300
LEARN_PROMPT = (
    "You maintain a short profile of the user's stable preferences for a coding assistant "
    "(languages, style, tools, how they like answers). From the exchange below, list NEW preferences "
    "the user showed that the current profile lacks, one short statement per line starting with "
    "'- '. Only durable preferences, never task details or secrets. If there is nothing new, answer NONE."
)


class ProfileError(ValueError):
    """A profile line the store refuses; the message names the problem."""


@dataclass(frozen=True, slots=True)
class ProfileLine:
    id: int
    content: str
    source: str  # "learned" | "user"
    ts: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check(line: str) -> str:
    if not isinstance(line, str) or not line.strip():
        raise ProfileError("a profile line needs some text")
    line = " ".join(line.split())
    if len(line) > MAX_LINE_CHARS:
        raise ProfileError(f"a profile line is at most {MAX_LINE_CHARS} characters (got {len(line)})")
    return line


def parse_learned(answer: str) -> list[str]:
    """The statements of a learning sub-call's answer (``- …`` lines); none for ``NONE``."""
    lines: list[str] = []
    for raw in answer.splitlines():
        text = raw.strip()
        if text.upper().strip(".") == "NONE":
            return []
        if text.startswith(("- ", "* ")):
            text = text[2:].strip()
            if 3 <= len(text) <= MAX_LINE_CHARS:
                lines.append(text)
    return lines[:5]


class Profile:
    """The profile table of a project's memory store."""

    def __init__(self, store: EventStore) -> None:
        self._store = store

    def lines(self) -> list[ProfileLine]:
        rows = self._store.execute("SELECT id, content, source, ts FROM profile ORDER BY id").fetchall()
        return [ProfileLine(*row) for row in rows]

    def add(self, content: str, source: str = "user") -> ProfileLine | None:
        """Add a line (None when the profile already says it, case-insensitively)."""
        content = self._store.redact(_check(content))
        existing = {line.content.casefold() for line in self.lines()}
        if content.casefold() in existing:
            return None
        if len(existing) >= MAX_LINES:
            if source == "user":
                raise ProfileError(f"the profile holds at most {MAX_LINES} lines; delete one first")
            return None  # learned lines never push out what is there
        now = self._store.now()
        cursor = self._store.execute(
            "INSERT INTO profile (content, source, ts) VALUES (?, ?, ?)", (content, source, now)
        )
        self._store.changed("profile")
        return ProfileLine(int(cursor.lastrowid or 0), content, source, now)

    def replace(self, contents: list[str]) -> list[ProfileLine]:
        """The user's whole profile as given (PUT): lines kept in order, duplicates dropped."""
        if not isinstance(contents, list) or len(contents) > MAX_LINES:
            raise ProfileError(f"the profile is a list of at most {MAX_LINES} lines")
        kept: dict[str, str] = {}  # casefolded -> the line: duplicates dropped as add() drops them
        for content in contents:
            line = self._store.redact(_check(content))
            kept.setdefault(line.casefold(), line)
        now = self._store.now()
        with self._store.transaction() as db:  # nobody sees the profile half replaced
            db.execute("DELETE FROM profile")
            db.executemany(
                "INSERT INTO profile (content, source, ts) VALUES (?, 'user', ?)",
                [(c, now) for c in kept.values()],
            )
        self._store.changed("profile")
        return self.lines()

    def edit(self, line_id: int, content: str) -> ProfileLine:
        content = self._store.redact(_check(content))
        if (
            self._store.execute(
                "UPDATE profile SET content = ?, source = 'user' WHERE id = ?", (content, int(line_id))
            ).rowcount
            == 0
        ):
            raise KeyError(f"no profile line {line_id}")
        self._store.changed("profile")
        return next(line for line in self.lines() if line.id == int(line_id))

    def delete(self, line_id: int) -> None:
        if self._store.execute("DELETE FROM profile WHERE id = ?", (int(line_id),)).rowcount == 0:
            raise KeyError(f"no profile line {line_id}")
        self._store.changed("profile")
