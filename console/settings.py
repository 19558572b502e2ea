"""Django settings for Streamdesk, read from the environment; safe for production by default.

Environment: ``SECRET_KEY`` (required unless ``DEBUG``), ``DEBUG`` (off unless set),
``STREAMDESK_DEMO`` (the demo agents, examples and webhook source; ``make run`` sets it and
``DEBUG``), ``ALLOWED_HOSTS``, the TLS proxy settings (``CSRF_TRUSTED_ORIGINS``,
``SECURE_PROXY_SSL_HEADER``...), ``DATABASE_URL`` (SQLite in ``.streamdesk/`` by default),
``REDIS_URL`` (empty: the embedded Valkey server), ``STREAMDESK_*`` for engine options,
``LOG_LEVEL``, ``STREAMDESK_LOG_FORMAT`` or ``LOG_FORMAT`` (``text`` or ``json``).
See docs/configuration.md.
"""

from __future__ import annotations

import os
from pathlib import Path

from console.edge.throttle import ThrottleConfig
from console.environment import (
    configured,
    database,
    env_bool,
    env_int,
    env_list,
    log_level,
    proxy_ssl_header,
    redis_url,
    secret_key,
)
from workers.core.config import options_from_env
from workers.core.logs import log_format
from workers.examples import DEMO_APPS, DEMO_RATE_LIMITS
from workers.producers.webhooks.config import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_DEPTH,
    load_sources_file,
)
from workers.redis.datadir import private_dir, private_file
from workers.runtime.llm.config import llm_config_from_env

BASE_DIR = Path(__file__).resolve().parent.parent
STREAMDESK_DATA_DIR = Path(os.environ.get("STREAMDESK_DATA_DIR", BASE_DIR / ".streamdesk"))

DEBUG = env_bool("DEBUG", False)
# Demo mode (make run): demo agents, the example apps, the "demo" webhook source and the demo
# producer. Off, none of them is loaded: a deployment runs only its own agents and sources.
STREAMDESK_DEMO = env_bool("STREAMDESK_DEMO", False)
SECRET_KEY = secret_key(DEBUG, STREAMDESK_DATA_DIR)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")

# Behind a TLS proxy (docs/operations.md): the proxy's header says the request came over
# HTTPS, so CSRF's origin check and secure cookies agree with what the browser sees.
SECURE_PROXY_SSL_HEADER = proxy_ssl_header(os.environ.get("SECURE_PROXY_SSL_HEADER", ""))
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")
USE_X_FORWARDED_HOST = env_bool("USE_X_FORWARDED_HOST", False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", False)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# Debug pages and error reports hide secrets, URLs' passwords included
# (console/edge/errorreport.py).
DEFAULT_EXCEPTION_REPORTER = "console.edge.errorreport.SecretsReporter"
DEFAULT_EXCEPTION_REPORTER_FILTER = "console.edge.errorreport.SecretsFilter"

INSTALLED_APPS = [
    "daphne",
    # Before channels: our ``runworker`` must win over channels' command of the same name.
    "workers",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "console",
]
if STREAMDESK_DEMO:
    # The example apps and the demo producer's app (workers/examples/__init__.py).
    INSTALLED_APPS += DEMO_APPS

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Outermost but one: every response, error pages included, carries the policy.
    "console.edge.csp.content_security_policy",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "console.edge.unavailable.RedisDownMiddleware",
]

ROOT_URLCONF = "console.urls"
WSGI_APPLICATION = "console.wsgi.application"
ASGI_APPLICATION = "console.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "console.roles.context",
            ],
        },
    },
]

if not os.environ.get("DATABASE_URL"):
    # The default SQLite file lives beside the embedded server's data; it holds live session
    # keys, so it is the owner's only (SQLite gives its -wal and -shm files the same mode).
    private_file(private_dir(STREAMDESK_DATA_DIR) / "db.sqlite3")
DATABASES = {
    "default": database(
        os.environ.get("DATABASE_URL") or f"sqlite:///{STREAMDESK_DATA_DIR / 'db.sqlite3'}"
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Server-side binding: parameters travel apart from the SQL text, so the worker sends a
    # batch as one array per column in psycopg's binary format (workers/store/sql.py)
    # instead of quoting every value into the text in Python.
    DATABASES["default"].setdefault("OPTIONS", {})["server_side_binding"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        # WAL and IMMEDIATE let several worker processes share the file without
        # "database is locked" errors under load. A checkpoint every 10,000 WAL pages
        # (about 40 MB; SQLite's default is 1,000): the workers' random-keyed inserts
        # rewrite the same index pages commit after commit, and a rarer checkpoint copies
        # each page back once instead of many times (a third less per row written).
        "init_command": (
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=10000;"
        ),
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
    }
    # A file (not :memory:) so runworker subprocesses in tests see the test database; one
    # per test process, so two test runs on one checkout never share (and break) a file.
    DATABASES["default"]["TEST"] = {
        "NAME": str(STREAMDESK_DATA_DIR / f"test-db-{os.getpid()}.sqlite3")
    }
CHANNEL_LAYERS = {"default": {"BACKEND": "console.runtime.ChannelLayer"}}

# Failed sign-ins are throttled per user and per address (console/edge/throttle.py,
# docs/console.md).
AUTHENTICATION_BACKENDS = [
    "console.edge.throttle.SignInThrottle",
    "django.contrib.auth.backends.ModelBackend",
]
STREAMDESK_LOGIN_THROTTLE = configured(lambda: ThrottleConfig.from_env(os.environ))
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "overview"
LOGOUT_REDIRECT_URL = "login"
# The console is an operator's tool: keep its session off other sites' requests.
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = redis_url()
STREAMDESK = configured(options_from_env)
# The console runs bulk jobs (docs/actions.md) in a thread of its process; off: only
# ``manage.py jobs --run`` does.
STREAMDESK_JOB_RUNNER = env_bool("STREAMDESK_JOB_RUNNER", True)
# Each runworker and console process is a candidate history recorder (workers/monitor/recorder.py;
# one records for the whole deployment), the console from its start: charts fill without a
# browser, and without workers. Off: this process never records.
STREAMDESK_HISTORY_RECORDER = env_bool("STREAMDESK_HISTORY_RECORDER", True)
# Rate budgets shared by every worker (docs/agents.md): NAME=RATE/s|m|h[:BURST], comma-separated.
# None by default; in demo mode, the example agents' tools.
STREAMDESK_RATE_LIMITS = os.environ.get(
    "STREAMDESK_RATE_LIMITS", DEMO_RATE_LIMITS if STREAMDESK_DEMO else ""
)
# Schedules besides those declared with @schedule (docs/timers.md): a JSON list of objects
# with "cron" and "type" (and "data", "name", "stream", "subject", "grace_s", "timezone").
STREAMDESK_SCHEDULES = os.environ.get("STREAMDESK_SCHEDULES", "")
# The demo agents (demo.echo, demo.sleep, demo.fail) only in demo mode.
STREAMDESK_AGENT_MODULES = [
    *(["workers.examples.demo.agents"] if STREAMDESK_DEMO else []),
    *env_list("STREAMDESK_AGENT_MODULES"),
]

# Signed webhooks (docs/webhooks.md): POST /hooks/<source>/. Sources come from a JSON or TOML
# file; in demo mode without one, a "demo" source (generic HMAC, secret "dev-webhook-secret")
# turns posted JSON into demo.echo events.
_webhooks_file = os.environ.get("STREAMDESK_WEBHOOKS_FILE", "")
STREAMDESK_WEBHOOKS: dict[str, object] = (
    configured(lambda: load_sources_file(_webhooks_file))
    if _webhooks_file
    else (
        {"demo": {"scheme": "hmac", "secret": "dev-webhook-secret", "event_type": "demo.echo"}}
        if STREAMDESK_DEMO
        else {}
    )
)
STREAMDESK_WEBHOOK_MAX_BYTES = env_int("STREAMDESK_WEBHOOK_MAX_BYTES", DEFAULT_MAX_BYTES, 1)
STREAMDESK_WEBHOOK_MAX_DEPTH = env_int("STREAMDESK_WEBHOOK_MAX_DEPTH", DEFAULT_MAX_DEPTH, 1)
# A byte-identical signed body to one source inside this window is published once (7 days).
STREAMDESK_WEBHOOK_REPLAY_WINDOW_S = env_int("STREAMDESK_WEBHOOK_REPLAY_WINDOW_S", 7 * 24 * 3600, 1)
# Largest request body on every other path; refused while it arrives (console/edge/body_limit.py).
STREAMDESK_MAX_REQUEST_BYTES = env_int("STREAMDESK_MAX_REQUEST_BYTES", 2_621_440, 1)

# Who may scrape GET /metrics (docs/observability.md): a bearer token, client networks (CIDRs),
# or both. Neither: every scrape is refused, except from loopback with DEBUG on.
STREAMDESK_METRICS_TOKEN = os.environ.get("STREAMDESK_METRICS_TOKEN", "")
STREAMDESK_METRICS_ALLOW = env_list("STREAMDESK_METRICS_ALLOW")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "json": {"()": "workers.core.logs.JsonFormatter"},
        "text": {"()": "workers.core.logs.TextFormatter"},
    },
    # A failure repeated per event is one line per class and minute (workers/core/logs.py).
    "filters": {"repeats": {"()": "workers.core.logs.RepeatFilter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": log_format(os.environ),
            "filters": ["repeats"],
        },
    },
    "root": {"handlers": ["console"], "level": log_level(os.environ.get("LOG_LEVEL", ""))},
    "loggers": {
        "django": {"level": "WARNING"},
        "asyncio": {"level": "WARNING"},
        # The LLM SDK's HTTP client logs every request at INFO.
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "openai": {"level": "WARNING"},
    },
}

# The model agents call (docs/llm.md): STREAMDESK_LLM_BASE_URL/_API_KEY/_MODEL, or none for the
# agents' deterministic built-in models; STREAMDESK_LLM_PRICES for the cost per run.
STREAMDESK_LLM = configured(llm_config_from_env)
