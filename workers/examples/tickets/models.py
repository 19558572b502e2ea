"""A ticket that writes its own change events to the outbox in the transaction of the save."""

from __future__ import annotations

from typing import Any

from django.db import models, router, transaction

from workers.producers.outbox import emit


class TicketStatus(models.TextChoices):
    OPEN = "open", "open"
    PENDING = "pending", "pending"
    CLOSED = "closed", "closed"


class Ticket(models.Model):
    title = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=TicketStatus.choices, default="open")
    customer = models.CharField(max_length=200, blank=True, default="")
    # Set by the routing agent (agents.py), not by the save that opened the ticket.
    queue = models.CharField(max_length=32, blank=True, default="")
    priority = models.CharField(max_length=16, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    @property
    def subject(self) -> str:
        return f"ticket/{self.pk}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Save and emit in one transaction: the events commit with the change or not at all."""
        created = self._state.adding
        using = kwargs.get("using") or router.db_for_write(Ticket)
        with transaction.atomic(using=using):
            # The committed status, locked: two saves at once each see the other's change.
            old = (
                None
                if created
                else Ticket.objects.using(using)
                .select_for_update()
                .filter(pk=self.pk)
                .values_list("status", flat=True)
                .first()
            )
            super().save(*args, **kwargs)
            if created:
                self._emit_created()
            elif old is not None and old != self.status:
                self._emit_status_changed(old)

    def _emit_created(self) -> None:
        emit(
            "ticket.created",
            {"ticket_id": self.pk, "title": self.title, "status": self.status},
            subject=self.subject,
            context={"customer": self.customer},
        )

    def _emit_status_changed(self, old: str) -> None:
        emit(
            "ticket.status_changed",
            {"ticket_id": self.pk, "old": old, "new": self.status},
            subject=self.subject,
            context={"customer": self.customer, "title": self.title},
        )

    def __str__(self) -> str:
        return f"#{self.pk} {self.title} ({self.status})"
