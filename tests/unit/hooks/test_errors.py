"""Error replies map to one exception class per code, on both sides of the wire."""

from __future__ import annotations

from manual_slop.hooks import errors


def test_every_code_has_its_class_and_round_trips() -> None:
    classes = errors.HookApiError.__subclasses__()
    assert sorted(str(c.code) for c in classes) == sorted(str(c) for c in errors.ErrorCode)
    for cls in classes:
        body = cls("why").to_body()
        again = errors.error_for(cls.status, body["error"]["code"], body["error"]["message"])
        assert type(again) is cls and str(again) == "why"


def test_unknown_codes_fall_back_to_the_status() -> None:
    assert type(errors.error_for(404, "weird", "m")) is errors.NotFound
    odd = errors.error_for(418, None, "teapot")
    assert type(odd) is errors.HookApiError and odd.status == 418


def test_wait_timeouts_are_timeout_errors() -> None:
    assert issubclass(errors.HookWaitTimeout, TimeoutError)
    assert issubclass(errors.HookWaitTimeout, errors.HookError)
