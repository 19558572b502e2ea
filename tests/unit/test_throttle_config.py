"""The sign-in throttle's limits from the environment (console/edge/throttle.py)."""

from __future__ import annotations

import pytest

from console.edge.throttle import ThrottleConfig, minutes, too_many
from workers.core.errors import ConfigurationError


def test_throttle_config_defaults() -> None:
    assert ThrottleConfig.from_env({}) == ThrottleConfig(per_user=5, per_address=20, window_s=900)


def test_throttle_config_from_env() -> None:
    env = {
        "STREAMDESK_LOGIN_FAILURES_PER_USER": "3",
        "STREAMDESK_LOGIN_FAILURES_PER_ADDRESS": "50",
        "STREAMDESK_LOGIN_WINDOW_S": "3600",
    }
    assert ThrottleConfig.from_env(env) == ThrottleConfig(3, 50, 3600)


@pytest.mark.parametrize("value", ["0", "-1", "five", "1.5"])
def test_throttle_config_bad_value_names_the_variable(value: str) -> None:
    with pytest.raises(ConfigurationError, match="STREAMDESK_LOGIN_WINDOW_S"):
        ThrottleConfig.from_env({"STREAMDESK_LOGIN_WINDOW_S": value})


def test_throttle_message_rounds_up_to_minutes() -> None:
    assert minutes(1) == 1 and minutes(61) == 2
    assert too_many(60) == "Too many failed sign-in attempts: try again in 1 minute."
