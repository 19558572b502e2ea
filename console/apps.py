from __future__ import annotations

from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = "Streamdesk console"

    def ready(self) -> None:
        # A wrong webhook source stops start-up with its name, not the first delivery.
        from console.webhooks import webhook_sources

        webhook_sources()
