from __future__ import annotations

import pytest

from workers.core.config import EngineConfig, options_from_env
from workers.core.errors import ConfigurationError, RedisTooOld
from workers.redis.connection import check_version


def test_claim_idle_must_outlast_the_lease() -> None:
    with pytest.raises(ConfigurationError, match="must be longer than lease_ms"):
        EngineConfig(claim_idle_ms=1000, lease_ms=1000)


def test_unknown_option_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="unknown STREAMDESK option"):
        EngineConfig.from_mapping({"concurency": 3})


def test_overrides_win_and_none_means_unset() -> None:
    cfg = EngineConfig.from_mapping({"concurrency": 3}, concurrency=None, group="g")
    assert (cfg.concurrency, cfg.group) == (3, "g")


def test_dead_letter_stream_is_not_consumable() -> None:
    with pytest.raises(ConfigurationError):
        EngineConfig(stream="streamdesk:events:dead")


def test_old_redis_is_refused_with_a_clear_message() -> None:
    with pytest.raises(RedisTooOld, match=r"needs Redis >= 6.2 .* redis 6.0.16"):
        check_version({"redis_version": "6.0.16"})


def test_valkey_and_redis_62_are_accepted() -> None:
    assert check_version({"redis_version": "7.2.4", "valkey_version": "8.1.1"}) == "valkey 8.1.1"
    assert check_version({"redis_version": "6.2.0"}) == "redis 6.2.0"


@pytest.mark.parametrize(("raw", "on"), [("0", False), ("off", False), ("1", True), ("TRUE", True)])
def test_timeline_option_from_env(monkeypatch: pytest.MonkeyPatch, raw: str, on: bool) -> None:
    monkeypatch.setenv("STREAMDESK_TIMELINE", raw)
    assert options_from_env()["timeline"] is on


def test_timeline_is_on_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STREAMDESK_TIMELINE", raising=False)
    assert "timeline" not in options_from_env() and EngineConfig().timeline


def test_timeline_option_refuses_nonsense(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMDESK_TIMELINE", "maybe")
    with pytest.raises(ConfigurationError, match="STREAMDESK_TIMELINE must be on or off"):
        options_from_env()
