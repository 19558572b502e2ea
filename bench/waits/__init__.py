"""``python -m bench.waits``: runs that wait (issue 30) hold no slot, survive a SIGKILL, and
cost nothing at rest."""
