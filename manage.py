#!/usr/bin/env python
"""Django's command-line utility for Streamdesk."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # A setting the environment got wrong (SECRET_KEY missing...): its message, no traceback.
        sys.exit(f"configuration error: {exc}")


if __name__ == "__main__":
    main()
