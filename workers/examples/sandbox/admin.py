from __future__ import annotations

from django.contrib import admin

from workers.examples.sandbox.models import SideEffect


@admin.register(SideEffect)
class SideEffectAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """What the example agents did to the sandbox services (read-only)."""

    list_display = ("created_at", "service", "action", "target", "replays")
    list_filter = ("service", "action")
    search_fields = ("target", "idempotency_key")
    readonly_fields = [f.name for f in SideEffect._meta.fields]

    def has_add_permission(self, request: object) -> bool:
        return False
