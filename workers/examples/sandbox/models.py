"""What the example agents did to the outside world, as the outside world would see it."""

from __future__ import annotations

from django.db import models


class SideEffect(models.Model):
    """One call to a sandbox service. Like Stripe or GitHub with an ``Idempotency-Key``,
    a second call with the same key changes nothing and answers what the first did."""

    service = models.CharField(max_length=32)  # github, vault, slack, payments
    action = models.CharField(max_length=64)  # label_issue, revoke, notify, refund
    target = models.CharField(max_length=256)
    payload = models.JSONField(default=dict)
    idempotency_key = models.CharField(max_length=400, unique=True)
    # Calls that came back with a key already used: retries the key made harmless.
    replays = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.service}.{self.action} {self.target}"
