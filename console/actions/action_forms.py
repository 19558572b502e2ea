"""What each operator action takes, validated the same way for the console and the API."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from console.reads.browse import valid_id
from workers.core.errors import InvalidAction
from workers.operations import inputs
from workers.operations.actions import DeadFilter

MAX_IDS = 1_000


def form_message(form: forms.Form) -> str:
    """A refused form in one line of plain words, as the console shows it next to the button:
    our messages say what is missing; Django's own get the field's name in front."""
    parts = []
    for field, errors in form.errors.items():
        for message in errors:
            ours = field == "__all__" or message in OURS
            parts.append(str(message) if ours else f"{field.replace('_', ' ')}: {message}")
    return "; ".join(parts)


class EntryIdsField(forms.Field):
    """Entry ids from repeated form fields (``ids=1-0&ids=2-0``) or a JSON list."""

    widget = forms.MultipleHiddenInput
    default_error_messages = {"required": "select at least one entry (tick its box)"}

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


CONSUMER_REQUIRED = "choose the consumer to claim the entries to"
REASON_REQUIRED = "a reason is required, it goes in the audit log"
OURS = {CONSUMER_REQUIRED, REASON_REQUIRED, EntryIdsField.default_error_messages["required"]}


class ClaimForm(IdsForm):
    consumer = forms.CharField(max_length=256, error_messages={"required": CONSUMER_REQUIRED})


class ClaimAllForm(DryRunForm):
    from_consumer = forms.CharField(max_length=256)
    to_consumer = forms.CharField(max_length=256)


class ConsumerForm(forms.Form):
    consumer = forms.CharField(max_length=256)


class DeadLetterForm(IdsForm):
    reason = forms.CharField(max_length=1_000, error_messages={"required": REASON_REQUIRED})


class CancelEntriesForm(IdsForm):
    reason = forms.CharField(required=False, max_length=1_000)


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
        try:  # the operations' own check, so every door refuses the same windows
            data["filter"] = inputs.dead_filter(DeadFilter(**self.filter_kwargs()))
        except InvalidAction as exc:
            self.add_error(exc.field if exc.field in self.fields else None, exc.message)
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
    reason = forms.CharField(max_length=1_000, error_messages={"required": REASON_REQUIRED})


class RerunForm(forms.Form):
    reason = forms.CharField(max_length=1_000)


class CancelForm(forms.Form):
    reason = forms.CharField(required=False, max_length=1_000)


class AnswerForm(forms.Form):
    """Approve or reject a waiting run: ``approved`` true or false (a form's ``"true"``,
    the API's JSON ``true``), a comment the answer carries."""

    approved = forms.NullBooleanField()
    comment = forms.CharField(required=False, max_length=inputs.MAX_REASON_CHARS)

    def clean_approved(self) -> bool:
        value = self.cleaned_data.get("approved")
        if value is None:
            raise ValidationError("true (approve) or false (reject)")
        return bool(value)
