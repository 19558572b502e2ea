"""Example: remediating a leaked credential with an explicit state machine."""
