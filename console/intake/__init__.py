"""Getting events in over HTTP: the signed-webhook view (``POST /hooks/<source>/``). The intake
itself is the engine's (``workers/producers/webhooks/``); its Django view lives here because
``workers/`` never imports the console. Imports the engine only."""
