from __future__ import annotations

from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "console"
    verbose_name = "Streamdesk console"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in, user_login_failed

        from console.edge import throttle
        from console.edge.errorreport import register_configured_secrets
        from console.intake.webhooks import webhook_sources

        # Configured secret values are masked in every log line and error text of this
        # process, the worker's included (workers/core/redact.py).
        register_configured_secrets()
        # A wrong webhook source stops start-up with its name, not the first delivery.
        webhook_sources()
        # Every password check counts, whichever page made it (console/edge/throttle.py).
        user_login_failed.connect(throttle.on_login_failed, dispatch_uid="streamdesk-throttle")
        user_logged_in.connect(throttle.on_logged_in, dispatch_uid="streamdesk-throttle")
