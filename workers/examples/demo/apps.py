from __future__ import annotations

from django.apps import AppConfig


class DemoConfig(AppConfig):
    """No models, no agents: it carries ``manage.py demoproducer``, so the command exists only
    where the demo is installed (``STREAMDESK_DEMO=1``)."""

    name = "workers.examples.demo"
    label = "demo"
    verbose_name = "Streamdesk demo (make run's event producer)"
