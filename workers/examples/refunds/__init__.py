"""Refunds that ask a person first: a LangGraph agent (the optional ``langgraph`` extra)
issues small refunds at once and waits, holding no slot, for an operator's approval of large
ones (``interrupt()`` as a durable wait; docs/langgraph.md)."""
