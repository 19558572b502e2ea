"""``STREAMDESK_CONSUMER_PRUNE_S``: how long a ghost consumer is kept (issue 14 item 6)."""

from __future__ import annotations

import pytest

from workers.core.config import EngineConfig, options_from_env
from workers.core.errors import ConfigurationError


def test_consumer_prune_time_is_an_hour_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STREAMDESK_CONSUMER_PRUNE_S", raising=False)
    assert EngineConfig.from_mapping(options_from_env()).consumer_prune_s == 3600


@pytest.mark.parametrize(("raw", "seconds"), [("0", 0), ("90", 90)])
def test_consumer_prune_time_from_env(
    monkeypatch: pytest.MonkeyPatch, raw: str, seconds: int
) -> None:
    monkeypatch.setenv("STREAMDESK_CONSUMER_PRUNE_S", raw)
    assert EngineConfig.from_mapping(options_from_env()).consumer_prune_s == seconds


@pytest.mark.parametrize("raw", ["-1", "soon"])
def test_consumer_prune_time_refuses_nonsense(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("STREAMDESK_CONSUMER_PRUNE_S", raw)
    with pytest.raises(ConfigurationError, match=r"(?i)consumer_prune_s"):
        EngineConfig.from_mapping(options_from_env())
