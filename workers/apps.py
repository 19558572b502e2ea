from __future__ import annotations

from importlib import import_module

from django.apps import AppConfig, apps
from django.conf import settings
from django.utils.module_loading import module_has_submodule


class WorkersConfig(AppConfig):
    name = "workers"
    verbose_name = "Streamdesk workers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Webhook types first, schema-only: an app's agent for one of them replaces it.
        from workers.core.registry import default_registry
        from workers.producers.webhooks.schemas import register_webhook_types

        register_webhook_types(default_registry)
        # Agents register themselves in each installed app's ``agents`` module; this app's
        # own are the demo agents, loaded through STREAMDESK_AGENT_MODULES in demo mode only.
        for config in apps.get_app_configs():
            if config is not self and module_has_submodule(config.module, "agents"):
                import_module(f"{config.name}.agents")
        # Agents outside installed apps (scripts, benchmarks): STREAMDESK_AGENT_MODULES.
        for module in getattr(settings, "STREAMDESK_AGENT_MODULES", []):
            import_module(module)
