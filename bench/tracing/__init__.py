"""``make bench-tracing``: what OpenTelemetry tracing costs the engine per event."""
