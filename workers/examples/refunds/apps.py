from __future__ import annotations

from django.apps import AppConfig


class RefundsConfig(AppConfig):
    name = "workers.examples.refunds"
    label = "refunds"
    verbose_name = "Refunds (human in the loop example)"
    default_auto_field = "django.db.models.BigAutoField"
