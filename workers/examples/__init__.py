"""Example apps built on Streamdesk's public API (installed by the demo project)."""
