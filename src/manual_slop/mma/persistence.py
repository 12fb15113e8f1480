"""Tracks on disk: ``conductor/tracks/<track_id>/`` under the project's base dir.

=================  ===============================================================
``spec.md``        the track's goal (title, priority, description)
``plan.md``        a checkbox list of its tickets, regenerated on every save
``plan.mmd``       the ticket DAG as a Mermaid flowchart coloured by status (:mod:`.mermaid`)
``metadata.json``  the track record without tickets (status, timestamps, replans)
``state.toml``     every ticket, with its status, retries, block reason and result
=================  ===============================================================

Every file is written atomically, ``state.toml`` last, through the app's redactor when one is
given (a worker's answer may quote a key): a reader that finds a complete ``state.toml`` has a
complete track. Loading a track puts tickets that
were ``in_progress`` back to ``todo`` (their worker died with the app). A folder
whose files do not parse is reported (and its ``metadata.json`` or ``state.toml`` moved aside as
``<name>.corrupt-<ts>``), never overwritten silently.
"""

from __future__ import annotations

import json
import os
import threading
import time
import tomllib
from pathlib import Path

from manual_slop.atomic_io import atomic_write_text, move_aside
from manual_slop.config import dump_toml
from manual_slop.mma.errors import PersistenceError, TicketError
from manual_slop.mma.mermaid import track_to_mermaid
from manual_slop.mma.models import Ticket, TicketStatus, Track
from manual_slop.redaction import Redactor

__all__ = ["TRACKS_DIR", "TrackStore", "render_plan"]

TRACKS_DIR = Path("conductor") / "tracks"
_BOXES = {
    TicketStatus.COMPLETED: "[x]",
    TicketStatus.IN_PROGRESS: "[~]",
    TicketStatus.BLOCKED: "[!]",
    TicketStatus.KILLED: "[-]",
    TicketStatus.TODO: "[ ]",
}


def render_plan(track: Track) -> str:
    """``plan.md``: one checkbox line per ticket in list order, with status details."""
    lines = [f"# Plan: {track.title}", "", f"Status: {track.status}", ""]
    for ticket in track.tickets:
        line = f"- {_BOXES[ticket.status]} **{ticket.id}** {ticket.description.splitlines()[0]}"
        details = []
        if ticket.depends_on:
            details.append("after " + ", ".join(ticket.depends_on))
        if ticket.status is not TicketStatus.TODO:
            details.append(str(ticket.status))
        if ticket.blocked_reason:
            details.append(ticket.blocked_reason.splitlines()[0])
        if details:
            line += f" ({'; '.join(details)})"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _render_spec(track: Track) -> str:
    return f"# {track.title}\n\nPriority: {track.priority}\n\n{track.description.strip()}\n"


ARCHIVE_DIR = "archived"  # under conductor/tracks/; never read as a track


class TrackStore:
    """Reads and writes track folders; one lock serializes writers in this process."""

    def __init__(self, base_dir: Path, redactor: Redactor | None = None) -> None:
        self.base_dir = base_dir
        self.root = base_dir / TRACKS_DIR
        self.redactor = redactor
        self._lock = threading.Lock()

    def folder(self, track_id: str) -> Path:
        return self.root / track_id

    def save(self, track: Track) -> None:
        """Write all five files atomically; PersistenceError names the file that failed."""
        folder = self.folder(track.id)
        metadata = track.to_dict()
        tickets = metadata.pop("tickets")
        state = {"track_id": track.id, "tickets": tickets}
        redact = self.redactor.redact if self.redactor is not None else str
        if self.redactor is not None:
            metadata, state = self.redactor.redact_obj(metadata), self.redactor.redact_obj(state)
        with self._lock:
            for name, text in (
                ("spec.md", redact(_render_spec(track))),
                ("plan.md", redact(render_plan(track))),
                ("plan.mmd", track_to_mermaid(track, redact)),
                ("metadata.json", json.dumps(metadata, indent=2) + "\n"),
                ("state.toml", dump_toml(state).decode("utf-8")),
            ):
                try:
                    atomic_write_text(folder / name, text)
                except OSError as exc:
                    raise PersistenceError(f"cannot write {folder / name}: {exc}") from exc

    def load(self, track_id: str) -> Track:
        """Read a track; in-progress tickets come back as ``todo``."""
        folder = self.folder(track_id)
        meta_path, state_path = folder / "metadata.json", folder / "state.toml"
        try:
            metadata = json.loads(meta_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise PersistenceError(f"no track {track_id!r} (missing {meta_path})") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            # moved aside like state.toml: a track saved later under this id must not overwrite it
            moved = move_aside(meta_path, "corrupt")
            raise PersistenceError(
                f"{meta_path} cannot be parsed ({exc}); moved aside to {moved.name}"
            ) from exc
        except OSError as exc:
            raise PersistenceError(f"{meta_path} cannot be read: {exc}") from exc
        try:
            state = tomllib.loads(state_path.read_text(encoding="utf-8")) if state_path.exists() else {}
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            moved = move_aside(state_path, "corrupt")
            raise PersistenceError(
                f"{state_path} cannot be parsed ({exc}); moved aside to {moved.name}"
            ) from exc
        if not isinstance(metadata, dict):
            raise PersistenceError(f"{meta_path}: expected a JSON object")
        metadata["tickets"] = state.get("tickets", [])
        try:
            track = Track.from_dict(metadata, where=str(folder.name))
        except TicketError as exc:
            raise PersistenceError(f"{folder}: {exc}") from exc
        if track.id != track_id:
            raise PersistenceError(f"{meta_path}: id {track.id!r} does not match its folder {track_id!r}")
        for ticket in track.tickets:
            _return_to_todo(ticket)
        return track

    def archive(self, track_id: str) -> Path:
        """Move a track's folder aside to ``archived/<id>-<ts>`` (nothing is deleted); returns where."""
        folder = self.folder(track_id)
        if not (folder / "metadata.json").is_file():
            raise PersistenceError(f"no track {track_id!r} in {self.root}")
        target = self.root / ARCHIVE_DIR / f"{track_id}-{time.strftime('%Y%m%d-%H%M%S')}"
        counter = 1
        while target.exists():
            counter += 1
            target = target.with_name(f"{target.name.rsplit('~', 1)[0]}~{counter}")
        with self._lock:
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(folder, target)
            except OSError as exc:
                raise PersistenceError(f"cannot move {folder} to {target}: {exc}") from exc
        return target

    def track_ids(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if (p / "metadata.json").is_file())

    def load_all(self) -> tuple[list[Track], list[str]]:
        """Every readable track (oldest first) and a message per folder that could not be read."""
        tracks: list[Track] = []
        problems: list[str] = []
        for track_id in self.track_ids():
            try:
                tracks.append(self.load(track_id))
            except PersistenceError as exc:
                problems.append(str(exc))
        tracks.sort(key=lambda t: (t.created_at, t.id))
        return tracks, problems


def _return_to_todo(ticket: Ticket) -> None:
    if ticket.status is TicketStatus.IN_PROGRESS:
        ticket.status = TicketStatus.TODO
        ticket.assigned_to = ""
        ticket.started_at = 0.0
