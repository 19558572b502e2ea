"""What a worker knows of an operator's request to cancel one of its attempts. Pure."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CancelRequest:
    by: str  # who asked, as the audit record names them
    reason: str = ""

    @property
    def detail(self) -> str:
        """The run's error and its timeline step: ``cancelled by alice: wrong customer``."""
        return f"cancelled by {self.by or 'an operator'}" + (
            f": {self.reason}" if self.reason else ""
        )
