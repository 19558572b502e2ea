"""Query parameters of the browsing pages, validated before anything reaches Redis."""

from __future__ import annotations

from django import forms

from console.params import MAX_AGE_S, count_field, entry_id_field
from console.reads.browse import PendingFilter


class BrowseForm(forms.Form):
    """``before``: the newest id to show (inclusive); a jump is just that."""

    before = entry_id_field()

    def cursor(self) -> str | None:
        return (self.cleaned_data.get("before") or "").strip() or None


class PendingForm(forms.Form):
    consumer = forms.CharField(required=False, max_length=256)
    min_idle_s = count_field("Minimum idle (s)", max_value=MAX_AGE_S)
    min_deliveries = count_field("Minimum deliveries")
    after = entry_id_field()

    def pending_filter(self) -> PendingFilter:
        data = self.cleaned_data
        return PendingFilter(
            consumer=(data.get("consumer") or "").strip(),
            min_idle_ms=(data.get("min_idle_s") or 0) * 1000,
            min_deliveries=data.get("min_deliveries") or 0,
        )

    def cursor(self) -> str | None:
        return (self.cleaned_data.get("after") or "").strip() or None

    def narrowed(self) -> bool:
        """A filter or a later page: not the default view the live table shows."""
        return self.cursor() is not None or self.pending_filter() != PendingFilter()
