"""DiscussionService: discussion operations on the app state, each an undoable edit.

Entry and discussion operations apply at once on the main thread. Two operations
wait on something slow and run as background jobs whose result comes back as a task:

- **Update Commit** reads ``git rev-parse HEAD`` in the base dir (``commit_stamped``);
- **Compress** asks the active provider, tools disabled, for a summary of the
  discussion (``discussion_compressed``). The entries that were summarized are
  replaced by one summary entry only if they did not change meanwhile; the originals
  are archived in the session's comms log, and the step can be undone.

Operations default to the active discussion. Errors are :class:`ContextError`
subclasses whose message names the problem.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

# the module itself, not through the package: the package's face imports this module
import manual_slop.context.discussions as ops
from manual_slop.context.errors import DiscussionError, UnknownDiscussion
from manual_slop.context.gitstamp import read_head
from manual_slop.context.jobs import JobHost, run_job
from manual_slop.context.subagent import TextBackend, compress_discussion

if TYPE_CHECKING:
    from manual_slop.redaction import Redactor
    from manual_slop.session_log import SessionLog
    from manual_slop.state import AppState

__all__ = ["DiscussionHost", "DiscussionService", "UndoableEdits"]


class DiscussionHost(JobHost, Protocol):
    """What discussion operations need from the app (the controller)."""

    state: AppState
    redactor: Redactor  # no known secret is written to a discussion
    session_log: SessionLog  # Update Commit's git call is logged

    @property
    def backend(self) -> TextBackend | None: ...

    def base_dir(self) -> Path: ...

    def ai_settings(self) -> dict[str, Any]: ...

    def add_comms_entry(self, entry: Mapping[str, Any]) -> dict[str, Any]: ...

    def notify(self, level: str, message: str) -> None: ...

    def publish(self, event_type: str, payload: Mapping[str, Any] | None = None) -> int: ...


class UndoableEdits(Protocol):
    """How every operation records itself for undo (:meth:`.service.ContextService.edit`)."""

    def edit(
        self, label: str, discussions: Iterable[str] = (), attrs: Iterable[str] = ()
    ) -> AbstractContextManager[None]: ...


class DiscussionService:
    """Discussions, entries, takes, commit stamps and compression (main thread)."""

    def __init__(self, ctrl: DiscussionHost, context: UndoableEdits) -> None:
        self._ctrl = ctrl
        self._context = context
        self._compressing: dict[str, list[dict[str, Any]]] = {}  # name -> the entries being summarized
        self._stamping: set[str] = set()
        # request id -> (discussion, index, content) of its user entry, until its screenshots are known
        self._awaiting_images: dict[str, tuple[str, int, str]] = {}

    @property
    def state(self) -> AppState:
        return self._ctrl.state

    @property
    def _all(self) -> dict[str, Any]:
        return self.state.discussions

    def _name(self, name: str | None) -> str:
        chosen = name or self.state.active_discussion
        if chosen not in self._all:
            known = ", ".join(sorted(self._all)) or "none"
            raise UnknownDiscussion(f"no discussion named {chosen!r}; discussions: {known}")
        return chosen

    def _role(self, role: str | None, index: int = 0) -> str:
        roles = self.state.discussion_roles
        if role is None:
            return roles[index] if len(roles) > index else ("User", "AI")[min(index, 1)]
        if roles and role not in roles:
            raise DiscussionError(f"unknown role {role!r}; roles: {', '.join(roles)}")
        if not role.strip():
            raise DiscussionError("a role must not be empty")
        return role

    # =====================================================================================
    # loading
    # =====================================================================================
    def normalize(self) -> list[str]:
        problems = ops.normalize(self._all)
        self.ensure_active()
        return problems

    def ensure_active(self) -> None:
        """Keep the active discussion pointing at one that exists (``main`` when none do)."""
        if self.state.active_discussion in self._all:
            return
        if not self._all:
            self._all[ops.DEFAULT_DISCUSSION] = {"history": []}
        self.state.active_discussion = sorted(self._all)[0]

    # =====================================================================================
    # entries
    # =====================================================================================
    def append(
        self,
        role: str,
        content: str,
        discussion: str | None = None,
        ts: str | None = None,
        label: str = "add entry",
    ) -> int:
        """Append an entry (auto-add, history adds from other threads); creates a missing discussion.
        The content passes the app's redactor: no known secret is written to a discussion."""
        name = discussion or self.state.active_discussion
        content = self._ctrl.redactor.redact(content)
        with self._context.edit(label, discussions=[name]):
            self._all.setdefault(name, {"history": []})
            return ops.add_entry(self._all, name, ops.make_entry(role, content, ts))

    def expect_images(self, request_id: str, index: int, discussion: str | None = None) -> None:
        """The user entry at ``index`` was sent by ``request_id``: note the screenshots that
        request reads (:meth:`note_images`, when its context is compiled)."""
        name = discussion or self.state.active_discussion
        history = self._all.get(name, {}).get("history", [])
        if 0 <= index < len(history):
            self._awaiting_images[request_id] = (name, index, str(history[index].get("content", "")))
            while len(self._awaiting_images) > 16:  # requests that never compiled a context
                self._awaiting_images.pop(next(iter(self._awaiting_images)))

    def note_images(self, request_id: str, names: list[str]) -> None:
        """Record ``names`` (the screenshots read for the request) on its user entry as
        ``images``; the discussion shows their thumbnails. An entry edited or moved since is
        left alone."""
        where = self._awaiting_images.pop(request_id, None)
        if where is None or not names:
            return
        name, index, content = where
        history = self._all.get(name, {}).get("history", [])
        if index < len(history) and history[index].get("content") == content:
            with self._context.edit("send: screenshots", discussions=[name]):
                history[index] = {**history[index], "images": list(names)}

    def add(self, content: str, role: str | None = None, discussion: str | None = None) -> int:
        name = self._name(discussion)
        entry = ops.make_entry(self._role(role), content)
        with self._context.edit("add entry", discussions=[name]):
            return ops.add_entry(self._all, name, entry)

    def insert(
        self, index: int, content: str = "", role: str | None = None, discussion: str | None = None
    ) -> None:
        name = self._name(discussion)
        entry = ops.make_entry(self._role(role), content)
        with self._context.edit(f"insert entry {index}", discussions=[name]):
            ops.insert_entry(self._all, name, index, entry)

    def edit(self, index: int, content: str, discussion: str | None = None) -> None:
        name = self._name(discussion)
        with self._context.edit(f"edit entry {index}", discussions=[name]):
            ops.edit_entry(self._all, name, index, content)

    def delete_entry(self, index: int, discussion: str | None = None) -> None:
        name = self._name(discussion)
        with self._context.edit(f"delete entry {index}", discussions=[name]):
            ops.delete_entry(self._all, name, index)

    def set_role(self, index: int, role: str, discussion: str | None = None) -> None:
        name = self._name(discussion)
        checked = self._role(role)
        with self._context.edit(f"role of entry {index}: {checked}", discussions=[name]):
            ops.set_role(self._all, name, index, checked)

    def move(self, index: int, to: int, discussion: str | None = None) -> None:
        name = self._name(discussion)
        with self._context.edit(f"move entry {index} to {to}", discussions=[name]):
            ops.move_entry(self._all, name, index, to)

    def collapse(self, index: int, collapsed: bool | None = None, discussion: str | None = None) -> bool:
        name = self._name(discussion)
        with self._context.edit(f"collapse entry {index}", discussions=[name]):
            return ops.set_collapsed(self._all, name, index, collapsed)

    def collapse_all(self, collapsed: bool = True, discussion: str | None = None) -> None:
        name = self._name(discussion)
        with self._context.edit("collapse all" if collapsed else "expand all", discussions=[name]):
            ops.set_all_collapsed(self._all, name, collapsed)

    # =====================================================================================
    # discussions and takes
    # =====================================================================================
    def create(self, name: str | None = None) -> str:
        """Create a discussion (``discussion_<n>`` when unnamed) and switch to it."""
        if name is None:
            index = 1
            while f"discussion_{index}" in self._all:
                index += 1
            name = f"discussion_{index}"
        clean = ops.validate_name(name)
        with self._context.edit(f"new discussion {clean}", discussions=[clean], attrs=["active_discussion"]):
            ops.create(self._all, clean)
            self.state.active_discussion = clean
        return clean

    def switch(self, name: str) -> None:
        """Make ``name`` the active discussion (not an edit: undo does not switch back)."""
        self.state.active_discussion = self._name(name)

    def rename(self, new: str, old: str | None = None) -> str:
        """Rename a discussion (its takes follow); returns the new name."""
        name = self._name(old)
        plan = ops.rename_plan(self._all, name, new)
        touched = [*self._all, *plan.values()]  # take_of of every take may change
        with self._context.edit(f"rename {name} to {new}", discussions=touched, attrs=["active_discussion"]):
            ops.rename(self._all, name, new)
            active = self.state.active_discussion
            self.state.active_discussion = plan.get(active, active)
        return plan.get(name, name)

    def delete(self, name: str | None = None) -> None:
        """Delete a discussion; its takes become independent; the active one moves on."""
        target = self._name(name)
        affected = [target, *ops.takes_of(self._all, target), ops.DEFAULT_DISCUSSION]
        with self._context.edit(
            f"delete discussion {target}", discussions=affected, attrs=["active_discussion"]
        ):
            root = ops.root_of(self._all, target)
            ops.delete(self._all, target)
            if self.state.active_discussion == target:
                self.state.active_discussion = root if root != target else ""
            self.ensure_active()

    def takes(self, name: str | None = None) -> list[str]:
        """Takes of the discussion's main line."""
        return ops.takes_of(self._all, self._name(name))

    def branch(self, index: int | None = None, discussion: str | None = None) -> str:
        """Branch a take at entry ``index`` (default: the last) and switch to it."""
        name = self._name(discussion)
        history = ops.entries(self._all, name)
        at = len(history) - 1 if index is None else index
        take = ops.next_take_name(self._all, name)
        with self._context.edit(
            f"branch {take} at entry {at}", discussions=[take], attrs=["active_discussion"]
        ):
            ops.branch_take(self._all, name, at)
            self.state.active_discussion = take
        return take

    def promote(self, take: str | None = None) -> str:
        """Make a take the main line (the take then holds the former main line); switches to it."""
        name = self._name(take)
        root = ops.root_of(self._all, name)
        if root == name:
            raise DiscussionError(f"{name!r} is not a take; branch one first")
        with self._context.edit(f"promote {name}", discussions=[root, name], attrs=["active_discussion"]):
            ops.promote_take(self._all, name)
            self.state.active_discussion = root
        return root

    def commit_of(self, name: str | None = None) -> str:
        table = self._all.get(name or self.state.active_discussion, {})
        return str(table.get("git_commit", "")) if isinstance(table, dict) else ""

    # =====================================================================================
    # Update Commit (background: git)
    # =====================================================================================
    def update_commit(self, discussion: str | None = None) -> None:
        name = self._name(discussion)
        if name in self._stamping:
            raise DiscussionError(f"the commit of {name!r} is already being read")
        base = self._ctrl.base_dir()
        log = self._ctrl.session_log

        def work() -> dict[str, Any]:
            result = read_head(base)
            log.append_cli_call(
                {
                    "command": result.command,
                    "cwd": result.cwd,
                    "stdout": result.commit,
                    "latency_ms": result.latency_ms,
                }
            )
            return {"commit": result.commit}

        self._stamping.add(name)
        self.state.discussion_status = "reading git HEAD..."
        if not run_job(self._ctrl, "commit_stamped", work, discussion=name):
            self._stamping.discard(name)
            raise DiscussionError("the app is shutting down")

    def apply_commit(self, task: Mapping[str, Any]) -> None:
        """Task ``commit_stamped``."""
        name = str(task.get("discussion", ""))
        self._stamping.discard(name)
        self._idle()
        if task.get("error"):
            self._ctrl.notify("error", f"Update Commit: {task['error']}")
            return
        if name not in self._all:
            self._ctrl.notify("warning", f"Update Commit: discussion {name!r} no longer exists")
            return
        commit = str(task["commit"])
        with self._context.edit(f"update commit {commit[:10]}", discussions=[name]):
            ops.stamp_commit(self._all, name, commit)
        self._ctrl.publish("commit_stamped", {"discussion": name, "commit": commit})

    # =====================================================================================
    # Compress (background: the provider, tools disabled)
    # =====================================================================================
    def compress(self, discussion: str | None = None) -> None:
        name = self._name(discussion)
        backend = self._ctrl.backend
        if backend is None:
            raise DiscussionError("no AI provider is available yet (the AI client is not wired)")
        if name in self._compressing:
            raise DiscussionError(f"discussion {name!r} is already being compressed")
        snapshot = list(ops.entries(self._all, name))
        if len(snapshot) < 2:
            raise DiscussionError(f"discussion {name!r} has {len(snapshot)} entries; nothing to compress")
        text = ops.format_history(snapshot)
        settings = self._ctrl.ai_settings()

        def work() -> dict[str, Any]:
            return {"summary": compress_discussion(backend, text, settings)}

        self._compressing[name] = snapshot
        self.state.discussion_status = "compressing..."
        if not run_job(self._ctrl, "discussion_compressed", work, discussion=name):
            self._compressing.pop(name, None)
            raise DiscussionError("the app is shutting down")

    def apply_compression(self, task: Mapping[str, Any]) -> None:
        """Task ``discussion_compressed``: replace the summarized entries if they are unchanged."""
        name = str(task.get("discussion", ""))
        snapshot = self._compressing.pop(name, None)
        self._idle()
        if task.get("error"):
            self._ctrl.notify("error", f"Compress {name}: {task['error']}")
            return
        summary = str(task.get("summary", ""))
        current = self._all.get(name, {}).get("history") if isinstance(self._all.get(name), dict) else None
        if snapshot is None or current is None or current[: len(snapshot)] != snapshot:
            self._ctrl.add_comms_entry(
                {
                    "kind": "discussion_summary",
                    "direction": "internal",
                    "discussion": name,
                    "summary": summary,
                }
            )
            self._ctrl.notify(
                "warning",
                f"discussion {name!r} changed while it was being compressed; nothing was replaced "
                "(the summary is in the comms log)",
            )
            return
        self._ctrl.add_comms_entry(
            {
                "kind": "discussion_archive",
                "direction": "internal",
                "discussion": name,
                "entries": [dict(e) for e in snapshot],
                "summary": summary,
            }
        )
        role = "System" if "System" in self.state.discussion_roles else self._role(None)
        entry = ops.make_entry(role, f"[Summary of {len(snapshot)} earlier entries]\n\n{summary}")
        with self._context.edit(f"compress {name}", discussions=[name]):
            ops.replace_prefix(self._all, name, len(snapshot), entry)
        self._ctrl.publish("discussion_compressed", {"discussion": name, "entries": len(snapshot)})

    def _idle(self) -> None:
        if not self._compressing and not self._stamping:
            self.state.discussion_status = "idle"
