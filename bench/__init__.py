"""Streamdesk's benchmark: ``make bench`` (``.venv/bin/python bench/run.py``).

Every figure is measured in one run against baselines measured in the same run, on a
private Valkey server and private SQLite files in a temporary folder.
"""
