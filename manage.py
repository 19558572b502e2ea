#!/usr/bin/env python
"""Django's command-line utility for Streamdesk."""

import os
import sys


def refuse_demo_command(command: list[str]) -> None:
    """The demo producer's app is installed in demo mode only: outside it, say why its command
    is missing instead of Django's bare "Unknown command"."""
    if command != ["demoproducer"]:
        return
    from django.conf import settings

    if not settings.STREAMDESK_DEMO:
        sys.exit(
            "demoproducer: the demo producer runs in demo mode only (STREAMDESK_DEMO=1, as make "
            "run sets): without it no agent handles its events"
        )


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        refuse_demo_command(sys.argv[1:2])
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # A setting the environment got wrong (SECRET_KEY missing...): its message, no traceback.
        sys.exit(f"configuration error: {exc}")


if __name__ == "__main__":
    main()
