"""The one redactor: whole secrets, their JSON forms and every 12-character piece of a key."""

from __future__ import annotations

import json
import random
import threading

from manual_slop.redaction import (
    MIN_SECRET_CHARS,
    PIECE_CHARS,
    NamedSecret,
    Redactor,
    environment_secrets,
    known_secrets,
)

KEY = "sk-ant-api03-Zq7vW2mXr9Lp4TnB8kYc"
MARK = "[REDACTED:anthropic]"


def redactor() -> Redactor:
    return Redactor([NamedSecret("anthropic", KEY), NamedSecret("hook_token", "short-tk1")])


def test_a_whole_secret_is_replaced_by_its_named_mark() -> None:
    assert redactor().redact(f"key={KEY}\nagain {KEY}.") == f"key={MARK}\nagain {MARK}."


def test_every_piece_of_twelve_characters_counts() -> None:
    r = redactor()
    for start in range(len(KEY) - PIECE_CHARS + 1):
        for end in range(start + PIECE_CHARS, len(KEY) + 1):
            piece = KEY[start:end]
            text = r.redact(f"prefix {piece} suffix")
            assert piece not in text and MARK in text, piece
            assert text.startswith("prefix ") and text.endswith(" suffix")


def test_shorter_pieces_and_ordinary_text_are_left_alone() -> None:
    r = redactor()
    piece = KEY[3 : 3 + PIECE_CHARS - 1]
    assert r.redact(f"a {piece} b") == f"a {piece} b"
    prose = "The quick brown fox jumps over the lazy dog; sk-ant is a prefix."
    assert r.redact(prose) == prose


def test_short_secrets_are_replaced_only_whole() -> None:
    r = redactor()
    assert r.redact("token short-tk1 here") == "token [REDACTED:hook_token] here"
    assert r.redact("short-tk") == "short-tk"


def test_secrets_under_the_minimum_are_ignored() -> None:
    r = Redactor(["", "abc", "x" * (MIN_SECRET_CHARS - 1)])
    assert not r and r.names == []
    assert r.redact("abc xxxxxxx") == "abc xxxxxxx"


def test_two_pieces_side_by_side_or_a_key_inside_a_longer_run_are_one_mark() -> None:
    r = redactor()
    assert r.redact("zz" + KEY + "zz") == f"zz{MARK}zz"
    assert r.redact(KEY[:15] + KEY[10:]) == MARK  # overlapping pieces merge into one span


def test_json_escaped_forms_are_replaced() -> None:
    tricky = 'pa"ss\\word-9876543210'
    r = Redactor([NamedSecret("db", tricky)])
    encoded = json.dumps({"v": tricky})
    assert tricky not in r.redact(encoded) and json.dumps(tricky)[1:-1] not in r.redact(encoded)


def test_redacting_twice_changes_nothing_more() -> None:
    r = redactor()
    once = r.redact(f"{KEY} and {KEY[5:20]}")
    assert r.redact(once) == once


def test_redact_obj_walks_keys_values_lists_and_tuples() -> None:
    r = redactor()
    value = {"a": [KEY, 1, None, {"b": (KEY, 2.5)}], KEY: True, "ok": "plain"}
    redacted = r.redact_obj(value)
    assert redacted == {"a": [MARK, 1, None, {"b": (MARK, 2.5)}], MARK: True, "ok": "plain"}
    assert value["a"][0] == KEY  # the original is not modified
    assert KEY not in json.dumps(redacted)


def test_without_secrets_redact_obj_returns_the_object_itself() -> None:
    value = {"a": ["b"]}
    assert Redactor().redact_obj(value) is value


def test_redact_obj_of_a_clean_value_is_an_equal_copy_or_with_copy_false_the_value() -> None:
    # the clean case is decided on the value's JSON text (issue #22c: a worker's GIL time)
    r = redactor()
    value = {"tickets": [{"id": "T1", "deps": ["T0"], "n": 1, "pair": ("a", 2)}], 3: None}
    copied = r.redact_obj(value)
    assert copied == value and copied is not value
    assert copied["tickets"] is not value["tickets"] and copied["tickets"][0] is not value["tickets"][0]
    assert r.redact_obj(value, copy=False) is value


def test_redact_obj_still_finds_every_secret_the_walk_finds() -> None:
    r = redactor()
    rng = random.Random(22)
    for _ in range(200):  # a piece somewhere in a deep value, a key, a tuple; text around it
        start = rng.randrange(0, len(KEY) - PIECE_CHARS + 1)
        piece = KEY[start : start + PIECE_CHARS + rng.randrange(0, 4)]
        where = rng.randrange(3)
        leaf = f'x\n{piece}\t"y' if where == 0 else piece
        value = {"a": [{"b": (1, leaf if where == 0 else "ok")}], (leaf if where == 1 else "k"): 2}
        value["c"] = [leaf] if where == 2 else []
        for copy in (True, False):
            assert piece not in json.dumps(r.redact_obj(value, copy=copy), ensure_ascii=False), value


def test_a_secret_json_escapes_is_redacted_in_values_too() -> None:
    # a piece holding a quote shows escaped in a value's JSON text: such secrets take the walk
    tricky = 'abc"defghijklmnop'
    r = Redactor([NamedSecret("db", tricky)])
    assert r.redact_obj({"v": ['bc"defghijkl']}, copy=False) == {"v": ["[REDACTED:db]"]}


def test_values_json_cannot_write_are_walked_as_before() -> None:
    r = redactor()

    class Opaque:
        pass

    thing = Opaque()
    value = {"o": thing, "k": KEY, "nan": float("nan")}
    redacted = r.redact_obj(value)
    assert redacted["o"] is thing and redacted["k"] == MARK


def test_random_texts_never_keep_a_piece_of_a_key() -> None:
    rng = random.Random(14)
    r = redactor()
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_ ./\n"
    for _ in range(300):
        start = rng.randrange(0, len(KEY) - PIECE_CHARS + 1)
        piece = KEY[start : rng.randrange(start + PIECE_CHARS, len(KEY) + 1)]
        noise = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 60)))
        cut = rng.randrange(0, len(noise) + 1)
        text = r.redact(noise[:cut] + piece + noise[cut:])
        windows = {KEY[i : i + PIECE_CHARS] for i in range(len(KEY) - PIECE_CHARS + 1)}
        assert not any(window in text for window in windows), text


def test_secrets_can_be_added_while_other_threads_redact() -> None:
    r = Redactor()
    stop = threading.Event()
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            while not stop.is_set():
                r.redact(f"x {KEY} y")
        except BaseException as exc:  # pragma: no cover - the assertion below reports it
            errors.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for index in range(50):
            r.add([NamedSecret(f"k{index}", f"secret-value-{index:04d}-padding")])
    finally:
        stop.set()
        thread.join(5)
    assert not errors and not thread.is_alive()
    assert r.redact("secret-value-0049-padding") == "[REDACTED:k49]"


def test_environment_secrets_take_provider_and_credential_like_variables() -> None:
    environ = {
        "ANTHROPIC_API_KEY": "sk-ant-from-env-1234",
        "MY_SERVICE_TOKEN": "tok-abcdefgh-12345",
        "DB_PASSWORD": "hunter2hunter2",
        "TOKENIZERS_PARALLELISM": "false",  # named like a credential, too short to be one
        "HOME": "/root/some/long/path/value",
        "GOOGLE_APPLICATION_CREDENTIALS": "/",  # an existing path names a secret; it is not one
    }
    names = {s.name for s in environment_secrets(environ, ["ANTHROPIC_API_KEY"])}
    assert names == {"ANTHROPIC_API_KEY", "MY_SERVICE_TOKEN", "DB_PASSWORD", "TOKENIZERS_PARALLELISM"}
    assert Redactor(environment_secrets(environ)).redact("false") == "false"


def test_known_secrets_name_every_source() -> None:
    secrets = known_secrets(
        [("anthropic.api_key", "sk-file-key-000000"), ("custom.token", "zzzzzzzzzzzz")],
        {"ANTHROPIC_API_KEY": "sk-env-key-1111111"},
        ["ANTHROPIC_API_KEY"],
        "hook-token-value-abc",
    )
    assert [(s.name, s.value) for s in secrets] == [
        ("credentials.anthropic.api_key", "sk-file-key-000000"),
        ("credentials.custom.token", "zzzzzzzzzzzz"),
        ("ANTHROPIC_API_KEY", "sk-env-key-1111111"),
        ("hook_token", "hook-token-value-abc"),
    ]


def test_a_stream_redacted_chunk_by_chunk_is_redacted_like_the_whole() -> None:
    key = "sk-ant-" + "Q7w2E9r4T6y1U3i5O8p0" * 2
    redactor = Redactor([NamedSecret("ANTHROPIC_API_KEY", key)])
    text = "head " + "prose " * 500 + f"the key is {key} and again {key[:20]}|{key[20:]} end"
    for size in (1, 3, 7, 64):
        shown = ""
        for start in range(0, len(text), size):
            shown = redactor.redact_appended(shown, text[start : start + size])
        assert key[:12] not in shown and key[-12:] not in shown, size
        assert shown.startswith("head prose") and shown.endswith(" end")
        assert "[REDACTED:ANTHROPIC_API_KEY]" in shown
    assert Redactor().redact_appended("a", "b") == "ab"


def test_the_ascii_escaped_form_of_a_non_ascii_secret_is_redacted_in_values_too() -> None:
    # "\u00e9...\u00e8" as literal text: in a value's JSON text each backslash is doubled, so the
    # escaped form is not found there; such secrets take the walk, which finds it
    secret = "p\u00e9ss-word-\u00e8-0123456789"
    r = Redactor([NamedSecret("db", secret)])
    escaped = json.dumps(secret)[1:-1]  # p\u00e9ss-word-\u00e8-0123456789
    for copy in (True, False):
        redacted = r.redact_obj({"log": [f"sent {escaped} to the server"]}, copy=copy)
        assert escaped not in json.dumps(redacted) and "[REDACTED:db]" in redacted["log"][0]
