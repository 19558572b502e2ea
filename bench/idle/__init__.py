"""``make bench-idle``: what idle workers cost at rest (issue 28): Redis commands per second,
broken down by name and by purpose, CPU, memory and PostgreSQL connections, for runworker
with 1, 2 and 10 processes and for its peers (dramatiq, arq, Celery, taskiq-redis, rq) with
1 and 10 workers, side by side; and the floor of what a correct worker must send at rest."""
