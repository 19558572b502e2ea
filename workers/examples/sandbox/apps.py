from __future__ import annotations

from django.apps import AppConfig


class SandboxConfig(AppConfig):
    name = "workers.examples.sandbox"
    label = "sandbox"
    verbose_name = "Sandbox services (example agents' side effects)"
    default_auto_field = "django.db.models.BigAutoField"
