from __future__ import annotations

import pytest

from manual_slop.schema import Field, FieldError, get_path, normalize, set_path

SCHEMA = {
    "ai.temperature": Field(float, 0.0, minimum=0.0, maximum=2.0),
    "ai.max_tokens": Field(int, 8192, minimum=1),
    "ai.provider": Field(str, "local", choices=("local", "gemini")),
    "ai.stream": Field(bool, False),
    "files.paths": Field(list, [], items=str),
    "gui.windows": Field(dict, {"A": True}, values=bool),
    "net.url": Field(str, "", pattern=r"|https?://\S+", pattern_doc="'' or a URL"),
}


def test_missing_keys_get_private_copies_of_defaults() -> None:
    data, problems = normalize({}, SCHEMA, "x.toml")
    assert problems == []
    assert get_path(data, "ai.temperature") == 0.0
    data["files"]["paths"].append("a")
    again, _ = normalize({}, SCHEMA, "x.toml")
    assert again["files"]["paths"] == []


def test_int_is_accepted_for_float_but_bool_is_not_a_number() -> None:
    assert SCHEMA["ai.temperature"].check("t", 1) == 1.0
    with pytest.raises(FieldError):
        SCHEMA["ai.temperature"].check("t", True)
    with pytest.raises(FieldError):
        SCHEMA["ai.max_tokens"].check("m", True)
    with pytest.raises(FieldError):
        SCHEMA["ai.stream"].check("s", 1)
    with pytest.raises(FieldError):
        SCHEMA["ai.temperature"].check("t", float("nan"))


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("ai.temperature", "hot", "number between 0 and 2"),
        ("ai.temperature", 5, "number between 0 and 2"),
        ("ai.max_tokens", 0, "integer >= 1"),
        ("ai.provider", "nope", "one of 'local', 'gemini'"),
        ("files.paths", ["a", 3], "list of strings"),
        ("gui.windows", {"A": "yes"}, "table of booleans"),
        ("net.url", "ftp://x", "string ('' or a URL)"),
    ],
)
def test_bad_values_name_file_key_and_expected_type(key: str, value: object, expected: str) -> None:
    raw: dict = {}
    set_path(raw, key, value)
    data, problems = normalize(raw, SCHEMA, "config.toml")
    assert len(problems) == 1
    text = str(problems[0])
    assert text.startswith(f"config.toml: {key}: expected {expected}")
    assert get_path(data, key) == SCHEMA[key].default


def test_unknown_keys_are_kept_and_reported_as_info() -> None:
    data, problems = normalize({"ai": {"temprature": 1.0}, "extra": {"x": 1}}, SCHEMA, "c.toml")
    assert data["ai"]["temprature"] == 1.0 and data["extra"] == {"x": 1}
    assert {p.key for p in problems} == {"ai.temprature", "extra.x"}
    assert all(p.severity == "info" for p in problems)


def test_free_form_table_keys_are_not_unknown() -> None:
    _, problems = normalize({"gui": {"windows": {"Custom": False}}}, SCHEMA, "c.toml")
    assert problems == []


def test_scalar_where_a_table_belongs_is_reported_once() -> None:
    data, problems = normalize({"ai": "oops"}, SCHEMA, "c.toml")
    assert [p.key for p in problems] == ["ai"]
    assert "expected a table" in problems[0].message
    assert data["ai"]["max_tokens"] == 8192
