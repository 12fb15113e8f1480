"""Plans on disk: ``conductor/plans/`` under the project's base dir.

==================================  ===========================================================
``<id>.json``                       the plan (``Plan.to_dict``): subtasks with status, timings,
                                    usage and ``result_path``; merge strategy; metadata (goal,
                                    planner, merge result path, judge score, replans)
``<id>/<subtask id>.md``            one subtask's result
``<id>/merge.md``                   the merged answer
==================================  ===========================================================

``<id>`` is ``<YYYYmmdd-HHMMSS>_<goal slug>``. Every file is written atomically, through the app's
redactor when one is given; the plan file is rewritten after every status change. A plan file
that does not parse is moved aside (``<id>.json.corrupt-<ts>``) and reported, never overwritten.
"""

from __future__ import annotations

import json
import re
import threading
from datetime import datetime
from pathlib import Path

from manual_slop.atomic_io import atomic_write_text, move_aside
from manual_slop.mma.models import ID_PATTERN
from manual_slop.plan.model import Plan, PlanError, plan_file_name
from manual_slop.redaction import Redactor

__all__ = ["PLANS_DIR", "PlanStore"]

PLANS_DIR = Path("conductor") / "plans"


class PlanStore:
    """Reads and writes the plans of one project; one lock serializes writers in this process."""

    def __init__(self, base_dir: Path, redactor: Redactor | None = None) -> None:
        self.base_dir = base_dir
        self.root = base_dir / PLANS_DIR
        self.redactor = redactor
        self._lock = threading.Lock()

    def path(self, plan_id: str) -> Path:
        if not re.fullmatch(ID_PATTERN, plan_id):
            raise PlanError(f"{plan_id[:70]!r} is not a plan id")
        return self.root / f"{plan_id}.json"

    def new_id(self, goal: str, now: datetime | None = None) -> str:
        """A fresh plan id for ``goal`` (a second plan in the same second gets ``-2``, ...)."""
        stem = plan_file_name(goal, now or datetime.now()).removesuffix(".json")
        candidate, counter = stem, 1
        with self._lock:
            while self.path(candidate).exists() or (self.root / candidate).exists():
                counter += 1
                candidate = f"{stem[: 64 - len(str(counter)) - 1]}-{counter}"
        return candidate

    def save(self, plan: Plan) -> Path:
        """Write the plan file atomically; OSError when it cannot be written."""
        path = self.path(plan.id)
        data = plan.to_dict() if self.redactor is None else self.redactor.redact_obj(plan.to_dict())
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        with self._lock:
            atomic_write_text(path, text)
        return path

    def write_result(self, plan_id: str, name: str, text: str) -> str:
        """Write ``<id>/<name>.md`` atomically; its path relative to the base dir (POSIX)."""
        self.path(plan_id)  # the id is checked: the result goes inside the plans folder
        path = self.root / plan_id / f"{name}.md"
        if self.redactor is not None:
            text = self.redactor.redact(text)
        with self._lock:
            atomic_write_text(path, text if text.endswith("\n") else text + "\n")
        return path.relative_to(self.base_dir).as_posix()

    def read_result(self, relative: str) -> str:
        """A result written by :meth:`write_result` (paths outside the plans folder are refused)."""
        path = (self.base_dir / relative).resolve()
        if not path.is_relative_to(self.root.resolve()):
            raise PlanError(f"{relative}: not a result file of this project's plans")
        return path.read_text(encoding="utf-8")

    def load(self, plan_id: str) -> Plan:
        """Read one plan; PlanError names the file and the problem (a file that does not parse is
        moved aside first)."""
        path = self.path(plan_id)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise PlanError(f"no plan {plan_id!r} (missing {path})") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            moved = move_aside(path, "corrupt")
            raise PlanError(f"{path} cannot be parsed ({exc}); moved aside to {moved.name}") from None
        except OSError as exc:
            raise PlanError(f"{path} cannot be read: {exc}") from None
        try:
            plan = Plan.from_dict(data, where=path.name)
        except PlanError as exc:
            moved = move_aside(path, "corrupt")
            raise PlanError(f"{exc}; the file was moved aside to {moved.name}") from None
        if plan.id != plan_id:
            raise PlanError(f"{path}: id {plan.id!r} does not match its file name")
        return plan

    def load_all(self) -> tuple[list[Plan], list[str]]:
        """Every plan (oldest first) and a message per file that could not be read."""
        plans, problems = [], []
        try:
            files = sorted(self.root.glob("*.json")) if self.root.is_dir() else []
        except OSError as exc:
            return [], [f"{self.root} cannot be listed: {exc}"]
        for path in files:
            try:
                plans.append(self.load(path.stem))
            except PlanError as exc:
                problems.append(str(exc))
        return plans, problems
