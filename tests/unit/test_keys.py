"""Key names built by ``workers.core.keys.Keys``: the names other modules and the docs rely on."""

from __future__ import annotations

from workers.core.keys import Keys, slot_tag


def test_budget_keys_share_one_cluster_slot() -> None:
    keys = Keys("sd:")
    assert keys.budget("github") == "sd:budget:{github}"
    assert keys.budget_held("github") == "sd:budget:{github}:held"
    assert slot_tag(keys.budget("github")) == slot_tag(keys.budget_held("github")) == "github"


def test_channels_prefix_is_under_the_key_prefix() -> None:
    assert Keys().channels == "streamdesk:channels"
    assert Keys("sd:").channels == "sd:channels"
