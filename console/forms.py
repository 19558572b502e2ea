"""Query parameters of the browsing pages, validated before anything reaches Redis."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError

from console.browse import PendingFilter, valid_id


def _entry_id(value: str) -> None:
    if value.strip() and not valid_id(value.strip()):
        raise ValidationError("An entry id looks like 1700000000000-0.")


class BrowseForm(forms.Form):
    """``before``: the newest id to show (inclusive); a jump is just that."""

    before = forms.CharField(required=False, max_length=42, validators=[_entry_id])

    def cursor(self) -> str | None:
        return (self.cleaned_data.get("before") or "").strip() or None


class PendingForm(forms.Form):
    consumer = forms.CharField(required=False, max_length=256)
    min_idle_s = forms.IntegerField(required=False, min_value=0, label="Minimum idle (s)")
    min_deliveries = forms.IntegerField(required=False, min_value=0, label="Minimum deliveries")
    after = forms.CharField(required=False, max_length=42, validators=[_entry_id])

    def pending_filter(self) -> PendingFilter:
        data = self.cleaned_data
        return PendingFilter(
            consumer=(data.get("consumer") or "").strip(),
            min_idle_ms=(data.get("min_idle_s") or 0) * 1000,
            min_deliveries=data.get("min_deliveries") or 0,
        )

    def cursor(self) -> str | None:
        return (self.cleaned_data.get("after") or "").strip() or None
