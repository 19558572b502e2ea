"""The database: agent runs (the gate's authority), durable ``ctx.step`` results, timeline rows
and the hot path's raw SQL, behind the protocols the engine is written against
(``protocols``). The Django models themselves stay in ``workers/models.py``."""
