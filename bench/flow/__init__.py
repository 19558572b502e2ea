"""``make bench-flow``: what flow control (issue 29, docs/flow.md) costs, and whether it holds."""
