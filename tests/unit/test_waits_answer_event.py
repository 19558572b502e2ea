"""What an operator's answer to a waiting run is (``workers/waits/answers.py``), pure."""

from __future__ import annotations

import re

import pytest
from pydantic import BaseModel, ConfigDict

from workers.core.errors import ActionRefused, InvalidAction
from workers.core.events import event_hash
from workers.core.registry import Registry
from workers.waits import answers
from workers.waits.view import WaitView

HASH = "ab" * 32


def wait(match: dict[str, object], kind: str = "event", state: str = "waiting") -> WaitView:
    return WaitView(
        "streamdesk:events", HASH, state, kind, "refund.answered", match, 1, 0, "wait#1", "r", "g"
    )


def test_envelope_of_nests_data_paths_and_takes_the_subject() -> None:
    match = {"data.order.id": 7, "data.kind": "full", "subject": "order/7"}
    envelope = answers.envelope_of(wait(match), False, "ops", "no", door="api")
    assert envelope.subject == "order/7" and envelope.type == "refund.answered"
    assert envelope.data == {
        "order": {"id": 7},
        "kind": "full",
        "approved": False,
        "by": "ops",
        "comment": "no",
    }
    assert (envelope.source, envelope.id) == ("streamdesk/operator", f"answer:{HASH}:wait#1")
    assert envelope.model_extra == {"door": "api"}


def test_envelope_of_is_one_event_whichever_door_and_decision() -> None:
    console = answers.envelope_of(wait({"data.n": 1}), True, "a", door="console")
    cli = answers.envelope_of(wait({"data.n": 1}), False, "b", "late", door="cli")
    assert event_hash(console) == event_hash(cli)


def test_envelope_of_without_a_comment_has_none() -> None:
    assert "comment" not in answers.envelope_of(wait({}), True, "ops").data


def test_envelope_of_refuses_a_match_on_an_answer_field() -> None:
    with pytest.raises(InvalidAction, match=r"matches on data\.approved itself"):
        answers.envelope_of(wait({"data.approved": True}), True, "ops")


def test_envelope_of_checks_the_types_schema() -> None:
    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")
        approved: bool

    registry = Registry()
    registry.register_schema("refund.answered", Strict)
    with pytest.raises(InvalidAction, match="does not fit its type's schema"):
        answers.envelope_of(wait({}), True, "ops", registry=registry)


def test_answer_id_of_a_long_step_stays_within_an_ids_length() -> None:
    long = answers.answer_id(HASH, "s" * 300)
    assert len(long) <= answers.MAX_ID_CHARS and long == answers.answer_id(HASH, "s" * 300)


@pytest.mark.parametrize(
    ("found", "why"),
    [
        (None, "no wait is recorded"),
        (wait({}, kind="sleep"), "cancel it instead"),
        (wait({}, state="timed_out"), "not waiting any more (timed out)"),
        (wait({}, state="cancelled"), "not waiting any more (cancelled)"),
    ],
)
def test_check_refuses_what_cannot_be_answered(found: WaitView | None, why: str) -> None:
    with pytest.raises(ActionRefused, match=re.escape(why)):
        answers.check(found, HASH)


def test_waits_for_reads_as_a_sentence() -> None:
    assert wait({}).waits_for == "refund.answered"
    assert (
        wait({"data.n": 1, "subject": "s"}).waits_for
        == 'refund.answered where data.n=1, subject="s"'
    )
    assert wait({}, kind="sleep").waits_for == "sleep"
