"""console/params.py: names round-trip through URLs; ids Redis would refuse do not pass."""

from __future__ import annotations

from urllib.parse import quote, unquote

import pytest
from django.urls import resolve, reverse
from hypothesis import given
from hypothesis import strategies as st

from console.params import MAX_U64, NameConverter, valid_entry_id

# Django's own quoting of a reversed URL (django.urls.resolvers, RFC 3986 sub-delims kept).
SAFE = "!$&'()*+,;=" + "/~:@"


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_name_converter_round_trips_any_name(name: str) -> None:
    converter = NameConverter()
    segment = converter.to_url(name)
    # What a server routes: the quoted segment, decoded again before matching.
    routed = unquote(quote(segment, safe=SAFE))
    assert "/" not in routed and routed not in (".", "..")
    assert converter.to_python(routed) == name


@pytest.mark.parametrize("name", ["orders/eu", "..", "a/../b", "100%", "~2F", "", "ü /?#"])
def test_stream_url_resolves_to_its_name(name: str) -> None:
    url = reverse("stream", args=[name])
    assert resolve(unquote(url)).kwargs == {"stream": name}


@pytest.mark.parametrize("segment", ["~zz", "a~", "~41"])
def test_name_converter_refuses_a_stray_escape(segment: str) -> None:
    with pytest.raises(ValueError):
        NameConverter().to_python(segment)


@pytest.mark.parametrize(
    "value",
    ["0", "0-0", "1700000000000-0", f"{MAX_U64}", f"{MAX_U64}-{MAX_U64}"],
)
def test_valid_entry_id_takes_what_redis_takes(value: str) -> None:
    assert valid_entry_id(value)


@pytest.mark.parametrize(
    "value",
    [f"{MAX_U64 + 1}-0", f"1-{MAX_U64 + 1}", "1-0\n", "-1", "1-", "1-0-0", "\u0661-0", "", " 1-0"],
)
def test_valid_entry_id_refuses_what_redis_refuses(value: str) -> None:
    assert not valid_entry_id(value)
