"""The LLM configuration from the environment, and the price table."""

from __future__ import annotations

import pytest

from workers.core.errors import ConfigurationError
from workers.runtime.llm.config import (
    DEFAULT_PRICES,
    LLMConfig,
    Price,
    llm_config_from_env,
    parse_prices,
)


def test_from_env_without_variables_is_not_configured() -> None:
    config = llm_config_from_env({})
    assert not config.configured
    assert (config.timeout_s, config.max_iterations, config.max_retries) == (60.0, 8, 2)
    assert config.prices == dict(DEFAULT_PRICES)


def test_from_env_reads_every_variable() -> None:
    config = llm_config_from_env(
        {
            "STREAMDESK_LLM_BASE_URL": "http://127.0.0.1:11434/v1",
            "STREAMDESK_LLM_API_KEY": "sk-test",
            "STREAMDESK_LLM_MODEL": "llama3.1",
            "STREAMDESK_LLM_TIMEOUT_S": "12.5",
            "STREAMDESK_LLM_MAX_ITERATIONS": "3",
            "STREAMDESK_LLM_MAX_RETRIES": "0",
            "STREAMDESK_LLM_PRICES": "llama3.1=0/0, gpt-4o-mini=1/2",
        }
    )
    assert config.configured
    assert (config.base_url, config.api_key, config.model) == (
        "http://127.0.0.1:11434/v1",
        "sk-test",
        "llama3.1",
    )
    assert (config.timeout_s, config.max_iterations, config.max_retries) == (12.5, 3, 0)
    assert config.prices["llama3.1"] == Price(0, 0)
    # The variable overrides the built-in table and keeps the rest of it.
    assert config.prices["gpt-4o-mini"] == Price(1, 2)
    assert config.prices["gpt-4o"] == DEFAULT_PRICES["gpt-4o"]


def test_from_env_falls_back_to_openai_variables() -> None:
    config = llm_config_from_env(
        {
            "OPENAI_BASE_URL": "https://proxy.example/v1",
            "OPENAI_API_KEY": "sk-openai",
            "STREAMDESK_LLM_MODEL": "gpt-4o-mini",
        }
    )
    assert (config.base_url, config.api_key) == ("https://proxy.example/v1", "sk-openai")


def test_from_env_prefers_streamdesk_variables() -> None:
    config = llm_config_from_env(
        {
            "OPENAI_API_KEY": "sk-openai",
            "STREAMDESK_LLM_API_KEY": "sk-streamdesk",
            "STREAMDESK_LLM_MODEL": "gpt-4o",
        }
    )
    assert config.api_key == "sk-streamdesk"


def test_from_env_openai_key_without_model_keeps_the_builtin_model() -> None:
    assert not llm_config_from_env({"OPENAI_API_KEY": "sk-openai"}).configured


def test_from_env_explicit_endpoint_without_model_is_an_error() -> None:
    with pytest.raises(ConfigurationError, match="STREAMDESK_LLM_MODEL"):
        llm_config_from_env({"STREAMDESK_LLM_BASE_URL": "http://127.0.0.1:8000/v1"})


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("STREAMDESK_LLM_TIMEOUT_S", "soon"),
        ("STREAMDESK_LLM_TIMEOUT_S", "0"),
        ("STREAMDESK_LLM_TIMEOUT_S", "nan"),
        ("STREAMDESK_LLM_MAX_ITERATIONS", "2.5"),
        ("STREAMDESK_LLM_MAX_ITERATIONS", "0"),
        ("STREAMDESK_LLM_MAX_RETRIES", "-1"),
        ("STREAMDESK_LLM_PRICES", "gpt-4o=2.5"),
    ],
)
def test_from_env_bad_value_names_its_variable(variable: str, value: str) -> None:
    with pytest.raises(ConfigurationError, match=variable):
        llm_config_from_env({variable: value})


def test_parse_prices_reads_pairs_and_skips_empty_items() -> None:
    assert parse_prices("a=1/2,, b = 0.5/1.25 ,") == {"a": Price(1, 2), "b": Price(0.5, 1.25)}


@pytest.mark.parametrize("raw", ["a", "a=1", "=1/2", "a=x/2", "a=1/-2"])
def test_parse_prices_rejects_malformed_items(raw: str) -> None:
    with pytest.raises(ConfigurationError, match="STREAMDESK_LLM_PRICES"):
        parse_prices(raw)


def test_cost_is_per_million_tokens() -> None:
    config = LLMConfig(prices={"m": Price(2.0, 10.0)})
    assert config.cost("m", 1_000_000, 100_000) == pytest.approx(3.0)


def test_cost_of_an_unlisted_model_is_zero() -> None:
    assert LLMConfig(prices={"m": Price(2.0, 10.0)}).cost("other", 1000, 1000) == 0.0


def test_cost_of_a_dated_snapshot_uses_the_longest_listed_prefix() -> None:
    config = LLMConfig(prices={"gpt-4o": Price(2.5, 10), "gpt-4o-mini": Price(0.15, 0.6)})
    assert config.price("gpt-4o-mini-2024-07-18") == Price(0.15, 0.6)
    assert config.price("gpt-4o-2024-08-06") == Price(2.5, 10)
    # A prefix counts only up to a dash: "gpt-4" is not "gpt-4o".
    assert LLMConfig(prices={"gpt-4": Price(30, 60)}).price("gpt-4o") is None


def test_config_repr_hides_the_api_key() -> None:
    from workers.runtime.llm.config import LLMConfig

    config = LLMConfig(base_url="http://127.0.0.1:1/v1", api_key="sk-very-secret", model="m")
    assert "sk-very-secret" not in repr(config) and "sk-very-secret" not in str(config)
