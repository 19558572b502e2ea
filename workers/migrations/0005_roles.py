"""The two roles: viewers see everything; operators may also act."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.management import create_permissions
from django.db import migrations

ROLES = {
    "viewers": ["view_console"],
    "operators": ["view_console", "operate"],
}


def create_roles(apps: Any, schema_editor: Any) -> None:
    # Permissions are normally created after all migrations; the groups need them now.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, codenames in ROLES.items():
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.add(
            *Permission.objects.filter(content_type__app_label="workers", codename__in=codenames)
        )


def remove_roles(apps: Any, schema_editor: Any) -> None:
    apps.get_model("auth", "Group").objects.filter(name__in=list(ROLES)).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("workers", "0004_operator_actions"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_roles, remove_roles)]
