from __future__ import annotations

from django.apps import AppConfig


class DeploysConfig(AppConfig):
    name = "workers.examples.deploys"
    label = "deploys"
    verbose_name = "Deploys (LangGraph example)"
    default_auto_field = "django.db.models.BigAutoField"
