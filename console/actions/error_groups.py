"""The Errors page's two actions on a whole group, Retry group and Purge group: each a
tracked bulk job (``workers.operations.error_groups``), audited like every action."""

from __future__ import annotations

from typing import Any

from django import forms

from console.actions.services import ConsoleAction
from workers import operations
from workers.from_settings import action_args
from workers.operations import ActionOutcome, Actor


class GroupActionForm(forms.Form):
    reason = forms.CharField(required=False, max_length=1_000)


def _retry(a: Actor, where: dict[str, Any], d: dict[str, Any]) -> ActionOutcome:
    return operations.retry_group(
        a, where["stream"], where["fingerprint"], reason=d["reason"], **action_args()
    )


def _purge(a: Actor, where: dict[str, Any], d: dict[str, Any]) -> ActionOutcome:
    return operations.purge_group(
        a, where["stream"], where["fingerprint"], reason=d["reason"], **action_args()
    )


GROUP_ACTIONS: dict[str, ConsoleAction] = {
    "retry": ConsoleAction(
        "Retry group",
        GroupActionForm,
        _retry,
        confirm="Put every dead letter of this group back on its stream?",
    ),
    "purge": ConsoleAction(
        "Purge group",
        GroupActionForm,
        _purge,
        confirm="Delete every dead letter of this group for good?",
    ),
}
