"""LLM calls for agents: an OpenAI-compatible client, a deterministic built-in model, and a
tool-calling loop whose every model call and tool call is a durable step."""
