"""BaseSimulation: one scripted user workflow against a live app, with a timeline of verdicts.

A scenario subclasses :class:`BaseSimulation`, names itself, and writes three methods::

    class ToolsSimulation(BaseSimulation):
        name = "tools"
        title = "read tools, a denied path, an edit approved with changes"
        turn_file = "tools.toml"          # the fake provider's answers (simulation/turns/)

        def setup(self) -> None:          # files in the temporary project, tracked files
        def run(self) -> None:            # act as the user: type, click, approve, read
        def verify(self) -> None:         # what must be true afterwards: disk, logs, fields

:meth:`BaseSimulation.execute` runs the whole life of a scenario and never leaves
anything behind:

1. a work folder and the scripted provider (:mod:`simulation.provider`) are made;
2. the app is launched (:mod:`simulation.launcher`: a private ``config.toml`` pointing the
   provider at the fake, the key in the app's environment) or a running app is attached
   to (the provider and its URL are then set through ``set_value``, and every setting
   the scenario changes is put back at the end);
3. a temporary project folder becomes the app's files base dir, and a fresh discussion
   the active one;
4. ``setup`` → ``run`` → ``verify``, each action inside a timed :meth:`step`, each assertion a
   :meth:`check` that is recorded (and ends the scenario when it fails);
5. teardown, always: settings restored (attached), the app stopped with ``/api/shutdown``
   and its clean exit checked (launched), the fake stopped, the work folder removed.

Checks look only at what a user could see: replies and fields over the Hook API,
files on disk, the session's log folder (``session_dir``), ticket states, track files.
"""

from __future__ import annotations

import contextlib
import copy
import json
import shutil
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from manual_slop.hooks import ApiHookClient, HookApiError, HookError, HookTaskFailed, HookWaitTimeout
from simulation.errors import (
    AttachedOnlyLimit,
    SimulationError,
    VerificationFailed,
)
from simulation.launcher import AppSpec, LaunchedApp, LaunchMode
from simulation.provider import TURNS_DIR, ScriptedProvider, TurnScript
from simulation.user_agent import Pace, UserAgent

__all__ = [
    "BaseSimulation",
    "Check",
    "SimulationResult",
    "Step",
    "Target",
    "Verdict",
]

T = TypeVar("T")
DEFAULT_WAIT_S = 30.0
PER_PROVIDER_FIELDS = frozenset({"current_model", "provider_base_url"})  # each provider keeps its own


class Verdict(StrEnum):
    PASSED = "passed"
    FAILED = "failed"


@dataclass(slots=True)
class Check:
    """One assertion on observable state."""

    label: str
    passed: bool
    detail: str = ""


@dataclass(slots=True)
class Step:
    """One timed action of the timeline."""

    phase: str  # setup | run | verify | teardown
    label: str
    started_s: float  # since the scenario started
    duration_s: float = 0.0
    ok: bool = True
    error: str = ""
    checks: list[Check] = field(default_factory=list)


@dataclass(slots=True)
class SimulationResult:
    """What one scenario did and whether it held."""

    name: str
    title: str
    verdict: Verdict
    duration_s: float
    steps: list[Step]
    error: str = ""
    notes: list[str] = field(default_factory=list)
    workdir: str = ""

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASSED

    @property
    def checks(self) -> list[Check]:
        return [check for step in self.steps for check in step.checks]

    def failed_checks(self) -> list[Check]:
        return [check for check in self.checks if not check.passed]

    def report(self) -> str:
        """The scenario's timeline: steps with durations, each check's verdict, the outcome."""
        lines = [f"== sim_{self.name}: {self.title}"]
        for step in self.steps:
            mark = "ok" if step.ok else "FAIL"
            head = f"  {step.started_s:6.2f}s  {step.phase:<8} {step.label:<58.58}"
            lines.append(f"{head} {step.duration_s:6.2f} s  {mark}")
            for check in step.checks:
                verdict = "pass" if check.passed else "FAIL"
                detail = f" ({check.detail})" if check.detail and not check.passed else ""
                lines.append(f"             {verdict}  {check.label}{detail}")
            if step.error:
                lines.extend(f"             ! {line}" for line in step.error.splitlines())
        lines.extend(f"  note: {note}" for note in self.notes)
        if self.error and not any(s.error for s in self.steps) and not self.failed_checks():
            lines.extend(f"  ! {line}" for line in self.error.splitlines())  # raised outside any step
        passed = sum(c.passed for c in self.checks)
        lines.append(
            f"  {self.verdict.upper()}  sim_{self.name}: {passed}/{len(self.checks)} checks passed, "
            f"{len(self.steps)} steps, {self.duration_s:.2f} s"
        )
        if self.workdir:
            lines.append(f"  work folder kept: {self.workdir}")
        return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Target:
    """Where the scenario runs: an app it launches, or a running one at ``url``."""

    url: str = ""
    launch: LaunchMode | None = LaunchMode.HEADLESS
    token: str = ""
    config_overrides: dict[str, Any] = field(default_factory=dict)  # deep-merged into config.toml
    keep_workdir: bool = False

    @classmethod
    def attach(cls, url: str, token: str = "") -> Target:
        return cls(url=url, launch=None, token=token)

    @property
    def attached(self) -> bool:
        return self.launch is None


class BaseSimulation:
    """A scripted user workflow; subclasses implement ``setup``, ``run`` and ``verify``."""

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    provider_name: ClassVar[str] = "openai_compatible"
    provider_model: ClassVar[str] = "sim-model"
    extra_providers: ClassVar[dict[str, str]] = {}  # more fakes the scenario switches to: name -> model
    turn_file: ClassVar[str | None] = None

    def __init__(self, target: Target | None = None, pace: Pace | None = None, workroot: Path | None = None):
        self.target = target or Target()
        self.pace = pace or Pace.instant()
        self._workroot = workroot
        self.workdir = Path()
        self.workspace = Path()  # the temporary project folder (the app's files base dir)
        self.app: LaunchedApp | None = None
        self.provider: ScriptedProvider | None = None
        self.fakes: dict[str, ScriptedProvider] = {}  # every fake, by provider name
        self._client: ApiHookClient | None = None
        self._user: UserAgent | None = None
        self.steps: list[Step] = []
        self.notes: list[str] = []
        self._current: Step | None = None
        self._phase = "setup"
        self._t0 = 0.0
        self._originals: dict[tuple[str, str], Any] = {}  # attached: (field, provider or '') -> old value
        self._original_discussion = ""
        self.discussion = ""
        self._log_marks: dict[Path, int] = {}  # log file -> lines it had when the scenario began
        self._foreign_dialogs: set[str] = set()  # attached: dialogs that were pending before we came

    # =====================================================================================
    # what a scenario writes
    # =====================================================================================
    def setup(self) -> None:
        """Prepare the project for the workflow (files, tracked globs, settings)."""

    def run(self) -> None:
        """The workflow, as the user does it."""
        raise NotImplementedError

    def verify(self) -> None:
        """Final checks on what the user can see: disk, logs, fields."""

    # =====================================================================================
    # lifecycle
    # =====================================================================================
    def execute(self) -> SimulationResult:
        """Run setup → run → verify with teardown guaranteed; never raises for a failed check."""
        self._t0 = time.monotonic()
        error = ""
        try:
            self._phase = "setup"
            with self.step("start the scripted provider and the app"):
                self._start()
            with self.step("prepare a temporary project and a fresh discussion"):
                self._prepare_project()
            self.setup()
            self._phase = "run"
            self.run()
            self._phase = "verify"
            self.verify()
        except Exception as exc:
            error = _describe(exc)
        except BaseException:  # Ctrl+C, SystemExit: still stop the app and the fakes
            self._phase = "teardown"
            self._teardown()
            raise
        self._phase = "teardown"
        teardown_error = self._teardown()
        if teardown_error and not error:
            error = teardown_error
        failed = bool(error) or any(not s.ok for s in self.steps)
        made = self.workdir != Path()
        keep = made and (self.target.keep_workdir or failed)
        if made and not keep:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return SimulationResult(
            name=self.name,
            title=self.title,
            verdict=Verdict.FAILED if failed else Verdict.PASSED,
            duration_s=time.monotonic() - self._t0,
            steps=self.steps,
            error=error,
            notes=self.notes,
            workdir=str(self.workdir) if keep else "",
        )

    def _start(self) -> None:
        root = self._workroot
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)
        self.workdir = Path(tempfile.mkdtemp(prefix=f"sim_{self.name}_", dir=root))
        self.workspace = self.workdir / "workspace"
        self.workspace.mkdir()
        script = TurnScript.load(TURNS_DIR / self.turn_file) if self.turn_file else None
        for name, model in {self.provider_name: self.provider_model, **self.extra_providers}.items():
            self.fakes[name] = ScriptedProvider(
                name, self.workdir, model=model, require_key=not self.target.attached, script=script
            ).start()
        self.provider = self.fakes[self.provider_name]
        if self.target.attached:
            url = self.target.url
        else:
            self.app = LaunchedApp(
                self.workdir, self.launch_spec(), self.target.launch or LaunchMode.HEADLESS
            )
            url = self.app.start()
        self._connect(url)
        if self.app is not None:
            self._check_mode(self.app.mode)
        if self.target.attached:
            self._foreign_dialogs = {d["id"] for d in self.client.pending()}
            self._configure_attached_provider()

    def _check_mode(self, mode: LaunchMode) -> None:
        """The launched app runs the way it was asked to; a window has drawn frames."""
        self.expect_equal(self.client.status()["mode"], str(mode), f"the app runs in {mode} mode")
        if mode is LaunchMode.GUI:  # the server answers before the window's first frame
            self.wait_for(
                "the window is drawing frames",
                self.client.health,
                lambda h: h["healthy"] and h["frames"] > 0,
            )

    def launch_spec(self) -> AppSpec:
        """The launched app's config (provider → the fake), project and environment."""
        provider = self.provider
        assert provider is not None
        config: dict[str, Any] = {
            "ai": {"provider": provider.name, "model": provider.model},
            "approval": {"policy": "manual", "timeout_s": 300.0},
            "providers": {name: fake.provider_config() for name, fake in self.fakes.items()},
            "projects": {"active": "project.toml"},
        }
        _deep_merge(config, copy.deepcopy(self.target.config_overrides))
        project = {
            "project": {"name": f"sim-{self.name}"},
            "files": {"base_dir": "workspace", "paths": []},
        }
        env = {k: v for fake in self.fakes.values() for k, v in fake.environment().items()}
        return AppSpec(config=config, project=project, env=env, token=self.target.token)

    def _connect(self, url: str) -> None:
        if self._client is not None:
            self._client.close()
        # no token given: the client finds the app's own in its runtime token file
        self._client = ApiHookClient(url, self.target.token or None, timeout=15.0)
        self._client.wait_for_server(30.0)
        self._client.discard_events()
        self._user = UserAgent(self._client, self.pace)

    def _configure_attached_provider(self) -> None:
        self.set_field("approval_policy", "manual")
        self.switch_provider(self.provider_name)

    def _prepare_project(self) -> None:
        base = str(self.workspace) if self.target.attached else "workspace"
        self.set_field("files_base_dir", base)
        self.set_field("project_files", [])
        self.set_field("files_exclude", [])
        self._mark_logs()
        self._original_discussion = self.client.get_value("active_discussion")
        self.discussion = f"sim_{self.name}_{uuid.uuid4().hex[:6]}"
        self.user.click("btn_new_discussion", self.discussion)
        self.check(
            self.client.get_value("active_discussion") == self.discussion,
            f"a fresh discussion {self.discussion!r} is active",
        )

    def _teardown(self) -> str:
        """Put everything back; the first problem met, as text ('' when clean)."""
        problems: list[str] = []
        with self.step("tear down: restore settings, stop the app and the fake", record_errors=False):
            if self.target.attached and self._client is not None:
                problems += self._restore_attached()
            if self.app is not None:
                try:
                    self.app.stop()
                    self.check(True, "the app stopped cleanly on /api/shutdown (config and project saved)")
                except Exception as exc:
                    problems.append(_describe(exc))
                    self._record_check(False, "the app stopped cleanly on /api/shutdown", str(exc))
            if self._client is not None:
                self._client.close()
            for fake in self.fakes.values():
                try:
                    fake.stop()
                except Exception as exc:
                    problems.append(f"the {fake.name} fake did not stop: {_describe(exc)}")
            if problems and self._current is not None:
                self._current.ok = False
                self._current.error = "\n".join(problems)
        return "\n".join(problems)

    def _restore_attached(self) -> list[str]:
        problems: list[str] = []
        client = self.client
        try:
            with contextlib.suppress(HookApiError):
                for dialog in client.pending():  # never leave a dialog of ours waiting
                    if dialog["id"] not in self._foreign_dialogs:
                        client.reject(dialog["id"], "simulation ended")
            if self._original_discussion:
                client.wait_for_task(client.set_value("active_discussion", self._original_discussion))
            if self.discussion:
                for name in client.get_value("discussions"):
                    if name == self.discussion or name.startswith(self.discussion + "_take_"):
                        client.wait_for_task(client.click("btn_delete_discussion", name))
            provider = self._originals.get(("current_provider", ""))
            for (name, owner), value in reversed(list(self._originals.items())):
                if owner:  # a per-provider setting: put it back on its own provider
                    client.wait_for_task(client.set_value("current_provider", owner))
                if name != "current_provider":
                    client.wait_for_task(client.set_value(name, value))
            if provider is not None:
                client.wait_for_task(client.set_value("current_provider", provider))
        except HookError as exc:
            problems.append(f"could not restore the attached app's settings: {exc}")
        return problems

    # =====================================================================================
    # the timeline
    # =====================================================================================
    @contextlib.contextmanager
    def step(self, label: str, *, record_errors: bool = True) -> Iterator[Step]:
        """Time an action; an exception inside marks the step failed and propagates."""
        outer = self._current
        step = Step(self._phase, label, time.monotonic() - self._t0)
        self.steps.append(step)
        self._current = step
        start = time.monotonic()
        try:
            yield step
        except Exception as exc:
            step.ok = False
            if record_errors and not isinstance(exc, VerificationFailed):
                step.error = _describe(exc)
            raise
        finally:
            step.duration_s = time.monotonic() - start
            self._current = outer

    def note(self, text: str) -> None:
        """A remark for the report (e.g. a part skipped when attached)."""
        self.notes.append(text)

    def _record_check(self, passed: bool, label: str, detail: str = "") -> None:
        step = self._current
        if step is None:
            step = Step(self._phase, "checks", time.monotonic() - self._t0)
            self.steps.append(step)
        step.checks.append(Check(label, passed, detail))
        if not passed:
            step.ok = False

    def check(self, condition: object, label: str, detail: str = "") -> None:
        """Record a check; a failed one ends the scenario (VerificationFailed)."""
        passed = bool(condition)
        self._record_check(passed, label, detail)
        if not passed:
            raise VerificationFailed(label, detail)

    def expect_equal(self, actual: Any, expected: Any, label: str) -> None:
        detail = "" if actual == expected else f"expected {expected!r:.300}, got {actual!r:.300}"
        self.check(actual == expected, label, detail)

    def wait_for(
        self,
        label: str,
        read: Callable[[], T],
        predicate: Callable[[T], bool],
        timeout: float = DEFAULT_WAIT_S,
    ) -> T:
        """Poll ``read()`` until ``predicate`` holds; a failed check (with the last value) when not."""
        deadline = time.monotonic() + timeout
        while True:
            value = read()
            if predicate(value):
                self._record_check(True, label)
                return value
            if time.monotonic() >= deadline:
                self.check(False, label, f"not within {timeout:g} s; last: {value!r:.300}")
            time.sleep(0.03)

    # =====================================================================================
    # acting and observing
    # =====================================================================================
    @property
    def client(self) -> ApiHookClient:
        if self._client is None:
            raise SimulationError("not connected to an app")
        return self._client

    @property
    def user(self) -> UserAgent:
        if self._user is None:
            raise SimulationError("not connected to an app")
        return self._user

    @property
    def fake(self) -> ScriptedProvider:
        if self.provider is None:
            raise SimulationError("no scripted provider")
        return self.provider

    def set_field(self, name: str, value: Any, *, typed: bool = False) -> None:
        """Change a setting as the user (``typed``: type the text in); an attached app gets its
        old value back at the end."""
        if self.target.attached:
            owner = self.client.get_value("current_provider") if name in PER_PROVIDER_FIELDS else ""
            self._originals.setdefault((name, owner), self.client.get_value(name))
        if typed:
            self.user.type_into(name, value)
        else:
            self.user.set(name, value)

    def switch_provider(self, name: str) -> None:
        """Make the fake ``name`` the active provider (an attached app is pointed at it by URL)."""
        fake = self.fakes[name]
        self.set_field("current_provider", name)
        if self.target.attached:
            if fake.binary:
                raise AttachedOnlyLimit(
                    f"the {name} fake needs providers.{name}.binary in config.toml; run with --launch"
                )
            self.set_field("provider_base_url", fake.base_url)
            self.set_field("current_model", fake.model)

    def write_file(self, relative: str, text: str) -> Path:
        """A file in the temporary project."""
        path = self.workspace / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def start_send(self, message: str) -> None:
        """Type ``message`` into the message box and press Gen + Send."""
        self.set_field("ai_input", message, typed=True)
        self.user.click("btn_gen_send")

    def wait_response(self, timeout: float = DEFAULT_WAIT_S) -> dict[str, Any]:
        """The payload of the next ``response`` event (``request_id``, ``text``, ``status``)."""
        try:
            event = self.client.wait_for_event("response", timeout=timeout)
        except HookWaitTimeout as exc:
            raise VerificationFailed("a response arrived", f"none within {timeout:g} s") from exc
        payload = event["payload"]
        self.user.read(payload.get("text", ""))
        return payload

    def send(self, message: str, timeout: float = DEFAULT_WAIT_S) -> dict[str, Any]:
        """Gen + Send and wait for the answer (no dialogs expected on the way)."""
        self.start_send(message)
        return self.wait_response(timeout)

    def wait_dialog(self, kind: str, timeout: float = DEFAULT_WAIT_S) -> dict[str, Any]:
        """The next pending dialog of ``kind`` (``{id, kind, created, payload}``).

        Fails at once when the request finishes without asking (e.g. a policy approved it)."""
        label = f"a {kind} dialog asked for a decision"
        client = self.client
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(HookWaitTimeout):
                event = client.wait_for_event("pending_added", lambda p: p.get("kind") == kind, 0.2)
                self._record_check(True, label)
                return event["payload"]
            with contextlib.suppress(HookWaitTimeout):
                response = client.wait_for_event("response", timeout=0.0)["payload"]
                self.check(
                    False, label, f"the request ended ({response.get('status')}) without asking anyone"
                )
            if time.monotonic() >= deadline:
                pending = [d["kind"] for d in client.pending()]
                self.check(False, label, f"none within {timeout:g} s; pending: {pending}")

    def _log_end(self, read: Callable[[int, int], dict[str, Any]]) -> int:
        """The cursor after the last entry of a log page endpoint (``client.comms``,
        ``client.tool_calls``): one page holds at most 1,000 entries, and an attached app's log
        may hold many more, so page to the end (a page's ``next`` is only that page's end)."""
        since = 0
        while True:
            page = read(since, 1000)
            if not page["entries"]:
                return since
            since = page["next"]

    def session_dir(self) -> Path:
        return Path(self.client.get_value("session_dir"))

    def _mark_logs(self) -> None:
        """Remember how long the session's logs are, so this scenario reads only its own entries
        (an attached app's logs hold every earlier scenario's too)."""
        folder = self.session_dir()
        for path in folder.glob("*.log"):
            self._log_marks[path] = len(path.read_text(encoding="utf-8").splitlines())

    def log_entries(self, stream: str) -> list[dict[str, Any]]:
        """Entries of ``<session_dir>/<stream>.log`` (comms, toolcalls, audit, apihooks, clicalls)
        written since this scenario began."""
        path = self.session_dir() / f"{stream}.log"
        lines = path.read_text(encoding="utf-8").splitlines()[self._log_marks.get(path, 0) :]
        entries: list[dict[str, Any]] = []
        for line in lines:
            with contextlib.suppress(json.JSONDecodeError):
                entries.append(json.loads(line))
        return entries

    def restart_app(self) -> None:
        """Stop the launched app cleanly and start it again on the same files; reconnect."""
        if self.app is None:
            raise AttachedOnlyLimit("restarting needs an app the harness launched (run with --launch)")
        self._client.close() if self._client else None
        url = self.app.restart()
        self._connect(url)
        self._check_mode(self.app.mode)


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _deep_merge(base[key], value)
        else:
            base[key] = value


def _describe(exc: BaseException) -> str:
    if isinstance(exc, VerificationFailed | SimulationError):
        return f"{type(exc).__name__}: {exc}"
    if isinstance(exc, HookTaskFailed | HookWaitTimeout | HookApiError | HookError):
        return f"{type(exc).__name__}: {exc}"
    return (
        "".join(traceback.format_exception_only(type(exc), exc)).strip()
        + "\n"
        + "".join(traceback.format_tb(exc.__traceback__)[-3:]).rstrip()
    )
