from __future__ import annotations

from django.apps import AppConfig


class SecurityConfig(AppConfig):
    name = "workers.examples.security"
    label = "security_example"
    verbose_name = "Security alert remediation (state machine example)"
