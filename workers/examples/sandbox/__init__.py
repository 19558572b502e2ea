"""Stand-ins for the downstream services the example agents act on (GitHub, a secrets
vault, Slack, a people directory), recording each call so the demo shows what happened."""
