"""The live layer: one sample a second turned into rows, health marks and chart data, and
pushed to the dashboard's websocket (``sampler``, ``ticker``), with the bulk-job runner.
Imports the engine and ``console.runtime`` only: never the reads, views, actions or API."""
