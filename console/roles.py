"""The two roles: viewers see everything, operators may also act (docs/actions.md)."""

from __future__ import annotations

from typing import Any

VIEW_PERMISSION = "workers.view_console"
OPERATE_PERMISSION = "workers.operate"


def can_view(user: Any) -> bool:
    """Staff, superusers and anyone with the view permission (the viewers group)."""
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    return bool(user.is_staff or user.is_superuser or user.has_perm(VIEW_PERMISSION))


def can_operate(user: Any) -> bool:
    """Superusers and anyone with the operate permission (the operators group)."""
    if not can_view(user):
        return False
    return bool(user.is_superuser or user.has_perm(OPERATE_PERMISSION))


ROLES = {"viewers": ["view_console"], "operators": ["view_console", "operate"]}


def ensure_role_groups() -> None:
    """The groups the migration creates, created again if gone (a flushed test database)."""
    from django.contrib.auth.models import Group, Permission

    for name, codenames in ROLES.items():
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.add(
            *Permission.objects.filter(content_type__app_label="workers", codename__in=codenames)
        )


def context(request: Any) -> dict[str, bool]:
    """Template context processor: pages show action buttons to operators only."""
    user = getattr(request, "user", None)
    return {"can_operate": can_operate(user)}
