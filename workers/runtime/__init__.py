"""What an agent sees while it runs: its ``AgentContext`` (durable steps, budgets, model
calls), the shared rate budgets, the model-call loop (``llm/``) and LangGraph support
(``graph/``)."""
