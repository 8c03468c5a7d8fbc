"""Settings, all read from the environment in this one place.

Defaults are for `make run` on a laptop: SQLite and a filesystem Celery broker under `var/`, no
services needed. Production and CI set DATABASE_URL (PostgreSQL) and REDIS_URL or CELERY_BROKER_URL.
"""

from __future__ import annotations

import ipaddress
import logging
import secrets
from datetime import timedelta
from pathlib import Path

import environ
from celery.schedules import crontab
from csp.constants import NONE, SELF

from assay.inputs import http_url
from assay.paths import BASE_DIR, var_dir
from assay.sso import SIGN_ALGORITHMS, GroupMap, issuer_problem, origin, parse_group_map

VAR_DIR = var_dir()
VAR_DIR.mkdir(parents=True, exist_ok=True)

env = environ.Env()


def _secret_key() -> str:
    """The key from the environment, else one generated once and kept in var/ (never in the repo)."""
    key = env.str("DJANGO_SECRET_KEY", default="")
    if key:
        return key
    path = VAR_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


DEBUG = env.bool("DJANGO_DEBUG", default=False)
SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])
# The public URL: links printed by commands and the run page's address in notifications.
SITE_URL = env.str("ASSAY_SITE_URL", default="http://127.0.0.1:8000").rstrip("/")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "axes",
    "csp",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "labeling",
    "golden_io",
    "evaluation",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # A body over the upload limit (or, not an upload, over DATA_UPLOAD_MAX_MEMORY_SIZE) is a worded 413
    # before anything reads it.
    "config.middleware.RefuseOversizedBodies",
    # A NUL byte in a page's address, query or form is a worded 400, never a database error.
    "config.middleware.RefuseNulBytes",
    "csp.middleware.CSPMiddleware",
    # Under DEBUG, the app's 404 and 500 pages for everyone but a superuser, never Django's technical ones
    # (every URL pattern, settings, a traceback). Outside CommonMiddleware: its slash redirects stay.
    "config.middleware.HideTechnicalPages",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Login everywhere: views opt out with @login_not_required (the health check, the token API).
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last: turns a login the throttle refused (config.auth.LoginThrottleBackend) into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

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
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'assay.sqlite3'}")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # make run serves web and worker from one SQLite file: wait for the write lock instead of failing.
    # A deferred transaction that reads and then writes cannot wait (SQLite answers "database is locked" at
    # once to avoid a deadlock); IMMEDIATE takes the write lock at BEGIN, where the timeout applies. WAL
    # lets pages read while a grade is being written. docs/deployment.md, "SQLite or PostgreSQL".
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": env.float("ASSAY_SQLITE_TIMEOUT", default=20.0),
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
DATABASES["default"]["ATOMIC_REQUESTS"] = False
# Reuse connections across requests (a grade save is a few milliseconds of SQL; a new connection is more).
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("ASSAY_DB_CONN_MAX_AGE", default=60))
DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    "config.auth.LoginThrottleBackend",  # refuses a locked-out login before the password is checked
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env.str("ASSAY_TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
WHITENOISE_USE_FINDERS = True  # serve from static/ without collectstatic (make run, live-server tests)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # the grading page's fetch reads it from the cookie
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
CSRF_FAILURE_VIEW = "config.views.csrf_failure"
# Under DEBUG, Django's technical error page only for a superuser (config.middleware.HideTechnicalPages).
DEFAULT_EXCEPTION_REPORTER = "config.middleware.HiddenExceptionReporter"
if env.bool("ASSAY_PROXY_SSL_HEADER", default=False):
    # Only behind a proxy that sets X-Forwarded-Proto itself (and drops a client's): otherwise anyone could
    # claim HTTPS. docs/deployment.md, "Behind a proxy".
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
if not DEBUG and env.bool("ASSAY_HTTPS", default=False):
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = True
    # The load balancer's health check speaks plain HTTP to the web process.
    SECURE_REDIRECT_EXEMPT = [r"^health/$"]
    SECURE_HSTS_SECONDS = env.int("ASSAY_HSTS_SECONDS", default=0)
    if SECURE_HSTS_SECONDS < 0:
        raise ValueError(f"ASSAY_HSTS_SECONDS must be 0 (no HSTS) or more, got {SECURE_HSTS_SECONDS}")
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("ASSAY_HSTS_INCLUDE_SUBDOMAINS", default=True)
    SECURE_HSTS_PRELOAD = env.bool("ASSAY_HSTS_PRELOAD", default=False)
# Every page's script is a file under static/ (no inline script, no eval: templates/base.html sets
# htmx's config to match); Swagger UI is served by drf-spectacular's split view for the same reason.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

# --- Login throttling (django-axes, docs/deployment.md "Login throttling") -------------------------
AXES_FAILURE_LIMIT = env.int("ASSAY_LOGIN_FAILURE_LIMIT", default=5)
_lockout_minutes = env.int("ASSAY_LOGIN_LOCKOUT_MINUTES", default=15)
if AXES_FAILURE_LIMIT < 1 or _lockout_minutes < 0:
    raise ValueError(
        "ASSAY_LOGIN_FAILURE_LIMIT must be 1 or more and ASSAY_LOGIN_LOCKOUT_MINUTES 0 (until unlocked) or"
        f" more, got {AXES_FAILURE_LIMIT} and {_lockout_minutes}"
    )
# Per account and address together: a mistyping colleague behind the same NAT, or someone guessing
# another account, does not lock anyone else out.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_COOLOFF_TIME = timedelta(minutes=_lockout_minutes) if _lockout_minutes else None
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
# The address a lockout counts by: REMOTE_ADDR, or behind a proxy the header it sets (config/auth.py).
ASSAY_CLIENT_IP_HEADER = env.str("ASSAY_CLIENT_IP_HEADER", default="")
AXES_CLIENT_IP_CALLABLE = "config.auth.client_ip"

# --- Single sign-on (OpenID Connect by mozilla-django-oidc, docs/deployment.md "Single sign-on") ----
# Off unless ASSAY_OIDC_ISSUER is set; local accounts sign in beside it (config/sso.py, config/sso_views.py).
ASSAY_OIDC_ISSUER = env.str("ASSAY_OIDC_ISSUER", default="")
ASSAY_OIDC_NAME = env.str("ASSAY_OIDC_NAME", default="single sign-on")  # "Log in with <name>"
ASSAY_OIDC_GROUPS_CLAIM = env.str("ASSAY_OIDC_GROUPS_CLAIM", default="groups")
ASSAY_OIDC_GROUP_MAP = GroupMap()
ASSAY_OIDC_SESSION_HOURS = env.float("ASSAY_OIDC_SESSION_HOURS", default=12.0)
OIDC_TIMEOUT = env.float("ASSAY_OIDC_TIMEOUT", default=10.0)
if ASSAY_OIDC_ISSUER:
    if _problem := issuer_problem(ASSAY_OIDC_ISSUER):
        raise ValueError(f"ASSAY_OIDC_ISSUER {_problem}")
    # The secret comes from the environment only: never a file in the repository, never the database.
    OIDC_RP_CLIENT_ID = env.str("ASSAY_OIDC_CLIENT_ID", default="")
    OIDC_RP_CLIENT_SECRET = env.str("ASSAY_OIDC_CLIENT_SECRET", default="")
    if not OIDC_RP_CLIENT_ID or not OIDC_RP_CLIENT_SECRET:
        raise ValueError(
            "ASSAY_OIDC_ISSUER is set: set ASSAY_OIDC_CLIENT_ID and ASSAY_OIDC_CLIENT_SECRET too"
        )
    OIDC_RP_SCOPES = env.str("ASSAY_OIDC_SCOPES", default="openid email profile")
    if "openid" not in OIDC_RP_SCOPES.split():
        raise ValueError(f"ASSAY_OIDC_SCOPES must include openid, got {OIDC_RP_SCOPES!r}")
    OIDC_RP_SIGN_ALGO = env.str("ASSAY_OIDC_SIGN_ALGO", default="RS256")
    if OIDC_RP_SIGN_ALGO not in SIGN_ALGORITHMS:
        raise ValueError(
            f"ASSAY_OIDC_SIGN_ALGO must be one of {', '.join(SIGN_ALGORITHMS)}, got {OIDC_RP_SIGN_ALGO!r}"
        )
    # How the client proves itself at the token endpoint: HTTP Basic (client_secret_basic, the default of
    # OpenID Connect) or form fields (client_secret_post), as the client is registered at the provider.
    _client_auth = env.str("ASSAY_OIDC_TOKEN_AUTH", default="basic")
    if _client_auth not in ("basic", "post"):
        raise ValueError(f"ASSAY_OIDC_TOKEN_AUTH must be basic or post, got {_client_auth!r}")
    OIDC_TOKEN_USE_BASIC_AUTH = _client_auth == "basic"
    ASSAY_OIDC_GROUP_MAP = parse_group_map(env.str("ASSAY_OIDC_GROUP_MAP", default=""))
    if ASSAY_OIDC_SESSION_HOURS <= 0:
        raise ValueError(f"ASSAY_OIDC_SESSION_HOURS must be more than 0, got {ASSAY_OIDC_SESSION_HOURS}")
    OIDC_USE_PKCE = True
    OIDC_STORE_ID_TOKEN = True  # sent back as id_token_hint when the user logs out
    AUTHENTICATION_BACKENDS.append("config.sso.SsoBackend")
    # The logout form's redirect to the provider's end-session endpoint is a form's action too.
    CONTENT_SECURITY_POLICY["DIRECTIVES"]["form-action"].append(origin(ASSAY_OIDC_ISSUER))

# --- Celery -------------------------------------------------------------------------------------
REDIS_URL = env.str("REDIS_URL", default="")
_broker_dir = VAR_DIR / "broker"
# The filesystem transport ignores the host; naming one keeps kombu from warning that none was given.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL or "filesystem://localhost//")
if CELERY_BROKER_URL.startswith("filesystem://"):
    # Kombu's filesystem transport with each message written whole before it can be taken (config/broker.py).
    CELERY_BROKER_TRANSPORT = "config.broker:Transport"
    for sub in ("in", "processed", "control"):
        (_broker_dir / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {
        "data_folder_in": str(_broker_dir / "in"),
        "data_folder_out": str(_broker_dir / "in"),
        "processed_folder": str(_broker_dir / "processed"),
        # The exchange tables; kombu's default is ./control in whatever directory the process starts in.
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
        # How long a consumer waits between two looks at an empty queue: kombu's 1 s default made every
        # hop of a run (queued -> start, a chunk, finalize) wait up to a second. docs/runs.md, "Brokers".
        "polling_interval": env.float("ASSAY_BROKER_POLL_S", default=0.1),
    }
else:
    # A chunk task may run for minutes; Redis must not redeliver it to another worker meanwhile. A lost
    # worker's chunks do not wait for this: their leases run out in seconds (docs/runs.md, "Worker loss").
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=3600)
    }
    # A worker takes a message only when a pool process is free for it, so every chunk a worker holds is
    # a running one with a lease: a killed worker takes no unstarted chunk with it (Redis brokers only).
    CELERY_WORKER_DISABLE_PREFETCH = CELERY_BROKER_URL.startswith(("redis://", "rediss://"))
_results_dir = VAR_DIR / "celery-results"
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default=REDIS_URL or f"file://{_results_dir}")
if CELERY_RESULT_BACKEND.startswith("file://"):
    _results_dir.mkdir(parents=True, exist_ok=True)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ACKS_LATE = False  # opted into per task, only where the task is idempotent
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = TIME_ZONE
CELERY_BEAT_SCHEDULE = {
    # Due nightly schedules are checked every few minutes; each RunSchedule says its own hour.
    "evaluation-runs-nightly": {"task": "evaluation.runs_nightly", "schedule": crontab(minute="*/5")},
    # Send again the chunks whose lease ran out (a lost worker), restart lost queued runs, re-send stalled
    # work, finalize abandoned runs. Every 15 s: with the 20 s lease, a lost worker is noticed within 35 s.
    "evaluation-runs-sweep": {"task": "evaluation.runs_sweep", "schedule": 15.0},
    # The same for experiments' chunks (evaluation/experiments/tasks.py, docs/experiments.md).
    "evaluation-experiments-sweep": {"task": "evaluation.experiments_sweep", "schedule": 15.0},
    # Send again the unfinished chunks of judge jobs whose heartbeat stopped (labeling/tasks.py).
    "labeling-judge-jobs-sweep": {"task": "labeling.judge_jobs_sweep", "schedule": 15.0},
}
# A run of at most this many rounds of its target's concurrency (128 queries at the default 8, at most a
# chunk's 500) is one chunk, searched and finalized by the task that starts it: split, it would make at most
# four chunks of the least size, and at a fast engine's latency the broker hops of a fan-out (a chord's
# header and callback) cost more than the rounds they would share out. 0: every run is fanned out.
ASSAY_RUN_ONE_CHUNK_ROUNDS = env.int("ASSAY_RUN_ONE_CHUNK_ROUNDS", default=16)
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# On SQLite the one-scheduler lock is a file lock here (config/beat_lock.py); on PostgreSQL an advisory lock.
ASSAY_BEAT_LOCK_FILE = env.str("ASSAY_BEAT_LOCK_FILE", default=str(VAR_DIR / "celerybeat.lock"))

# --- REST API -----------------------------------------------------------------------------------
REST_FRAMEWORK = {
    # A token (CI) or the browser session (which keeps DRF's CSRF check); nothing else.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "evaluation.runs.api.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Deny by default: signed in, and a token needs the scope its view names (a view naming none refuses
    # every token). Object permissions are the pages' (evaluation.runs.access).
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "evaluation.runs.api.permissions.TokenScopes",
    ],
    "DEFAULT_PAGINATION_CLASS": "evaluation.runs.api.pagination.OrderedLimitOffsetPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # JSON bodies bounded in depth and size: a worded 400, never a RecursionError (assay.jsonin).
    "DEFAULT_PARSER_CLASSES": ["evaluation.runs.api.parsers.BoundedJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "evaluation.runs.api.schema.ApiAutoSchema",
    # Every error answers {"detail", "problems"} (evaluation/runs/api/errors.py).
    "EXCEPTION_HANDLER": "evaluation.runs.api.errors.api_exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Assay API",
    "DESCRIPTION": "Golden sets, golden versions, search targets and evaluation runs. "
    "Authenticate with `Authorization: Bearer <token>`; see docs/api.md.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Signed in (a session, or a token of any scope): only the health check answers strangers.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # Swagger UI drawn to pass axe-core (templates/drf_spectacular/swagger_ui.html): no deep links (a link
    # inside each operation's toggle button is a control nested in a control), no models section, no
    # syntax colours (too faint on their dark ground).
    "SWAGGER_UI_SETTINGS": {
        "deepLinking": False,
        "defaultModelsExpandDepth": -1,
        "syntaxHighlight": {"activated": False},
    },
    "REDOC_DIST": "SIDECAR",
    # An experiment's status choices differ from a run's: each enum named for its model.
    "ENUM_NAME_OVERRIDES": {
        "StatusEnum": "evaluation.runs.models.EvaluationRun.Status",
        "ExperimentStatusEnum": "evaluation.experiments.models.Experiment.Status",
    },
}

# --- Email (run notifications, docs/runs.md) ------------------------------------------------------
# `make run` (DEBUG) prints mail in the worker's log; otherwise SMTP, by default to localhost:25.
EMAIL_BACKEND = env.str(
    "EMAIL_BACKEND",
    default="django.core.mail.backends.console.EmailBackend"
    if DEBUG
    else "django.core.mail.backends.smtp.EmailBackend",
)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="Assay <assay@localhost>")
EMAIL_HOST = env.str("EMAIL_HOST", default="localhost")
EMAIL_PORT = env.int("EMAIL_PORT", default=25)
EMAIL_HOST_USER = env.str("EMAIL_HOST_USER", default="")
EMAIL_HOST_PASSWORD = env.str("EMAIL_HOST_PASSWORD", default="")
EMAIL_USE_TLS = env.bool("EMAIL_USE_TLS", default=False)
EMAIL_USE_SSL = env.bool("EMAIL_USE_SSL", default=False)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ValueError("EMAIL_USE_TLS (STARTTLS, port 587) and EMAIL_USE_SSL (port 465): set one of them")
# Django waits for ever by default; a notification task must give up and retry instead.
EMAIL_TIMEOUT = env.float("EMAIL_TIMEOUT", default=10.0)
EMAIL_FILE_PATH = env.str("EMAIL_FILE_PATH", default=str(VAR_DIR / "mail"))  # the filebased backend's

# --- Assay --------------------------------------------------------------------------------------
# The largest file an upload may carry (golden files, documents, query logs, run files), in MB: a larger
# one is refused with its size named (config.middleware.RefuseOversizedBodies, labeling.forms.UploadForm).
# Other bodies (forms, JSON) are bounded by Django's DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB).
ASSAY_MAX_UPLOAD_MB = env.int("ASSAY_MAX_UPLOAD_MB", default=50)
if ASSAY_MAX_UPLOAD_MB < 1:
    raise ValueError(f"ASSAY_MAX_UPLOAD_MB must be 1 or more, got {ASSAY_MAX_UPLOAD_MB}")
ASSAY_MAX_UPLOAD_BYTES = ASSAY_MAX_UPLOAD_MB * 1024 * 1024
# The most queries a golden file uploaded on the web may hold: checking and writing them must end well
# inside the web server's worker timeout (about 2 ms a query on a busy machine; 10,000 take 20 s). A
# larger file is refused in words naming `manage.py import_golden`, which has no limit (docs/labeling.md).
ASSAY_WEB_GOLDEN_MAX_QUERIES = env.int("ASSAY_WEB_GOLDEN_MAX_QUERIES", default=10_000)
if ASSAY_WEB_GOLDEN_MAX_QUERIES < 1:
    raise ValueError(f"ASSAY_WEB_GOLDEN_MAX_QUERIES must be 1 or more, got {ASSAY_WEB_GOLDEN_MAX_QUERIES}")
# The most judgments (rows) a file uploaded there may hold, in any format: a file of few queries and many
# rows takes as long to convert, check and write as its rows (about 0.1 ms a row converted, more written).
# Both limits are counted before the file is converted (assay.convert.sizes), so a larger file is refused
# at once.
ASSAY_WEB_GOLDEN_MAX_JUDGMENTS = env.int("ASSAY_WEB_GOLDEN_MAX_JUDGMENTS", default=50_000)
if ASSAY_WEB_GOLDEN_MAX_JUDGMENTS < 1:
    raise ValueError(
        f"ASSAY_WEB_GOLDEN_MAX_JUDGMENTS must be 1 or more, got {ASSAY_WEB_GOLDEN_MAX_JUDGMENTS}"
    )
# ASSAY_GIT_EXPORT_ROOTS and ASSAY_SECRET_ENV_PREFIX are read where they are checked: assay/secrets.py.

# --- Metrics for operators (docs/deployment.md, "Metrics") --------------------------------------------
# /metrics is a 404 unless enabled, and enabled it answers only a scraper that shows the bearer token, or
# comes from an allowed address, or both when both are set: never anyone on the way.
ASSAY_METRICS_ENABLED = env.bool("ASSAY_METRICS_ENABLED", default=False)
ASSAY_METRICS_TOKEN = env.str("ASSAY_METRICS_TOKEN", default="")
METRICS_TOKEN_MIN = 16


def _networks(name: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """A comma-separated list of addresses and networks (`10.0.0.0/8,127.0.0.1`), each read by ipaddress."""
    networks = []
    for entry in env.list(name, default=[]):
        try:
            networks.append(ipaddress.ip_network(entry.strip(), strict=False))
        except ValueError:
            raise ValueError(
                f"{name}: {entry!r} is neither an IP address nor a network (like 10.0.0.0/8)"
            ) from None
    return tuple(networks)


ASSAY_METRICS_ALLOW_IPS = _networks("ASSAY_METRICS_ALLOW_IPS")
if ASSAY_METRICS_TOKEN and len(ASSAY_METRICS_TOKEN) < METRICS_TOKEN_MIN:
    raise ValueError(f"ASSAY_METRICS_TOKEN must be at least {METRICS_TOKEN_MIN} characters long")
if ASSAY_METRICS_ENABLED and not (ASSAY_METRICS_TOKEN or ASSAY_METRICS_ALLOW_IPS):
    raise ValueError(
        "ASSAY_METRICS_ENABLED is true but neither ASSAY_METRICS_TOKEN nor ASSAY_METRICS_ALLOW_IPS is set: "
        "/metrics is never public, so set a token, an address allow-list, or both"
    )
# Where prometheus-client's multiprocess mode keeps the counters the workers increment (judge calls):
# the same directory for every web process and worker of a machine; /metrics adds them up.
PROMETHEUS_MULTIPROC_DIR = env.str("PROMETHEUS_MULTIPROC_DIR", default="")
if PROMETHEUS_MULTIPROC_DIR:
    # Made here, before any counter is: prometheus-client opens its file in it at the first one.
    Path(PROMETHEUS_MULTIPROC_DIR).mkdir(parents=True, exist_ok=True)
# How often each Celery worker writes its heartbeat to the broker (config/heartbeats.py); a worker whose
# heartbeat is older than three of these no longer counts as up.
ASSAY_WORKER_HEARTBEAT_S = env.float("ASSAY_WORKER_HEARTBEAT_S", default=10.0)
if ASSAY_WORKER_HEARTBEAT_S <= 0:
    raise ValueError(f"ASSAY_WORKER_HEARTBEAT_S must be more than 0, got {ASSAY_WORKER_HEARTBEAT_S}")


def _demo_url(name: str, default: str) -> str:
    """A demo stand-in's address (`make run` starts it on this URL's port, on loopback): an http URL with
    a host, and a port when one is written."""
    url = env.str(name, default=default)
    if http_url(url) is None:
        raise ValueError(f"{name} must be an http URL with a host, like {default}, got {url!r}")
    return url


# The demo search service's /search, and the demo judge stand-in's OpenAI-compatible base URL (which
# `demo_load` writes into the stand-in judges): change the ports when two stacks share a machine.
ASSAY_DEMO_SEARCH_URL = _demo_url("ASSAY_DEMO_SEARCH_URL", "http://127.0.0.1:8765/search")
ASSAY_DEMO_JUDGE_URL = _demo_url("ASSAY_DEMO_JUDGE_URL", "http://127.0.0.1:8766/v1")
# `make run`'s Celery worker and beat log at this level; at info or debug they also print their banners.
ASSAY_CELERY_LOG_LEVEL = env.str("ASSAY_CELERY_LOG_LEVEL", default="warning").lower()
# Notifications: seconds a webhook call may take, and the delay before the first retry (doubling after).
ASSAY_NOTIFY_TIMEOUT = env.float("ASSAY_NOTIFY_TIMEOUT", default=10.0)
ASSAY_NOTIFY_RETRY_DELAY = env.float("ASSAY_NOTIFY_RETRY_DELAY", default=30.0)

# One line per event, on stderr. The development server's line per request (`make run`) only when asked:
# ASSAY_LOG_REQUESTS=true. A 4xx is then that line alone; otherwise django.request's "Not Found: /x" is
# its one line. Django's own console handler is left out (under DEBUG it printed django.* a second time).
ASSAY_LOG_REQUESTS = env.bool("ASSAY_LOG_REQUESTS", default=False)


def _server_errors_only(record: object) -> bool:
    return int(getattr(record, "status_code", 500) or 500) >= 500


def _refusals_in_one_line(record: logging.LogRecord) -> bool:
    """A 4xx that an exception answered (the admin's 403 on a change, delete or add of label data, a
    PermissionDenied anywhere) is a refusal working as meant: its one line ("Forbidden (Permission
    denied): /admin/...") without the exception's traceback. A 5xx keeps its traceback."""
    if int(getattr(record, "status_code", 500) or 500) < 500:
        record.exc_info = None
        record.exc_text = None
    return True


LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "server_errors_only": {"()": "django.utils.log.CallbackFilter", "callback": _server_errors_only},
        "refusals_in_one_line": {"()": "django.utils.log.CallbackFilter", "callback": _refusals_in_one_line},
    },
    "formatters": {
        "django.server": {
            "()": "django.utils.log.ServerFormatter",
            "format": "[{server_time}] {message}",
            "style": "{",
        }
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler"},
        "django.server": {"class": "logging.StreamHandler", "formatter": "django.server"},
    },
    "root": {"handlers": ["console"], "level": env.str("ASSAY_LOG_LEVEL", default="INFO")},
    "loggers": {
        "django": {"handlers": [], "level": "INFO"},
        "django.server": {
            "handlers": ["django.server"],
            "level": "INFO" if ASSAY_LOG_REQUESTS else "CRITICAL",
            "propagate": False,
        },
        # With request lines on, a 4xx is that line alone; without, a refusal is one line of its own.
        "django.request": {
            "filters": ["server_errors_only"] if ASSAY_LOG_REQUESTS else ["refusals_in_one_line"]
        },
        # Its start-up line ("AXES: BEGIN ...") in every process, and a line per login; lockouts are warnings.
        "axes": {"level": "WARNING"},
    },
}
