from __future__ import annotations

from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class WorkersConfig(AppConfig):
    name = "workers"
    verbose_name = "Streamdesk workers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Agents register themselves in each installed app's ``agents`` module.
        autodiscover_modules("agents")
