"""A real HookServer on a free port, with the headless ticker running, and a checker that
validates every reply against the OpenAPI document the server itself serves."""

from __future__ import annotations

import http.client
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate as validate_openapi
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from manual_slop.ai import AIClient, RetryPolicy
from manual_slop.controller import AppController
from manual_slop.headless import HeadlessTicker
from manual_slop.hooks import ApiHookClient, HookServer
from manual_slop.hooks.guard import BODY_METHODS

DOC_URI = "urn:manual-slop:hook-api"
_VALID_DOCS: set[str] = set()


class Contract:
    """The served OpenAPI document as a reply checker."""

    def __init__(self, doc: dict[str, Any]) -> None:
        text = json.dumps(doc, sort_keys=True)
        if text not in _VALID_DOCS:  # validating takes ~0.5 s; the document rarely changes
            validate_openapi(doc)  # a valid OpenAPI 3.1 document in the first place
            _VALID_DOCS.add(text)
        self.doc = doc
        resource = Resource.from_contents(doc, default_specification=DRAFT202012)
        self._registry = Registry().with_resource(DOC_URI, resource)
        self._validators: dict[str, Draft202012Validator] = {}
        self._paths = [
            (re.compile(re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(template)) + r"\Z"), template)
            for template in doc["paths"]
        ]
        self.seen: set[tuple[str, str, int]] = set()
        self._lock = threading.Lock()

    def operations(self) -> set[tuple[str, str]]:
        return {(m.upper(), p) for p, item in self.doc["paths"].items() for m in item}

    def template_of(self, path: str) -> str | None:
        plain = unquote(urlsplit(path).path)
        return next((t for regex, t in self._paths if regex.match(plain)), None)

    def validator(self, ref: str) -> Draft202012Validator:
        with self._lock:
            if ref not in self._validators:
                self._validators[ref] = Draft202012Validator({"$ref": DOC_URI + ref}, registry=self._registry)
            return self._validators[ref]

    def check(self, method: str, path: str, status: int, body: Any) -> None:
        """Fail unless ``status`` is documented for the operation and ``body`` fits its schema."""
        template = self.template_of(path)
        operation = self.doc["paths"][template].get(method.lower()) if template else None
        if operation is None:  # not an operation: only the routing and transport errors exist
            assert status in (400, 401, 403, 404, 405, 413, 415, 431), (
                f"{method} {path}: status {status} off the document"
            )
            ref = "#/components/schemas/Error"
        else:
            responses = operation["responses"]
            documented = list(responses)
            assert str(status) in documented, f"{method} {template}: {status} not in {documented}"
            ref = responses[str(status)]["content"]["application/json"]["schema"]["$ref"]
        errors = sorted(self.validator(ref).iter_errors(body), key=str)
        assert not errors, f"{method} {path} {status}: reply does not match {ref}: {errors[0].message}"
        with self._lock:
            self.seen.add((method, template or "?", status))


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: Any


@dataclass
class HookApp:
    ctrl: AppController
    server: HookServer
    contract: Contract
    token: str = ""
    clients: list[ApiHookClient] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.server.url

    def client(self, token: str | None = None, timeout: float = 10.0) -> ApiHookClient:
        """An ApiHookClient whose every reply is checked against the contract."""
        made = ApiHookClient(
            self.url, self.token if token is None else token, timeout, on_reply=self.contract.check
        )
        self.clients.append(made)
        return made

    def call(self, method: str, path: str, body: Any = None, **options: Any) -> Reply:
        """One request on a fresh connection; the reply is checked against the contract."""
        return raw_call(self, method, path, body, **options)


def raw_call(
    app: HookApp,
    method: str,
    path: str,
    body: Any = None,
    *,
    raw: bytes | None = None,
    headers: dict[str, str] | None = None,
    auth: bool = True,
    timeout: float = 10.0,
    check: bool = True,
) -> Reply:
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    sent = dict(headers or {})
    if auth and app.token:
        sent.setdefault("Authorization", f"Bearer {app.token}")
    if method in BODY_METHODS:
        sent.setdefault("Content-Type", "application/json")
    conn = http.client.HTTPConnection("127.0.0.1", app.server.port, timeout=timeout)
    try:
        conn.request(method, path, body=data, headers=sent)
        response = conn.getresponse()
        content = response.read()
        reply_headers = {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()
    assert reply_headers.get("content-type", "").startswith("application/json"), reply_headers
    assert method == "HEAD" or int(reply_headers["content-length"]) == len(content)
    parsed = json.loads(content) if method != "HEAD" else None
    if check and method != "HEAD":
        app.contract.check(method, path, response.status, parsed)
    return Reply(response.status, reply_headers, parsed)


HookAppFactory = Callable[..., HookApp]


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(0.01)


def deepseek_app(factory: HookAppFactory, base_url: str) -> tuple[HookApp, ApiHookClient]:
    """An app whose real AI client talks, as DeepSeek, to the fake OpenAI-compatible server at
    ``base_url`` (fast retries); and a client of it."""
    app = factory(
        backend=AIClient(retry=RetryPolicy(base_delay_s=0.01)), environ={"DEEPSEEK_API_KEY": "sk-test"}
    )
    api = app.client()
    for name, value in (("current_provider", "deepseek"), ("provider_base_url", base_url)):
        api.wait_for_task(api.set_value(name, value))
    return app, api


@pytest.fixture
def hook_app_factory(make_controller) -> Iterator[HookAppFactory]:
    """Start controller + ticker + server; everything is stopped and joined afterwards."""
    started: list[tuple[HookApp, threading.Thread]] = []

    def factory(
        token: str | None = None, main_timeout: float = 5.0, ticker: bool = True, **controller_kwargs: Any
    ) -> HookApp:
        """``token=None``: the controller's own (generated) token, as the app runs by default."""
        ctrl = make_controller(**controller_kwargs)
        server = HookServer(ctrl, "127.0.0.1", 0, token, main_timeout=main_timeout).start()
        token = server.token
        thread = threading.Thread(target=HeadlessTicker(ctrl).run, name="test-ticker", daemon=True)
        if ticker:
            thread.start()
        doc = raw_call(
            HookApp(ctrl, server, None, token),  # type: ignore[arg-type]
            "GET",
            "/openapi.json",
            check=False,
        ).body
        app = HookApp(ctrl, server, Contract(doc), token)
        started.append((app, thread))
        return app

    yield factory
    for app, thread in started:
        for client in app.clients:
            client.close()
        assert app.server.stop() == []
        app.ctrl.request_stop()
        if thread.is_alive():
            thread.join(5)
        assert not thread.is_alive()


@pytest.fixture
def hook_app(hook_app_factory: HookAppFactory) -> HookApp:
    return hook_app_factory()
