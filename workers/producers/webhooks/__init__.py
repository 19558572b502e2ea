"""Signed webhooks into the stream: pure verification, configuration and mappings.

No Django and no I/O here; the console's view (``console/intake/webhooks.py``) reads the request
and publishes what :func:`workers.producers.webhooks.intake.envelope_for` builds.
"""
