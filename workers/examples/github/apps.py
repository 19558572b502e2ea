from __future__ import annotations

from django.apps import AppConfig


class GithubConfig(AppConfig):
    name = "workers.examples.github"
    label = "github_example"
    verbose_name = "GitHub issue triage (tool-calling example)"
