from __future__ import annotations

from importlib import import_module

from django.apps import AppConfig
from django.conf import settings
from django.utils.module_loading import autodiscover_modules


class WorkersConfig(AppConfig):
    name = "workers"
    verbose_name = "Streamdesk workers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Webhook types first, schema-only: an app's agent for one of them replaces it.
        from workers.registry import default_registry
        from workers.webhooks.schemas import register_webhook_types

        register_webhook_types(default_registry)
        # Agents register themselves in each installed app's ``agents`` module.
        autodiscover_modules("agents")
        # Agents outside installed apps (scripts, benchmarks): STREAMDESK_AGENT_MODULES.
        for module in getattr(settings, "STREAMDESK_AGENT_MODULES", []):
            import_module(module)
