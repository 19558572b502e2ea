"""Keyed rate budgets' names: which budget a bucket draws on and how a template is filled."""

from __future__ import annotations

import pytest

from workers.core.errors import ConfigurationError
from workers.core.events import Envelope
from workers.runtime.budget_keys import base_name, is_keyed, render

EVENT = Envelope(
    type="github.issue.opened",
    source="github",
    id="d-1",
    subject="acme/web#7",
    data={"installation_id": 42, "repo": {"owner": "acme"}, "labels": ["bug"], "draft": False},
    context={"tenant": "t-9"},
)


def test_budget_keys_base_name_is_the_part_before_the_first_colon() -> None:
    assert base_name("github:42") == "github"
    assert base_name("github:acme:web") == "github"
    assert base_name("github") == "github"
    assert is_keyed("github:42") and not is_keyed("github")


def test_budget_keys_render_fills_each_field_from_the_event() -> None:
    assert render("github:{data.installation_id}", EVENT) == "github:42"
    assert render("github:{data.repo.owner}/{subject}", EVENT) == "github:acme/acme/web#7"
    assert render("github:{ source }:{type}:{id}", EVENT) == "github:github:github.issue.opened:d-1"
    assert render("github:{data.labels.0}:{data.draft}", EVENT) == "github:bug:false"
    assert render("github:{context.tenant}", EVENT) == "github:t-9"


def test_budget_keys_render_leaves_a_name_without_fields_alone() -> None:
    assert render("github", EVENT) == "github"
    assert render("github:static", None) == "github:static"


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("github:{data.missing}", "the event has no data.missing"),
        ("github:{data.repo.owner.x}", "the event has no data.repo.owner.x"),
        ("github:{data.repo}", "data.repo is not a single value"),
        ("github:{time}", "unknown field 'time'"),
        ("github:{data}", "unknown field 'data'"),
        ("{data.installation_id}", "a keyed budget is BUDGET:TEMPLATE"),
        ("git{subject}:x", "a keyed budget is BUDGET:TEMPLATE"),
        ("github:{data.installation_id", "unbalanced braces"),
    ],
)
def test_budget_keys_render_says_what_is_wrong(name: str, why: str) -> None:
    with pytest.raises(ConfigurationError, match=why.replace(".", r"\.")):
        render(name, EVENT)


def test_budget_keys_render_refuses_a_brace_in_a_value() -> None:
    event = EVENT.model_copy(update={"subject": "a}b"})
    with pytest.raises(ConfigurationError, match="has a brace"):
        render("github:{subject}", event)


def test_budget_keys_render_needs_an_event_for_a_template() -> None:
    with pytest.raises(ConfigurationError, match="no event"):
        render("github:{subject}", None)
