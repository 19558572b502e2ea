"""The demo ``make run`` shows: ``manage.py demoproducer``, installed in demo mode only."""
