"""Which model agents talk to, and what its tokens cost. Pure: built from settings at the edge."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from workers.core.errors import ConfigurationError


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens."""

    input: float
    output: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1_000_000


# List prices (USD per 1M tokens, input/output) of common models when this table was written;
# STREAMDESK_LLM_PRICES overrides or extends it, since prices change and local models are free.
DEFAULT_PRICES: Mapping[str, Price] = MappingProxyType(
    {
        "gpt-4o": Price(2.50, 10.00),
        "gpt-4o-mini": Price(0.15, 0.60),
        "gpt-4.1": Price(2.00, 8.00),
        "gpt-4.1-mini": Price(0.40, 1.60),
        "gpt-4.1-nano": Price(0.10, 0.40),
        "gpt-5": Price(1.25, 10.00),
        "gpt-5-mini": Price(0.25, 2.00),
        "gpt-5-nano": Price(0.05, 0.40),
        "o3": Price(2.00, 8.00),
        "o3-mini": Price(1.10, 4.40),
        "o4-mini": Price(1.10, 4.40),
    }
)


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """An OpenAI-compatible endpoint (OpenAI, vLLM, Ollama...). With no ``base_url`` and no
    ``api_key`` agents fall back to their deterministic built-in rules model."""

    base_url: str = ""
    # Kept out of repr(): a config printed in a log or a traceback must not show the key.
    api_key: str = field(default="", repr=False)
    model: str = ""
    timeout_s: float = 60.0
    max_iterations: int = 8
    prices: Mapping[str, Price] = field(default_factory=dict)
    # The SDK's own retries of one request (connection errors, 429, 5xx), inside one step.
    max_retries: int = 2

    @property
    def configured(self) -> bool:
        return bool((self.base_url or self.api_key) and self.model)

    def price(self, model: str) -> Price | None:
        """The price of ``model``; a dated snapshot (``gpt-4o-mini-2024-07-18``, as APIs
        report it) falls back to the longest listed name it starts with."""
        if model in self.prices:
            return self.prices[model]
        prefixes = [name for name in self.prices if model.startswith(f"{name}-")]
        return self.prices[max(prefixes, key=len)] if prefixes else None

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> float:
        """Estimated cost of one call; a model missing from the price table costs 0."""
        price = self.price(model)
        return price.cost(prompt_tokens, completion_tokens) if price else 0.0


def parse_prices(raw: str, variable: str = "STREAMDESK_LLM_PRICES") -> dict[str, Price]:
    """``"model=in/out,model2=in/out"`` (USD per million tokens) into a price table."""
    prices: dict[str, Price] = {}
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        model, sep, pair = item.partition("=")
        dollars_in, slash, dollars_out = pair.partition("/")
        try:
            if not (sep and slash and model.strip()):
                raise ValueError(item)
            price = Price(float(dollars_in), float(dollars_out))
        except ValueError:
            raise ConfigurationError(
                f"{variable}: {item!r} is not MODEL=INPUT/OUTPUT (USD per 1M tokens), "
                "e.g. gpt-4o-mini=0.15/0.60"
            ) from None
        if price.input < 0 or price.output < 0:
            raise ConfigurationError(f"{variable}: {item!r} has a negative price")
        prices[model.strip()] = price
    return prices


def llm_config_from_env(environ: Mapping[str, str] | None = None) -> LLMConfig:
    """The ``STREAMDESK_LLM_*`` variables (``OPENAI_BASE_URL``/``OPENAI_API_KEY`` as
    fallbacks); a bad value raises ``ConfigurationError`` naming its variable."""
    env = os.environ if environ is None else environ
    base_url = env.get("STREAMDESK_LLM_BASE_URL") or env.get("OPENAI_BASE_URL", "")
    api_key = env.get("STREAMDESK_LLM_API_KEY") or env.get("OPENAI_API_KEY", "")
    model = env.get("STREAMDESK_LLM_MODEL", "").strip()
    # An explicit endpoint without a model is a mistake; an OPENAI_API_KEY left in the
    # environment for other tools is not, so the built-in model stays in use then.
    explicit = env.get("STREAMDESK_LLM_BASE_URL") or env.get("STREAMDESK_LLM_API_KEY")
    if explicit and not model:
        raise ConfigurationError(
            "STREAMDESK_LLM_MODEL: set the model name to use with STREAMDESK_LLM_BASE_URL / "
            "STREAMDESK_LLM_API_KEY (e.g. gpt-4o-mini, or llama3.1 on Ollama)"
        )
    return LLMConfig(
        base_url=base_url.strip(),
        api_key=api_key.strip(),
        model=model,
        timeout_s=_number(env, "STREAMDESK_LLM_TIMEOUT_S", 60.0, float),
        max_iterations=int(_number(env, "STREAMDESK_LLM_MAX_ITERATIONS", 8, int, minimum=1)),
        max_retries=int(_number(env, "STREAMDESK_LLM_MAX_RETRIES", 2, int, minimum=0)),
        prices={**DEFAULT_PRICES, **parse_prices(env.get("STREAMDESK_LLM_PRICES", ""))},
    )


def _number(
    env: Mapping[str, str],
    variable: str,
    default: float,
    kind: type[int] | type[float],
    minimum: float | None = None,
) -> float:
    raw = env.get(variable, "").strip()
    if not raw:
        return default
    try:
        value: float = kind(raw)
    except ValueError:
        noun = "an integer" if kind is int else "a number"
        raise ConfigurationError(f"{variable}: {raw!r} is not {noun}") from None
    if not math.isfinite(value):
        raise ConfigurationError(f"{variable}: {raw!r} is not a finite number")
    if (minimum is None and value <= 0) or (minimum is not None and value < minimum):
        bound = "greater than 0" if minimum is None else f"at least {minimum}"
        raise ConfigurationError(f"{variable}: {raw!r} must be {bound}")
    return value
