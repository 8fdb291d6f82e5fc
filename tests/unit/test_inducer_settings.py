"""Choosing the inducer: the settings that turn a model on (one environment variable), validated once, and the
composition root's `build_inducer`."""

from __future__ import annotations

import pytest

from rearview.adapters.bedrock_inducer import BedrockInducer
from rearview.bootstrap import build_inducer
from rearview.errors import ConfigurationError
from rearview.settings import OpenAISettings, Settings

pytestmark = pytest.mark.unit

# The tests that need the OpenAI adapter import it themselves: the openai SDK takes a second to import, which
# every test process would pay at collection.


def test_the_rules_are_the_default_and_need_no_inducer_built() -> None:
    settings = Settings()

    assert settings.inducer == "rules"
    assert build_inducer(settings) is None


def test_one_variable_turns_on_a_local_ollama_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REARVIEW_INDUCER", "openai")
    monkeypatch.setenv("REARVIEW_OPENAI__MODEL", "llama3.1")

    from rearview.adapters.openai_inducer import OpenAICompatibleInducer

    inducer = build_inducer(Settings())

    assert isinstance(inducer, OpenAICompatibleInducer)
    assert inducer.name == "openai:llama3.1"
    assert str(inducer.client.base_url) == "http://127.0.0.1:11434/v1/"
    assert inducer.client.api_key == "ollama"


def test_the_openai_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REARVIEW_OPENAI__BASE_URL", "https://api.openai.com/v1/")
    monkeypatch.setenv("REARVIEW_OPENAI__API_KEY", "sk-live")
    monkeypatch.setenv("REARVIEW_OPENAI__TIMEOUT_SECONDS", "20")
    from rearview.adapters.openai_inducer import MAX_ANSWER_TOKENS, OpenAICompatibleInducer

    inducer = OpenAICompatibleInducer(Settings().openai)

    assert str(inducer.client.base_url) == "https://api.openai.com/v1/"
    assert inducer.client.api_key == "sk-live" and inducer.client.timeout == 20.0
    assert inducer.max_tokens == MAX_ANSWER_TOKENS  # a constant: an answer's size is the prompt's, not the user's


@pytest.mark.parametrize("url", ["127.0.0.1:11434/v1", "ftp://models.internal/v1", ""])
def test_a_base_url_that_is_not_http_is_a_configuration_error_naming_the_field(url: str) -> None:
    with pytest.raises(ConfigurationError, match="openai.base_url") as raised:
        OpenAISettings(base_url=url)

    assert raised.value.field == "openai.base_url"


def test_bedrock_states_with_the_configured_induction_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REARVIEW_INDUCER", "bedrock")
    monkeypatch.setenv("REARVIEW_AWS__REGION", "eu-central-1")
    monkeypatch.setenv("REARVIEW_AWS__BEDROCK_INDUCTION_MODEL", "eu.anthropic.claude-3-5-haiku-20241022-v1:0")

    inducer = build_inducer(Settings())

    assert isinstance(inducer, BedrockInducer)
    assert inducer.name == "bedrock:eu.anthropic.claude-3-5-haiku-20241022-v1:0"
    assert inducer.client.meta.region_name == "eu-central-1"


def test_the_default_bedrock_induction_model_is_claude_haiku() -> None:
    assert Settings().aws.bedrock_induction_model == "anthropic.claude-3-5-haiku-20241022-v1:0"
