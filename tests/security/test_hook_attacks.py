"""The real headless app under attack: every route of its OpenAPI document with every method,
sent over raw sockets with no or a wrong token, a foreign Host, a foreign Origin, browser-style
bodies, deep nesting, huge headers and broken request lines.

The app runs once for the module (:func:`app`). :func:`attack_run` sends every attack between
two legitimate ``set_value`` tasks. Task ids are consecutive and every accepted write or
main-thread read takes one, so an attack that got through shows as a gap. The tests then
judge the collected replies, category by category.

The expected statuses follow the order of the guard's checks (:mod:`manual_slop.hooks.guard`);
the first check that fails answers::

    request line, headers -> Host -> Origin, Sec-Fetch-Site -> token -> route -> content type -> body
    400, 431                 403     403                       401      404/405  415             413/400

So a request with no token and a foreign Host gets a 403, and GET /status (the one operation
without a token) gets a 200 whatever Authorization it carries.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import re
import select
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from manual_slop.hooks.guard import BODY_METHODS
from manual_slop.hooks.token import read_token_file
from tests.helpers import app_env
from tests.integration.hooks.conftest import Contract

ROOT = Path(__file__).resolve().parents[2]
ANNOUNCE = re.compile(r"hook server listening on http://127\.0\.0\.1:(\d+)\n\Z")
START_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 20.0
REPLY_TIMEOUT_S = 5.0
TASK_TIMEOUT_S = 5.0

METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "BREW")
PUBLIC = ("GET", "/status")  # the one request that needs no token
UNKNOWN_PATH = "/api/nowhere"  # the guard answers before routing: nobody probes the route table
PARAM = re.compile(r"\{\w+\}")
PARAM_VALUE = "x"
TASK_ID = re.compile(r"([0-9a-f]{8})-(\d+)\Z")

ERROR_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
    431: "headers_too_large",
}
OFF_DOCUMENT_STATUSES = frozenset(ERROR_CODES)  # all a path/method that is no operation may answer
DEPTH_MESSAGE = "nested deeper than 64 levels"
ATTACK_MARK = "attack entry 5f0c"

# What each POST route would do if an attack got through (by path template).
HARMFUL_BODIES: dict[str, dict[str, Any]] = {
    "/api/gui": {"action": "set_value", "item": "approval_policy", "value": "auto"},
    "/api/pending/{id}": {"approved": True},
    "/api/ask": {"question": "attack: may I?", "timeout_s": 600},  # would block and stay pending
    "/api/send": {"message": "attack: spend the user's tokens"},
    "/api/session/entries": {"role": "User", "content": ATTACK_MARK},
    "/api/shutdown": {},
    "/api/requests/{id}/cancel": {},  # would stop the user's request
    "/api/rag/index": {},  # would spend the machine on indexing
    "/api/rag/cancel": {},  # would stop the user's index job
    "/api/rag/query": {"query": "attack: read the project"},
    "/api/memory/recall": {"query": "attack: read past conversations"},
    "/api/memory/notes": {"content": ATTACK_MARK},  # would plant a note in every later prompt
    "/api/memory/profile": {"lines": [ATTACK_MARK]},  # (PUT) would rewrite the profile
    "/api/agents/{key}": {"system_prompt": ATTACK_MARK},  # (PUT) would plant an agent's prompt
    "/api/skills/{name}": {"enabled": False},  # (PUT) would switch off a skill the user relies on
    "/api/plan": {"goal": "attack: spend the user's tokens on a plan"},
    "/api/mma/tickets/{id}/depends_on": {"depends_on": []},  # would rewire the user's ticket DAG
    "/api/mcp/servers/{name}/restart": {},  # would interrupt the calls of an external MCP server
    "/api/mcp/servers/{name}/enable": {},  # would start a server the user switched off
    "/api/mcp/servers/{name}/disable": {},  # would take a server's tools away
    # (PUT) would let every tool call, spawn and step through without asking
    "/api/approval/rules": {
        "rules": [{"name": "attack", "trigger": "pattern", "pattern": ".*", "action": "allow", "priority": 9}]
    },
    "/api/mcp/serve": {"address": "127.0.0.1:0"},  # would serve the project's tools over MCP
}

CATEGORIES = ("token", "host", "origin", "content_type", "nesting", "headers", "request_line")


# =========================================================================================
# requests and replies on the wire
# =========================================================================================
@dataclass(frozen=True, slots=True)
class Attack:
    """One request as bytes, and the status the documented order of checks gives it."""

    category: str
    label: str
    method: str
    path: str  # "" when the request line itself is the attack
    data: bytes
    expected: int
    fragment: str = ""  # part of the error message


@dataclass(frozen=True, slots=True)
class Reply:
    status: int  # 0: no reply (see failure)
    version: int = 0  # 11 for HTTP/1.1
    reason: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    failure: str = ""

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


@dataclass(frozen=True, slots=True)
class Outcome:
    attack: Attack
    reply: Reply


def request_bytes(
    method: str, path: str, headers: Iterable[tuple[str, str]], body: bytes | None = None
) -> bytes:
    """An HTTP/1.1 request with exactly ``headers`` (repeats kept, no Host added), then
    Content-Length when there is a body, then ``Connection: close``."""
    lines = [f"{method} {path} HTTP/1.1", *(f"{name}: {value}" for name, value in headers)]
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    lines.append("Connection: close")
    return "\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + (body or b"")


def exchange(port: int, method: str, data: bytes) -> Reply:
    """Send ``data`` on a fresh connection and read one reply (parsed by http.client)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=REPLY_TIMEOUT_S) as sock:
            with contextlib.suppress(OSError):  # refused before it was all read: the reply may be there
                sock.sendall(data)
            response = http.client.HTTPResponse(sock, method=method)
            try:
                response.begin()
                body = response.read()
            finally:
                response.close()
    except (OSError, http.client.HTTPException) as exc:
        return Reply(0, failure=f"{type(exc).__name__}: {exc}")
    return Reply(response.status, response.version, response.reason, tuple(response.getheaders()), body)


# =========================================================================================
# the app
# =========================================================================================
@dataclass(frozen=True, slots=True)
class RunningApp:
    proc: subprocess.Popen[bytes]
    port: int
    token: str
    log_dir: Path
    stderr: Path
    contract: Contract

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def legitimate(self, method: str, path: str, body: object = None) -> bytes:
        """A request as the token's holder sends it: this server's Host, the token, a JSON body."""
        headers = [("Host", self.host), ("Authorization", f"Bearer {self.token}")]
        data = None if body is None else json.dumps(body).encode()
        if data is not None:
            headers.append(("Content-Type", "application/json"))
        return request_bytes(method, path, headers, data)

    def send(self, method: str, path: str, body: object = None) -> Reply:
        return exchange(self.port, method, self.legitimate(method, path, body))

    def call(self, method: str, path: str, body: object = None) -> tuple[int, Any]:
        """:meth:`send`, which must be answered; the status and the JSON reply."""
        reply = self.send(method, path, body)
        assert reply.status, f"{method} {path}: {reply.failure}"
        return reply.status, json.loads(reply.body)


def _announced_port(proc: subprocess.Popen[bytes], stderr: Path) -> int:
    """The port of the app's one stdout line, read with a deadline."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + START_TIMEOUT_S
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        assert left > 0, f"no announcement within {START_TIMEOUT_S} s: {line!r}\n{stderr.read_text()}"
        if select.select([fd], [], [], left)[0]:
            chunk = os.read(fd, 4096)
            assert chunk, f"the app exited before listening:\n{stderr.read_text()}"
            line += chunk
    found = ANNOUNCE.match(line.decode())
    assert found, line
    return int(found[1])


def _written_token(path: Path) -> str:
    deadline = time.monotonic() + START_TIMEOUT_S
    while (token := read_token_file(path)) is None:
        assert time.monotonic() < deadline, f"{path} was not written within {START_TIMEOUT_S} s"
        time.sleep(0.02)
    return token


def _stop(app: RunningApp) -> None:
    code = app.proc.poll()
    assert code is None, f"the app had already exited (code {code}); did an attack stop it?"
    status, _ = app.call("POST", "/api/shutdown", {})
    assert status == 202
    try:
        code = app.proc.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        app.proc.kill()
        app.proc.wait(STOP_TIMEOUT_S)
        pytest.fail(f"the app did not stop within {STOP_TIMEOUT_S} s of POST /api/shutdown")
    err = app.stderr.read_text(encoding="utf-8", errors="replace")
    assert code == 0 and "stopped cleanly" in err, err


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningApp]:
    """``sloppy.py --headless`` on a free port, stopped over the API (and killed if it must be)."""
    folder = tmp_path_factory.mktemp("attack")
    config, project = folder / "config.toml", folder / "project.toml"
    config.write_text("")
    project.write_text('[project]\nname = "attack"\n')
    logs, token_file, stderr = folder / "logs", folder / "hook.token", folder / "stderr.txt"
    command = [
        sys.executable, str(ROOT / "sloppy.py"), "--headless", "--config", str(config),
        "--project", str(project), "--log-dir", str(logs), "--hook-port", "0",
        "--token-file", str(token_file),
    ]  # fmt: skip
    with stderr.open("wb") as err:
        proc = subprocess.Popen(
            command, cwd=folder, env=app_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err
        )
    try:
        port = _announced_port(proc, stderr)
        token = _written_token(token_file)
        doc_reply = exchange(
            port,
            "GET",
            request_bytes(
                "GET", "/openapi.json", [("Host", f"127.0.0.1:{port}"), ("Authorization", f"Bearer {token}")]
            ),
        )
        assert doc_reply.status == 200, doc_reply
        running = RunningApp(proc, port, token, logs, stderr, Contract(json.loads(doc_reply.body)))
        yield running
        _stop(running)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(STOP_TIMEOUT_S)
        assert proc.stdout is not None
        proc.stdout.close()


# =========================================================================================
# the attacks
# =========================================================================================
@dataclass(frozen=True, slots=True)
class Variant:
    """How one attack differs from a legitimate request; None keeps the legitimate value."""

    category: str
    label: str
    status: int
    hosts: tuple[str, ...] | None = None  # Host headers (empty: none)
    auths: tuple[str, ...] | None = None  # Authorization headers (empty: none)
    extra: tuple[tuple[str, str], ...] = ()
    public_passes: bool = False  # GET /status needs no token, so this refusal does not reach it

    def expected(self, method: str, path: str) -> int:
        return 200 if self.public_passes and (method, path) == PUBLIC else self.status


def refused_token(category: str, label: str, auths: tuple[str, ...], **changes: Any) -> Variant:
    """A request the token check refuses (401); GET /status needs no token, so it gets a 200."""
    return Variant(category, label, 401, auths=auths, public_passes=True, **changes)


def other_port(port: int) -> int:
    return port + 1 if port < 65535 else port - 1


def token_variants(token: str) -> list[Variant]:
    """(a): no token, wrong ones, malformed Authorization."""
    near = token[:-1] + ("A" if token[-1] != "A" else "B")
    basic = base64.b64encode(f"slop:{token}".encode()).decode()
    auths = {
        "no token": (),
        "wrong token": ("Bearer not-the-token",),
        "token one character off": (f"Bearer {near}",),
        "truncated token": (f"Bearer {token[:-1]}",),
        "token with a suffix": (f"Bearer {token}x",),
        "Basic scheme": (f"Basic {basic}",),
        "other scheme": (f"Token {token}",),
        "token without a scheme": (token,),
        "Bearer with nothing": ("Bearer",),
        "two Authorization headers": (f"Bearer {token}", f"Bearer {token}"),
        "wrong, then right Authorization": ("Bearer x", f"Bearer {token}"),
    }
    return [refused_token("token", label, values) for label, values in auths.items()]


def host_variants(port: int) -> list[Variant]:
    """(b): Host names other than this server's (DNS rebinding, other ports), none, two."""
    this, other = f"127.0.0.1:{port}", other_port(port)
    foreign = {
        "foreign Host": "evil.example",
        "foreign Host, this port": f"evil.example:{port}",
        "loopback Host without a port": "127.0.0.1",
        "loopback Host, other port": f"127.0.0.1:{other}",
        "IPv6 loopback Host, other port": f"[::1]:{other}",
        "rebinding name": f"localhost.evil.example:{port}",
        "other loopback address": f"127.0.0.2:{port}",
    }
    return [
        *(Variant("host", label, 403, hosts=(host,)) for label, host in foreign.items()),
        Variant("host", "no Host", 403, hosts=()),
        Variant("host", "foreign Host and no token", 403, hosts=("evil.example",), auths=()),
        Variant("host", "two Host headers", 400, hosts=(this, "evil.example")),
        Variant("host", "this Host twice", 400, hosts=(this, this)),
        # controls: the other loopback names pass the Host check and meet the token check
        refused_token("host", "localhost, no token", (), hosts=(f"localhost:{port}",)),
        refused_token("host", "[::1], no token", (), hosts=(f"[::1]:{port}",)),
    ]


def origin_variants(port: int) -> list[Variant]:
    """(c): what a browser sends from another site."""
    evil = "http://evil.example"
    foreign = {
        "foreign Origin": [("Origin", evil)],
        "Origin null": [("Origin", "null")],
        "https Origin of this server": [("Origin", f"https://127.0.0.1:{port}")],
        "Origin of another port": [("Origin", f"http://127.0.0.1:{other_port(port)}")],
        "rebinding Origin": [("Origin", f"http://localhost.evil.example:{port}")],
        "own, then foreign Origin": [("Origin", f"http://127.0.0.1:{port}"), ("Origin", evil)],
        "CORS preflight": [
            ("Origin", evil),
            ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "authorization, content-type"),
        ],
        "Sec-Fetch-Site cross-site": [("Sec-Fetch-Site", "cross-site")],
        "Sec-Fetch-Site same-site": [("Sec-Fetch-Site", "same-site")],
    }
    own = (("Origin", f"http://localhost:{port}"), ("Sec-Fetch-Site", "same-origin"))
    return [
        *(Variant("origin", label, 403, extra=tuple(extra)) for label, extra in foreign.items()),
        Variant("origin", "foreign Origin and no token", 403, auths=(), extra=(("Origin", evil),)),
        # control: this server's own Origin passes and meets the token check
        refused_token("origin", "own Origin, no token", (), extra=own),
    ]


def harmful_body(template: str | None) -> bytes:
    return json.dumps(HARMFUL_BODIES.get(template or "", {})).encode()


def targets(contract: Contract) -> list[tuple[str, str | None]]:
    """(path, template) for every path of the document (parameters filled in), and one unknown path."""
    paths = [(PARAM.sub(PARAM_VALUE, template), template) for template in contract.doc["paths"]]
    return [*paths, (UNKNOWN_PATH, None)]


def guarded_attacks(app: RunningApp) -> list[Attack]:
    """(a), (b), (c): every path with every method; bodies are JSON and harmful."""
    attacks = []
    for variant in [*token_variants(app.token), *host_variants(app.port), *origin_variants(app.port)]:
        for path, template in targets(app.contract):
            for method in METHODS:
                hosts = (app.host,) if variant.hosts is None else variant.hosts
                auths = (f"Bearer {app.token}",) if variant.auths is None else variant.auths
                headers = [*(("Host", h) for h in hosts), *(("Authorization", a) for a in auths)]
                body = None
                if method in BODY_METHODS:
                    headers.append(("Content-Type", "application/json"))
                    body = harmful_body(template)
                headers += variant.extra
                data = request_bytes(method, path, headers, body)
                expected = variant.expected(method, path)
                attacks.append(Attack(variant.category, variant.label, method, path, data, expected))
    return attacks


def post_routes(contract: Contract) -> list[tuple[str, str, str]]:
    """(method, path, template) of every operation with a body (POST, PUT)."""
    return [(m, PARAM.sub(PARAM_VALUE, t), t) for m, t in sorted(contract.operations()) if m in BODY_METHODS]


CONTENT_TYPES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("text/plain", ("text/plain",)),
    ("text/plain, UTF-8", ("text/plain; charset=utf-8",)),
    ("form", ("application/x-www-form-urlencoded",)),
    ("multipart", ("multipart/form-data; boundary=slop",)),
    ("JSON in latin-1", ("application/json; charset=latin-1",)),
    ("no content type", ()),
    ("two content types", ("application/json", "application/json")),
)


def content_type_attacks(app: RunningApp) -> list[Attack]:
    """(d): what a page may post without a CORS preflight, with the token (415 is the only guard)."""
    auth = [("Host", app.host), ("Authorization", f"Bearer {app.token}")]
    attacks = []
    for method, path, template in post_routes(app.contract):
        for label, types in CONTENT_TYPES:
            headers = [*auth, *(("Content-Type", t) for t in types)]
            data = request_bytes(method, path, headers, harmful_body(template))
            attacks.append(
                Attack("content_type", label, method, path, data, 415, "Content-Type: application/json")
            )
        data = request_bytes(method, path, auth, b"")
        attacks.append(Attack("content_type", "empty body, no content type", method, path, data, 415))
    return attacks


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def nesting_attacks(app: RunningApp) -> list[Attack]:
    """(e): bodies nested past 64 levels on every POST route, also those without a body schema."""
    headers = [
        ("Host", app.host),
        ("Authorization", f"Bearer {app.token}"),
        ("Content-Type", "application/json"),
    ]
    attacks = []
    for method, path, template in post_routes(app.contract):
        deep_value = json.dumps({**HARMFUL_BODIES.get(template, {}), "deep": "@"}).encode()
        bodies = {
            **{f"{depth} arrays": nested(depth) for depth in (65, 500, 950, 100_000)},
            "65 objects": b'{"a":' * 65 + b"1" + b"}" * 65,
            "harmful body, 65 deep": deep_value.replace(b'"@"', nested(64)),
        }
        for label, body in bodies.items():
            data = request_bytes(method, path, headers, body)
            attacks.append(Attack("nesting", label, method, path, data, 400, DEPTH_MESSAGE))
    return attacks


def header_attacks(app: RunningApp) -> list[Attack]:
    """(e): headers over 64 KiB or 100 lines on every operation; under the limits is fine."""
    pads = {
        "one 70 KiB header": [("X-Pad", "a" * 70 * 1024)],
        "two 40 KiB headers": [("X-Pad-1", "a" * 40 * 1024), ("X-Pad-2", "a" * 40 * 1024)],
        "150 headers": [(f"X-Pad-{i}", "a") for i in range(150)],
    }
    attacks = []
    for method, template in sorted(app.contract.operations()):
        path = PARAM.sub(PARAM_VALUE, template)
        headers = [("Host", app.host), ("Authorization", f"Bearer {app.token}")]
        body = None
        if method in BODY_METHODS:
            headers.append(("Content-Type", "application/json"))
            body = harmful_body(template)
        for label, pad in pads.items():
            data = request_bytes(method, path, [*headers, *pad], body)
            attacks.append(Attack("headers", label, method, path, data, 431, "over 64 KiB or 100 lines"))
    # controls (no token, so not a legitimate request): just under the limits is answered
    under = {
        "one 60 KiB header": [("X-Pad", "a" * 60 * 1024)],
        "95 headers": [(f"X-Pad-{i}", "a") for i in range(95)],
    }
    for label, pad in under.items():
        data = request_bytes("GET", "/status", [("Host", app.host), *pad])
        attacks.append(Attack("headers", label, "GET", "/status", data, 200))
    return attacks


BAD_REQUEST_LINES: tuple[tuple[str, bytes, str], ...] = (
    ("no HTTP version", b"GET /status\r\n\r\n", "no HTTP version"),
    ("garbage", b"GARBAGE\r\n\r\n", "malformed HTTP request"),
    ("HTTP/9.9", b"GET /status HTTP/9.9\r\n\r\n", "malformed HTTP request"),
    ("HTTP/2.0", b"GET /status HTTP/2.0\r\n\r\n", "malformed HTTP request"),
    ("version without digits", b"GET /status HTTP/x.y\r\n\r\n", "malformed HTTP request"),
    ("four words", b"GET /status HTTP/1.1 extra\r\n\r\n", "malformed HTTP request"),
    ("request line over 64 KiB", b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\n\r\n", "malformed HTTP request"),
    ("TLS handshake", b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + bytes(8) + b"\r\n\r\n", "malformed"),
)


def request_line_attacks() -> list[Attack]:
    """(e): request lines http.server cannot take; still a JSON 400 behind a proper status line."""
    return [
        Attack("request_line", label, "GET", "", data, 400, fragment)
        for label, data, fragment in BAD_REQUEST_LINES
    ]


def all_attacks(app: RunningApp) -> list[Attack]:
    """Every attack; those on POST /api/shutdown last, so one that gets through spoils no other."""
    attacks = [
        *guarded_attacks(app),
        *content_type_attacks(app),
        *nesting_attacks(app),
        *header_attacks(app),
        *request_line_attacks(),
    ]
    return sorted(attacks, key=lambda attack: (attack.method, attack.path) == ("POST", "/api/shutdown"))


@dataclass(frozen=True, slots=True)
class AttackRun:
    outcomes: tuple[Outcome, ...]
    task_before: str  # the legitimate task queued just before the first attack
    task_after: str | None  # ... and just after the last (None: the app no longer took it)


def queue_marker(app: RunningApp, value: str) -> str | None:
    """Queue a legitimate ``set_value`` of ``ai_input``; its task id, None when refused."""
    reply = app.send("POST", "/api/gui", {"action": "set_value", "item": "ai_input", "value": value})
    return json.loads(reply.body)["task_id"] if reply.status == 202 else None


@pytest.fixture(scope="module")
def attack_run(app: RunningApp) -> AttackRun:
    """Every attack, between two legitimate tasks (and no other authorized request)."""
    attacks = all_attacks(app)
    before = queue_marker(app, "before")
    assert before is not None, "the legitimate request before the attacks was refused"
    outcomes = tuple(Outcome(attack, exchange(app.port, attack.method, attack.data)) for attack in attacks)
    return AttackRun(outcomes, before, queue_marker(app, "after"))


# =========================================================================================
# judging a reply
# =========================================================================================
def documented_statuses(contract: Contract, method: str, path: str) -> frozenset[int]:
    template = contract.template_of(path) if path else None
    operation = contract.doc["paths"][template].get(method.lower()) if template else None
    return frozenset(int(s) for s in operation["responses"]) if operation else OFF_DOCUMENT_STATUSES


def problems(outcome: Outcome, contract: Contract) -> list[str]:
    """What is wrong with one reply (empty when it is the documented refusal)."""
    attack, reply = outcome.attack, outcome.reply
    where = f"[{attack.label}] {attack.method} {attack.path[:60] or '(bad request line)'}"
    if not reply.status:
        return [f"{where}: no reply ({reply.failure})"]
    found = []
    if reply.status != attack.expected:
        found.append(f"{where}: expected {attack.expected}, got {reply.status} {reply.body[:200]!r}")
    if reply.status >= 500:
        found.append(f"{where}: a {reply.status}")
    if reply.version != 11 or not reply.reason:
        found.append(f"{where}: status line HTTP/{reply.version / 10} {reply.status} {reply.reason!r}")
    if reply.status not in documented_statuses(contract, attack.method, attack.path):
        found.append(f"{where}: {reply.status} is not documented for this operation")
    cors = [name for name, _ in reply.headers if name.lower().startswith("access-control-allow")]
    if cors:
        found.append(f"{where}: CORS headers {cors}")
    if reply.status == 405 and not reply.header("Allow"):
        found.append(f"{where}: a 405 without an Allow header")
    if not (reply.header("Content-Type") or "").startswith("application/json"):
        found.append(f"{where}: Content-Type {reply.header('Content-Type')!r}")
    if attack.method != "HEAD":
        found += body_problems(where, outcome, contract)
    return found


def body_problems(where: str, outcome: Outcome, contract: Contract) -> list[str]:
    attack, reply = outcome.attack, outcome.reply
    try:
        body = json.loads(reply.body)
    except ValueError:
        return [f"{where}: the body is not JSON: {reply.body[:200]!r}"]
    try:
        contract.check(attack.method, attack.path, reply.status, body)  # the document's schema
    except AssertionError as exc:
        return [f"{where}: {exc}"]
    if reply.status < 400:
        return []
    error = body.get("error") if isinstance(body, dict) else None
    if (
        set(body) != {"error"}
        or not isinstance(error, dict)
        or set(error) != {"code", "message"}
        or not all(isinstance(v, str) for v in error.values())
    ):
        return [f"{where}: not an error body: {body}"]
    found = []
    if error["code"] != ERROR_CODES.get(reply.status):
        found.append(f"{where}: code {error['code']!r} for status {reply.status}")
    if attack.fragment not in error["message"]:
        found.append(f"{where}: {attack.fragment!r} not in {error['message']!r}")
    return found


# =========================================================================================
# the tests
# =========================================================================================
def test_every_route_and_method_is_attacked(app: RunningApp, attack_run: AttackRun) -> None:
    operations = app.contract.operations()
    assert {("GET", "/status"), ("POST", "/api/gui"), ("POST", "/api/shutdown")} <= operations
    posts = {template for method, template in operations if method in BODY_METHODS}
    assert posts == set(HARMFUL_BODIES), "a new POST/PUT route needs its harmful body in HARMFUL_BODIES"

    def attacked(category: str) -> set[tuple[str, str]]:
        return {
            (o.attack.method, o.attack.path) for o in attack_run.outcomes if o.attack.category == category
        }

    every_request = {(method, path) for path, _ in targets(app.contract) for method in METHODS}
    every_operation = {(method, PARAM.sub(PARAM_VALUE, template)) for method, template in operations}
    every_post = {(method, path) for method, path in every_operation if method in BODY_METHODS}
    assert attacked("token") == attacked("host") == attacked("origin") == every_request
    assert attacked("content_type") == attacked("nesting") == every_post
    assert attacked("headers") == every_operation
    assert sum(o.attack.category == "request_line" for o in attack_run.outcomes) == len(BAD_REQUEST_LINES)


@pytest.mark.parametrize("category", CATEGORIES)
def test_every_attack_gets_its_documented_refusal(
    app: RunningApp, attack_run: AttackRun, category: str
) -> None:
    outcomes = [o for o in attack_run.outcomes if o.attack.category == category]
    found = [problem for outcome in outcomes for problem in problems(outcome, app.contract)]
    listed = "\n".join(found[:60])
    assert not found, f"{len(found)} problems in {len(outcomes)} {category} attacks:\n{listed}"


def test_no_attack_got_a_500(attack_run: AttackRun) -> None:
    statuses = Counter(o.reply.status for o in attack_run.outcomes)
    assert statuses and not [s for s in statuses if s >= 500], statuses
    assert 0 not in statuses, "some attacks got no reply at all"


def wait_for_task(app: RunningApp, task_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + TASK_TIMEOUT_S
    while True:
        status, task = app.call("GET", f"/api/gui/task/{task_id}")
        assert status == 200, task
        if task["state"] not in ("queued", "running"):
            return task
        assert time.monotonic() < deadline, f"task {task_id} still {task['state']} after {TASK_TIMEOUT_S} s"
        time.sleep(0.02)


def test_nothing_was_applied_or_queued(app: RunningApp, attack_run: AttackRun) -> None:
    assert attack_run.task_after is not None, "after the attacks, a legitimate request was refused"
    before, after = TASK_ID.match(attack_run.task_before), TASK_ID.match(attack_run.task_after)
    assert before and after, (attack_run.task_before, attack_run.task_after)
    assert (after[1], int(after[2])) == (before[1], int(before[2]) + 1), "an attack queued a task"
    assert wait_for_task(app, attack_run.task_after)["state"] == "done"
    assert app.call("GET", "/api/gui/value/ai_input") == (200, {"field": "ai_input", "value": "after"})
    policy = app.call("GET", "/api/gui/value/approval_policy")
    assert policy == (200, {"field": "approval_policy", "value": "manual"})
    assert app.call("GET", "/api/pending") == (200, {"pending": []})
    status, session = app.call("GET", "/api/session")
    assert status == 200 and all(entry["content"] != ATTACK_MARK for entry in session["entries"]), session
    assert app.call("GET", "/api/plans") == (200, {"plans": []}), "an attack started a plan"
    status, agents = app.call("GET", "/api/agents")
    assert status == 200 and agents["agents"] == [], "an attack planted an agent profile"
    status, rules = app.call("GET", "/api/approval/rules")
    assert status == 200 and rules["rules"] == [], "an attack changed the approval rules"
    assert app.call("GET", "/api/mcp/serve") == (200, {"running": False, "url": ""}), "an attack started MCP"
    (session_dir,) = (app.log_dir / "sessions").iterdir()
    assert (session_dir / "audit.log").read_text() == "", "an approval was decided"


def test_the_app_stayed_up_and_logged_every_attack(app: RunningApp, attack_run: AttackRun) -> None:
    assert app.proc.poll() is None, "an attack stopped the app"
    status = exchange(app.port, "GET", request_bytes("GET", "/status", [("Host", app.host)]))
    assert status.status == 200 and json.loads(status.body)["status"] == "ok"
    (log,) = (app.log_dir / "sessions").glob("*/apihooks.log")
    logged = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [entry for entry in logged if entry["status"] >= 500] == []
    sent = Counter(o.reply.status for o in attack_run.outcomes if o.reply.status)
    assert sent <= Counter(entry["status"] for entry in logged), "a reply is missing from apihooks.log"


def test_with_the_token_other_methods_and_paths_are_still_refused(app: RunningApp) -> None:
    """Routing, with every earlier check passed: 405 with the path's methods in Allow (OPTIONS,
    HEAD and unknown methods included), 404 for a path that is no route."""
    operations = app.contract.operations()
    outcomes = []
    for path, template in targets(app.contract):
        for method in METHODS:
            if (method, template) in operations:
                continue
            data = app.legitimate(method, path, {} if method in BODY_METHODS else None)
            attack = Attack("routing", "token", method, path, data, 405 if template else 404)
            outcomes.append(Outcome(attack, exchange(app.port, method, data)))
    found = [problem for outcome in outcomes for problem in problems(outcome, app.contract)]
    for outcome in outcomes:
        template = app.contract.template_of(outcome.attack.path)
        if outcome.reply.status == 405 and template is not None:
            allowed = {method.upper() for method in app.contract.doc["paths"][template]}
            if set((outcome.reply.header("Allow") or "").split(", ")) != allowed:
                found.append(f"{outcome.attack.method} {template}: Allow {outcome.reply.header('Allow')!r}")
    assert len(outcomes) == len(targets(app.contract)) * len(METHODS) - len(operations)
    listed = "\n".join(found[:60])
    assert not found, f"{len(found)} problems in {len(outcomes)} requests:\n{listed}"
