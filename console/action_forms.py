"""What each operator action takes, validated the same way for the console and the API."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from console.browse import valid_id
from workers.actions import DeadFilter

MAX_IDS = 1_000


class EntryIdsField(forms.Field):
    """Entry ids from repeated form fields (``ids=1-0&ids=2-0``) or a JSON list."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> list[str]:
        if not value:
            return []
        items = value if isinstance(value, list | tuple) else str(value).split(",")
        return [str(i).strip() for i in items if str(i).strip()]

    def validate(self, value: list[str]) -> None:
        super().validate(value)
        bad = [i for i in value if not valid_id(i)]
        if bad:
            raise ValidationError(f"not a stream entry id: {bad[0]!r}")
        if len(value) > MAX_IDS:
            raise ValidationError(f"at most {MAX_IDS} ids at once; use a filter for more")


class DryRunForm(forms.Form):
    dry_run = forms.BooleanField(required=False)


class IdsForm(DryRunForm):
    ids = EntryIdsField()


class ClaimForm(IdsForm):
    consumer = forms.CharField(max_length=256)


class ClaimAllForm(DryRunForm):
    from_consumer = forms.CharField(max_length=256)
    to_consumer = forms.CharField(max_length=256)


class ConsumerForm(forms.Form):
    consumer = forms.CharField(max_length=256)


class DeadLetterForm(IdsForm):
    reason = forms.CharField(max_length=1_000)


class GroupForm(DryRunForm):
    """Pause and resume take nothing but the group in the URL (and ``dry_run``)."""


def _ms(value: datetime | None) -> int:
    return int(value.timestamp() * 1000) if value else 0


class DeadFilterForm(DryRunForm):
    """Dead letters by ids, or every one matching a filter (``all`` must say so)."""

    ids = EntryIdsField(required=False)
    all = forms.BooleanField(required=False, help_text="act on every dead letter matching")
    type = forms.CharField(required=False, max_length=256)
    reason_is = forms.CharField(required=False, max_length=256, label="Reason")
    since = forms.DateTimeField(required=False)
    until = forms.DateTimeField(required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not data.get("ids") and not data.get("all"):
            raise ValidationError("choose dead letters, or tick 'all matching the filter'")
        data["filter"] = DeadFilter(**self.filter_kwargs())
        return data

    def filter_kwargs(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "type": data.get("type") or "",
            "reason": data.get("reason_is") or "",
            "since_ms": _ms(data.get("since")),
            "until_ms": _ms(data.get("until")),
        }


class PurgeForm(DeadFilterForm):
    reason = forms.CharField(max_length=1_000)


class RerunForm(forms.Form):
    reason = forms.CharField(max_length=1_000)
