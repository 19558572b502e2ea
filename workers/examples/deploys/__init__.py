"""Failed deploys: a LangGraph agent (the optional ``langgraph`` extra) diagnoses the failure
and rolls back or notifies, resuming at its last finished node when the event is retried."""
