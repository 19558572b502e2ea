"""Example: triaging new GitHub issues with an LLM tool-calling loop."""
