"""The HTTP edge: what a request or a websocket passes before any view runs (body limits in
daphne and in ASGI, the websocket's origin check, the CSP header, the sign-in throttle, error
reports without secrets, Redis-down answers). Imports the engine and ``console.runtime`` only."""
