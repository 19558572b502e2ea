"""Streamdesk's benchmark: ``make bench`` (``.venv/bin/python -m bench.engine``); one
subpackage per suite (``python -m bench.<suite>``), what they share in ``bench.common``.

Every figure is measured in one run against baselines measured in the same run, on a
private Valkey server and private SQLite files in a temporary folder.
"""
