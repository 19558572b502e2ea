from __future__ import annotations

from django.apps import AppConfig


class TicketsConfig(AppConfig):
    name = "workers.examples.tickets"
    label = "tickets"
    verbose_name = "Tickets (outbox example)"
    default_auto_field = "django.db.models.BigAutoField"
