"""A small help desk: tickets whose changes reach a triage agent through the outbox."""
