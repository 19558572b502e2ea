"""One worker process: ``serve.run`` starts it and ``worker.Worker`` is its loop (read, gate,
run, settle). The settle decision is the pure ``settlement.plan_settlement``; ``settle`` carries
it out. ``supervisor`` keeps ``manage.py up``'s processes alive. See docs/architecture.md."""
