"""``python -m bench.timers``: delayed events' lateness under load, and the timer's idle cost."""
