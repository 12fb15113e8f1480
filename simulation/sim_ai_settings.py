"""sim_ai_settings: switch providers and models, change parameters, and find them all
again after a restart of the app.

Three scripted providers: an OpenAI-compatible server (the starting one), an
Anthropic server and the mock ``gemini`` CLI. Every switch is proved by a send: the
answer comes from the provider the user picked, which received the model and
parameters the user set (read from the request the fake recorded). Then the app is
stopped with ``/api/shutdown`` and started again on the same files: provider, model,
parameters and each provider's own model and URL are back, and a send still works.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from simulation.sim_base import BaseSimulation

__all__ = ["AISettingsSimulation"]

TUNED = {"temperature": 0.7, "top_p": 0.9, "max_tokens": 512}
PROMPT = "Answer in French."
ANTHROPIC_MODEL = "claude-sim-2"


class AISettingsSimulation(BaseSimulation):
    name = "ai_settings"
    title = "switch providers and models, change parameters, all kept across a restart"
    extra_providers = {"anthropic": "claude-sim", "gemini_cli": "gemini-sim"}
    turn_file = "ai_settings.toml"

    def setup(self) -> None:
        with self.step("write the project: a README"):
            self.write_file("README.md", "# Demo\n")
            self.set_field("project_files", ["README.md"])
        for field, value in (
            ("temperature", 0.0),
            ("top_p", 1.0),
            ("max_tokens", 8192),
            ("system_prompt", ""),
        ):
            self.set_field(field, value)  # known starting values, also on an attached app

    def answer(self, provider: str, group: str) -> dict[str, Any]:
        fake = self.fakes[provider]
        fake.push_group(group)
        before = fake.call_count()
        response = self.send(f"Say hello ({group}).")
        self.expect_equal(response["status"], "done", "the request finished")
        self.expect_equal(fake.call_count(), before + 1, f"the {provider} fake answered it")
        self.expect_equal(response["text"], fake.script.group(group)[0].text, "its answer is shown")
        return fake.model_calls()[-1].body if fake.model_calls() else {}

    def run(self) -> None:
        with self.step("send with the starting provider"):
            body = self.answer("openai_compatible", "openai")
            self.expect_equal(body.get("model"), "sim-model", "the request named the configured model")
            comms = self.client.comms(0, 1000)["entries"]
            self.check(
                any(e.get("kind") == "response" and e.get("provider") == "openai_compatible" for e in comms),
                "the Comms Log shows the response from openai_compatible",
            )
        with self.step("change temperature, top_p, max_tokens and the system prompt"):
            for field, value in TUNED.items():
                self.set_field(field, value)
            self.set_field("system_prompt", PROMPT)
            body = self.answer("openai_compatible", "openai_tuned")
            sent = {key: body.get(key) for key in TUNED}
            self.expect_equal(sent, TUNED, "the request carried the new parameters")
            self.check(PROMPT in str(body.get("messages", [])[:1]), "the system message carries the prompt")
        with self.step("fetch the model list and pick another model"):
            self.user.click("btn_fetch_models")
            models = self.wait_for(
                "available_models lists the server's models",
                lambda: self.client.get_value("available_models"),
                lambda v: v == ["sim-model", "sim-model-large"],
            )
            self.set_field("current_model", models[1])
            body = self.answer("openai_compatible", "openai_large")
            self.expect_equal(body.get("model"), "sim-model-large", "the request named the chosen model")
        with self.step("switch to Anthropic and pick its model"):
            self.switch_provider("anthropic")
            self.expect_equal(
                self.client.get_value("current_model"), "claude-sim", "Anthropic's own model shows"
            )
            self.expect_equal(
                self.client.get_value("provider_base_url"),
                self.fakes["anthropic"].base_url,
                "Anthropic's own endpoint shows",
            )
            self.set_field("current_model", ANTHROPIC_MODEL)
            if self.app is not None:  # the key is in the launched app's environment
                body = self.answer("anthropic", "anthropic")
                self.expect_equal(body.get("model"), ANTHROPIC_MODEL, "Anthropic got the chosen model")
                self.expect_equal(body.get("max_tokens"), TUNED["max_tokens"], "and the max_tokens setting")
                self.check(PROMPT in str(body.get("system")), "and the system prompt")
            else:
                self.note("attached: no send to Anthropic (the attached app may have no Anthropic key)")
        if self.app is not None:
            with self.step("switch to the Gemini CLI"):
                self.switch_provider("gemini_cli")
                self.expect_equal(self.client.get_value("current_model"), "gemini-sim", "its own model shows")
                self.answer("gemini_cli", "gemini_cli")
                call = self.fakes["gemini_cli"].cli_calls()[-1]
                argv = call["argv"]
                self.expect_equal(argv[argv.index("-m") + 1], "gemini-sim", "the CLI was run with that model")
                self.check(call.get("has_key") is True, "the CLI got the key from the app's environment")
                calls = self.log_entries("clicalls")
                self.check(any("gemini" in str(c.get("command")) for c in calls), "clicalls.log has the call")
        else:
            self.note("attached: the Gemini CLI part needs providers.gemini_cli.binary (run with --launch)")
        with self.step("back to OpenAI-compatible: it kept its model"):
            self.switch_provider("openai_compatible") if self.app is not None else self.user.set(
                "current_provider", "openai_compatible"
            )
            self.expect_equal(
                self.client.get_value("current_model"), "sim-model-large", "its model is remembered"
            )
            self.switch_provider("anthropic") if self.app is not None else self.user.set(
                "current_provider", "anthropic"
            )
            self.expect_equal(self.client.get_value("current_model"), ANTHROPIC_MODEL, "so is Anthropic's")

    def verify(self) -> None:
        if self.app is None:
            self.note("attached: persistence across a restart needs an app the harness launched")
            return
        with self.step("restart the app (clean stop, start on the same files)"):
            self.restart_app()
            state = self.client.state()
            self.expect_equal(state["current_provider"], "anthropic", "the provider survived the restart")
            self.expect_equal(state["current_model"], ANTHROPIC_MODEL, "the model survived")
            self.expect_equal({k: state[k] for k in TUNED}, TUNED, "the parameters survived")
            self.expect_equal(state["system_prompt"], PROMPT, "the system prompt survived")
            self.expect_equal(
                state["provider_base_url"], self.fakes["anthropic"].base_url, "the endpoint survived"
            )
        with self.step("config.toml on disk holds the choices"):
            config = tomllib.loads((self.app.config_file).read_text(encoding="utf-8"))
            self.expect_equal(
                (config["ai"]["provider"], config["ai"]["model"]), ("anthropic", ANTHROPIC_MODEL), "[ai]"
            )
            self.expect_equal(
                config["providers"]["openai_compatible"]["model"],
                "sim-model-large",
                "[providers.openai_compatible] model",
            )
            project = tomllib.loads(Path(self.client.get_value("project_file")).read_text(encoding="utf-8"))
            self.expect_equal(project["project"]["system_prompt"], PROMPT, "the project keeps the prompt")
        with self.step("after the restart a send still reaches the chosen provider"):
            body = self.answer("anthropic", "after_restart")
            self.expect_equal(body.get("model"), ANTHROPIC_MODEL, "with the chosen model")
            self.user.set("current_provider", "openai_compatible")
            self.expect_equal(
                self.client.get_value("current_model"),
                "sim-model-large",
                "each provider's model survived too",
            )
