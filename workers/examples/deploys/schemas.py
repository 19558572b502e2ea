"""The ``deploy.failed`` event's data: importable without LangGraph, so a worker registers
the type at start-up and imports the graph only when a failed deploy arrives."""

from __future__ import annotations

from pydantic import BaseModel, Field


class DeployFailed(BaseModel):
    service: str = Field(min_length=1, max_length=200)
    version: str = Field(min_length=1, max_length=100)
    # The version running before this deploy: what a rollback goes back to.
    previous_version: str | None = Field(default=None, max_length=100)
    environment: str = Field(default="production", max_length=100)
    # The end of the failed rollout's log (the part that names the error).
    error_log: str = Field(default="", max_length=20_000)
    deploy_id: str = Field(default="", max_length=200)
    team: str = Field(default="", max_length=100)
