"""Key names built by ``workers.core.keys.Keys``: the names other modules and the docs rely on."""

from __future__ import annotations

from workers.core.keys import Keys, deferred_entries, slot_tag


def test_budget_keys_share_one_cluster_slot() -> None:
    keys = Keys("sd:")
    assert keys.budget("github") == "sd:budget:{github}"
    assert keys.budget_held("github") == "sd:budget:{github}:held"
    assert slot_tag(keys.budget("github")) == slot_tag(keys.budget_held("github")) == "github"


def test_channels_prefix_is_under_the_key_prefix() -> None:
    assert Keys().channels == "streamdesk:channels"
    assert Keys("sd:").channels == "sd:channels"


def test_keyed_budget_buckets_each_have_their_own_slot() -> None:
    keys = Keys("sd:")
    assert keys.budget("github:42") == "sd:budget:{github:42}"
    assert slot_tag(keys.budget_held("github:42")) == "github:42"
    assert slot_tag(keys.budget_keys("github")) == "github"


def test_deferred_entries_share_their_streams_slot() -> None:
    partition = "streamdesk:{events:3}"
    assert deferred_entries(partition, "agents") == "streamdesk:{events:3}:deferred:agents"
    assert slot_tag(deferred_entries(partition, "agents")) == slot_tag(partition)
    # A stream without a tag hashes whole: the set carries it as its tag.
    plain = "streamdesk:events"
    assert deferred_entries(plain, "agents") == "{streamdesk:events}:deferred:agents"
    assert slot_tag(deferred_entries(plain, "agents")) == slot_tag(plain)
