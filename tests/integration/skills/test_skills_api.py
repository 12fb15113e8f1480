"""Skills over the Hook API (a real server, replies checked against its OpenAPI document): a
malformed front matter is reported with its reason, and a switch survives a reopen."""

from __future__ import annotations

import tomllib

from tests.integration.hooks.conftest import HookApp
from tests.integration.skills.test_skills_chat import write_skill


def test_skills_and_refused_folders_are_listed_and_a_switch_is_saved_with_the_project(
    hook_app: HookApp,
) -> None:
    root = hook_app.ctrl.paths.project_file.parent
    write_skill(root, "lint", "name: lint\ndescription: Run the linters and fix what they find.", "Use ruff.")
    write_skill(root, "broken", "name: broken\ndescription: [never closed")
    listed = hook_app.call("GET", "/api/skills").body  # read from disk on every GET
    assert [(s["name"], s["scope"], s["enabled"]) for s in listed["skills"]] == [("lint", "project", True)]
    [problem] = listed["problems"]
    assert (problem["name"], problem["kind"]) == ("broken", "bad_yaml")
    assert problem["reason"].startswith("the front matter is not valid YAML at line")
    assert hook_app.ctrl.fields.get("skill_problems") == listed["problems"]

    switched = hook_app.call("PUT", "/api/skills/lint", {"enabled": False})
    assert switched.status == 200 and switched.body["skill"]["enabled"] is False
    assert hook_app.call("PUT", "/api/skills/broken", {"enabled": True}).status == 404  # refused: no switch
    assert hook_app.call("PUT", "/api/skills/lint", {}).status == 400  # 'enabled' is required

    client = hook_app.client()
    assert client.wait_for_task(client.click("btn_save"))["state"] == "done"
    saved = tomllib.loads(hook_app.ctrl.paths.project_file.read_text(encoding="utf-8"))
    assert saved["skills"] == {"disabled": ["lint"]}
