"""The metrics' pure parts: the duration histogram's storage and who may scrape."""

from __future__ import annotations

import pytest

from workers.core.errors import ConfigurationError
from workers.monitor.scrape_access import ScrapeAccess
from workers.redis import stats


def test_duration_increments_sum_a_batch_per_bucket() -> None:
    got = stats.duration_increments({"t": [0.001, 0.004, 0.005, 0.2, 999.0]})
    assert got == {"t|0.005": 3, "t|0.25": 1, "t|+Inf": 1, "t|sum": pytest.approx(999.21)}


def test_durations_by_type_are_cumulative_with_their_count() -> None:
    raw = {"t|0.005": "3", "t|0.25": "1", "t|+Inf": "1", "t|sum": "999.21", "junk": "1"}
    d = stats.durations_by_type(raw)["t"]
    buckets = dict(d.buckets)
    assert (buckets["0.005"], buckets["0.1"], buckets["0.25"], buckets["300.0"]) == (3, 3, 4, 4)
    assert (buckets["+Inf"], d.count, d.sum_s) == (5, 5, 999.21)


def test_durations_by_type_count_an_old_bound_in_every_bucket_above_it() -> None:
    d = stats.durations_by_type({"t|0.3": "2"})["t"]
    assert dict(d.buckets)["0.25"] == 0 and dict(d.buckets)["0.5"] == 2


def test_scrape_access_token_is_checked() -> None:
    access = ScrapeAccess("s3cret")
    assert access.check("10.0.0.1", "Bearer s3cret") is None
    assert access.check("10.0.0.1", "bearer s3cret") is None
    refused = access.check("10.0.0.1", "Bearer s3cre")
    assert refused is not None and (refused.status, refused.challenge[:6]) == (401, "Bearer")
    assert access.check("10.0.0.1", "Basic czNjcmV0") is not None


def test_scrape_access_networks_take_ipv4_mapped_addresses() -> None:
    access = ScrapeAccess.from_settings("", ["10.0.0.0/8"], open_loopback=False)
    assert access.check("::ffff:10.1.1.1", "") is None
    refused = access.check("11.0.0.1", "")
    assert refused is not None and refused.status == 403


def test_scrape_access_unconfigured_refuses_all_but_loopback_when_open() -> None:
    assert ScrapeAccess().check("127.0.0.1", "") is not None
    assert ScrapeAccess(open_loopback=True).check("127.0.0.1", "") is None
    assert ScrapeAccess(open_loopback=True).check("::1", "") is None
    assert ScrapeAccess(open_loopback=True).check("10.0.0.1", "") is not None


def test_scrape_access_a_bad_network_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match=r"10\.0\.0\.300/8"):
        ScrapeAccess.from_settings("", ["10.0.0.300/8"], open_loopback=False)
