"""Which model agents talk to, and what its tokens cost. Pure: built from settings at the edge."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens."""

    input: float
    output: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1_000_000


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """An OpenAI-compatible endpoint (OpenAI, vLLM, Ollama...). With no ``base_url`` and no
    ``api_key`` agents fall back to their deterministic built-in rules model."""

    base_url: str = ""
    api_key: str = ""
    model: str = ""
    timeout_s: float = 60.0
    max_iterations: int = 8
    prices: Mapping[str, Price] = field(default_factory=dict)

    @property
    def configured(self) -> bool:
        return bool((self.base_url or self.api_key) and self.model)

    def cost(self, model: str, prompt_tokens: int, completion_tokens: int) -> float:
        """Estimated cost of one call; a model missing from the price table costs 0."""
        price = self.prices.get(model)
        return price.cost(prompt_tokens, completion_tokens) if price else 0.0
