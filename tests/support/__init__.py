"""Helpers shared by the test tiers: one place for waiting, in-process workers, pending entries,
subprocess workers and the browser. Test modules import from here, never from each other.

- ``wait``: the one ``wait_for``;
- ``engine``: in-process burst workers (``run_burst``), ``xadd``, the stream's counters;
- ``memory_store``: an in-memory run store, so engine decisions are tested without a database;
- ``entries``: pending entries, dead letters and live consumers built as the engine leaves them;
- ``actions``: the operator-action tests' events, owners, a background worker, the gate;
- ``console``: the console tier's paths, signed-in sockets and clients;
- ``processes``: real ``runworker`` subprocesses (``Workers``);
- ``browser`` and ``operators``: Chromium under Playwright, signed in as staff or as a role.
- ``servers``: the session's own Redis server; ``production_env``: a production-like environment;
- ``llm_server``: a scripted OpenAI-compatible server; ``webhook_signing``: senders' signatures;
- ``memory_store``: an in-memory ``RunStore``.
"""
