"""The scripted provider a simulation talks through: a wire-level fake, fed from a turn file.

The fakes are the providers issue's own (:mod:`tests.fakes`): real HTTP servers on
free loopback ports speaking the OpenAI-compatible, Anthropic or Gemini protocol,
or an executable mock ``gemini`` CLI printing stream-json. The app under test talks to
them through its real provider code; nothing needs the internet.

A **turn file** (``simulation/turns/<scenario>.toml``) describes what the model answers,
in groups a scenario pushes step by step — or, when the order of the calls is not fixed (a
plan's parallel subtasks), groups that answer the requests routed to them by their content
(:meth:`ScriptedProvider.answer_by`)::

    # each top-level key is a group: a list of turns answered in order
    [[read_files]]
    calls = [{ name = "read_file", args = { path = "src/app.py" } }]

    [[read_files]]
    text = "The app greets the user."

Turn keys (one answer each; ``repeat = N`` makes N copies):

==================  ===========================================================
``text``            a plain answer (also the text beside ``calls`` or ``json``)
``calls``           tool calls: ``[{name, args, id?}]``
``json``            a JSON answer (a plan): the table, serialized; after ``text``
                    it is sent in a fenced ```json block
``fail``            an HTTP error status; ``retry_after`` (seconds) and ``body``
``raw``             a body that is not JSON (garbage); ``status`` (default 200)
``truncated``       true: the answer is cut off halfway
``hang``            seconds to say nothing (the client times out)
``delay``           seconds before the answer starts
``chunk_delay``     seconds between streamed chunks
==================  ===========================================================
"""

from __future__ import annotations

import json
import secrets
import threading
import tomllib
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fakes import (
    AnthropicFake,
    Call,
    Fail,
    FakeGeminiCli,
    GeminiFake,
    Hang,
    OpenAIFake,
    Raw,
    Recorded,
    Reply,
    Truncated,
    Turn,
    cli_turn,
)
from tests.fakes.http import FakeServer

from manual_slop.config import CREDENTIAL_ENV_VARS
from simulation.errors import TurnScriptError

__all__ = [
    "HTTP_FAKES",
    "TURNS_DIR",
    "TURN_KEYS",
    "ScriptedProvider",
    "TurnScript",
    "parse_turn",
]

TURNS_DIR = Path(__file__).resolve().with_name("turns")

HTTP_FAKES: dict[str, type[FakeServer]] = {
    "openai_compatible": OpenAIFake,
    "deepseek": OpenAIFake,
    "anthropic": AnthropicFake,
    "gemini": GeminiFake,
}

TURN_KEYS: dict[str, tuple[type, ...]] = {
    "text": (str,),
    "calls": (list,),
    "json": (dict, list),
    "fail": (int,),
    "retry_after": (int, float),
    "body": (str, dict),
    "raw": (str,),
    "status": (int,),
    "truncated": (bool,),
    "hang": (int, float),
    "delay": (int, float),
    "chunk_delay": (int, float),
    "repeat": (int,),
}


_KIND_KEYS: dict[str, frozenset[str]] = {
    "reply": frozenset({"text", "calls", "json", "truncated", "chunk_delay"}),
    "fail": frozenset({"fail", "retry_after", "body"}),
    "raw": frozenset({"raw", "status"}),
    "hang": frozenset({"hang"}),
}


def parse_turn(spec: Mapping[str, Any], where: str = "turn") -> list[Turn]:
    """The fake-server turns one turn table describes (``repeat`` copies)."""
    for key, value in spec.items():
        if key not in TURN_KEYS:
            raise TurnScriptError(f"{where}: unknown key {key!r}; known: {', '.join(sorted(TURN_KEYS))}")
        expected = TURN_KEYS[key]
        if not isinstance(value, expected) or (isinstance(value, bool) and bool not in expected):
            names = " or ".join(t.__name__ for t in expected)
            raise TurnScriptError(f"{where}: {key}: expected {names}, got {type(value).__name__}")
    kinds = [k for k in ("fail", "raw", "hang") if k in spec]
    if len(kinds) > 1:
        raise TurnScriptError(f"{where}: {' and '.join(kinds)} cannot be combined")
    kind = kinds[0] if kinds else "reply"
    for key in spec:
        if key not in _KIND_KEYS[kind] and key not in ("delay", "repeat"):
            raise TurnScriptError(f"{where}: {key} cannot be combined with {kind}")
    delay = float(spec.get("delay", 0.0))
    turn: Turn
    if "fail" in spec:
        headers = {} if "retry_after" not in spec else {"Retry-After": _seconds(spec["retry_after"])}
        turn = Fail(spec["fail"], spec.get("body"), headers, delay=delay)
    elif "raw" in spec:
        turn = Raw(spec["raw"], spec.get("status", 200), delay=delay)
    elif "hang" in spec:
        turn = Hang(float(spec["hang"]), delay=delay)
    else:
        text, calls = _reply_text(spec, where), _calls(spec.get("calls", []), where)
        chunk_delay = float(spec.get("chunk_delay", 0.0))
        if spec.get("truncated"):
            turn = Truncated(Reply(text, calls, chunk_delay=chunk_delay), delay=delay)
        else:
            turn = Reply(text, calls, delay=delay, chunk_delay=chunk_delay)
    repeat = spec.get("repeat", 1)
    if repeat < 1:
        raise TurnScriptError(f"{where}: repeat must be at least 1, got {repeat}")
    return [turn] * repeat


def _reply_text(spec: Mapping[str, Any], where: str) -> str:
    text = spec.get("text", "")
    if "json" not in spec:
        if not text and not spec.get("calls"):
            raise TurnScriptError(f"{where}: a reply needs text, calls or json")
        return text
    document = json.dumps(spec["json"], indent=2)
    return f"{text}\n```json\n{document}\n```" if text else document


def _calls(raw: list[Any], where: str) -> list[Call]:
    calls: list[Call] = []
    for index, item in enumerate(raw):
        place = f"{where}: calls[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise TurnScriptError(f"{place}: expected a table with a string 'name'")
        unknown = set(item) - {"name", "args", "id"}
        if unknown:
            raise TurnScriptError(f"{place}: unknown key {sorted(unknown)[0]!r}; known: args, id, name")
        args = item.get("args", {})
        if not isinstance(args, dict):
            raise TurnScriptError(f"{place}: args: expected a table, got {type(args).__name__}")
        calls.append(Call(item["name"], args, item.get("id")))
    return calls


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


@dataclass(frozen=True, slots=True)
class TurnScript:
    """A turn file: named groups of turns."""

    path: Path
    groups: dict[str, list[Turn]]

    @classmethod
    def load(cls, path: Path) -> TurnScript:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise TurnScriptError(f"{path}: cannot be read ({exc.strerror})") from exc
        except tomllib.TOMLDecodeError as exc:
            raise TurnScriptError(f"{path}: not valid TOML ({exc})") from exc
        groups: dict[str, list[Turn]] = {}
        for name, turns in data.items():
            if not isinstance(turns, list) or not all(isinstance(t, dict) for t in turns):
                raise TurnScriptError(f"{path.name}: {name}: expected an array of tables ([[{name}]])")
            groups[name] = [
                turn
                for index, spec in enumerate(turns)
                for turn in parse_turn(spec, f"{path.name}: {name}[{index}]")
            ]
        return cls(path, groups)

    def group(self, name: str) -> list[Turn]:
        if name not in self.groups:
            known = ", ".join(sorted(self.groups)) or "none"
            raise TurnScriptError(f"{self.path.name}: no group {name!r}; groups: {known}")
        return list(self.groups[name])


class ScriptedProvider:
    """A fake provider for one scenario; ``name`` is the app's provider name."""

    def __init__(
        self,
        name: str,
        workdir: Path,
        *,
        model: str = "sim-model",
        require_key: bool = True,
        script: TurnScript | None = None,
    ) -> None:
        if name not in HTTP_FAKES and name != "gemini_cli":
            known = ", ".join(sorted([*HTTP_FAKES, "gemini_cli"]))
            raise TurnScriptError(f"no scripted fake for provider {name!r}; fakes: {known}")
        self.name = name
        self.model = model
        self.script = script
        # The key travels only through the launched app's environment; the fake refuses others.
        self.api_key = f"sim-{secrets.token_hex(8)}" if require_key and name in CREDENTIAL_ENV_VARS else None
        self._server: FakeServer | None = None
        self._cli: FakeGeminiCli | None = None
        self._workdir = workdir
        self._routed: dict[str, deque[Turn]] = {}  # answer_by: the turns each group has left
        self._routed_lock = threading.Lock()  # the fake answers parallel calls on several threads

    # -- lifetime --------------------------------------------------------------------------
    def start(self) -> ScriptedProvider:
        if self.name == "gemini_cli":
            self._cli = FakeGeminiCli(self._workdir / "gemini-cli")
        else:
            fake = HTTP_FAKES[self.name](api_key=self.api_key, models=[self.model, f"{self.model}-large"])
            self._server = fake.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    # -- how the app reaches it -----------------------------------------------------------------
    @property
    def base_url(self) -> str:
        """The fake's URL ('' for the CLI, which the app finds by its binary path)."""
        return self._server.base_url if self._server is not None else ""

    @property
    def binary(self) -> str:
        return str(self._cli.binary) if self._cli is not None else ""

    def provider_config(self) -> dict[str, Any]:
        """``[providers.<name>]`` of a launched app's config.toml."""
        table: dict[str, Any] = {"model": self.model}
        if self.base_url:
            table["base_url"] = self.base_url
        if self.binary:
            table["binary"] = self.binary
        return table

    def environment(self) -> dict[str, str]:
        """The key variable of a launched app (empty when the fake takes no key)."""
        var = CREDENTIAL_ENV_VARS.get(self.name)
        return {var: self.api_key} if var and self.api_key else {}

    # -- the script -------------------------------------------------------------------------------
    def push(self, *turns: Turn) -> None:
        if self._cli is not None:
            self._cli.push(*(_cli_turn(t) for t in turns))
        elif self._server is not None:
            self._server.push(*turns)
        else:
            raise TurnScriptError(f"the {self.name} fake is not running")

    def push_group(self, group: str) -> int:
        """Queue a group of the scenario's turn file; how many turns."""
        if self.script is None:
            raise TurnScriptError("this scenario has no turn file")
        turns = self.script.group(group)
        self.push(*turns)
        return len(turns)

    def answer_by(self, route: Callable[[Recorded], str | None], groups: list[str] | None = None) -> None:
        """Answer by content, for calls whose order is not fixed (parallel work; HTTP fakes only):
        ``route`` names the turn-file group a request belongs to, and that group's turns answer
        its requests in order. ``groups`` (default: every group of the turn file) are the ones
        served this way. A request routed nowhere (None), or to a group with no turn left, gets
        the next pushed turn, so an unexpected call still finds the script empty."""
        if self.script is None:
            raise TurnScriptError("this scenario has no turn file")
        if self._server is None:
            raise TurnScriptError(f"the {self.name} fake cannot answer by content")
        with self._routed_lock:
            self._routed = {name: deque(self.script.group(name)) for name in groups or self.script.groups}

        def respond(request: Recorded) -> Turn | None:
            group = route(request)
            with self._routed_lock:
                turns = self._routed.get(group) if group is not None else None
                return turns.popleft() if turns else None

        self._server.responder = respond

    def remaining(self) -> int:
        """Turns not answered yet: pushed ones and those left in :meth:`answer_by`'s groups."""
        with self._routed_lock:
            routed = sum(len(turns) for turns in self._routed.values())
        if self._server is not None:
            return self._server.remaining() + routed
        if self._cli is not None:
            calls = len(self._cli.calls())
            return max(0, len(json.loads(self._cli.script.read_text(encoding="utf-8"))) - calls)
        return 0

    def model_calls(self) -> list[Recorded]:
        """Every model call the fake answered (HTTP fakes)."""
        return self._server.model_calls() if self._server is not None else []

    def cli_calls(self) -> list[dict[str, Any]]:
        """argv and stdin of every CLI invocation (the gemini_cli fake)."""
        return self._cli.calls() if self._cli is not None else []

    def call_count(self) -> int:
        return len(self.cli_calls()) if self._cli is not None else len(self.model_calls())

    def request_texts(self) -> list[str]:
        """What each model call carried, as text (to check what the model was told)."""
        if self._cli is not None:
            return [json.dumps(c, ensure_ascii=False) for c in self.cli_calls()]
        return [json.dumps(r.body, ensure_ascii=False) for r in self.model_calls()]


def _cli_turn(turn: Turn) -> dict[str, Any]:
    """A fake-server turn as the mock CLI's turn (text answers and errors)."""
    if isinstance(turn, Reply):
        if turn.calls:
            raise TurnScriptError("the gemini_cli fake runs no tools for the app: use text turns")
        return cli_turn(turn.text, delay=turn.delay)
    if isinstance(turn, Fail):
        return cli_turn(
            error={"message": f"HTTP {turn.status}", "status": turn.status}, exit=turn.status % 256
        )
    raise TurnScriptError(f"the gemini_cli fake cannot play a {type(turn).__name__} turn")
