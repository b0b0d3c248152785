"""Tally settings, read from the environment.

With nothing set, Tally runs in local development mode on SQLite with a Celery broker that needs no
server (the filesystem transport), so one command starts everything on a laptop. `DATABASE_URL`
switches to PostgreSQL, `REDIS_URL` to Redis (broker, cache and push channel), and
`TALLY_ENV=production` turns on the production checks (a real `SECRET_KEY` is then required).
"""

import importlib.util
import secrets
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.env import (
    env_bool,
    env_choice,
    env_int,
    env_list,
    env_networks,
    env_rate,
    env_str,
)

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("TALLY_DATA_DIR") or BASE_DIR / "var")
DATA_DIR.mkdir(parents=True, exist_ok=True)

TALLY_ENV = env_choice("TALLY_ENV", "development", ("development", "production"))
PRODUCTION = TALLY_ENV == "production"
DEBUG = env_bool("DJANGO_DEBUG", not PRODUCTION)
if PRODUCTION and DEBUG:
    raise ImproperlyConfigured("DJANGO_DEBUG must be off when TALLY_ENV=production.")


def _secret_key() -> str:
    key = env_str("SECRET_KEY")
    if key:
        if PRODUCTION and (len(key) < 50 or len(set(key)) < 5):
            raise ImproperlyConfigured("SECRET_KEY must be at least 50 random characters.")
        return key
    if PRODUCTION:
        raise ImproperlyConfigured("SECRET_KEY must be set when TALLY_ENV=production.")
    # Local development: a random key kept next to the data, never committed.
    key_file = DATA_DIR / "secret_key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(64))
        key_file.chmod(0o600)
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()

ALLOWED_HOSTS = env_list(
    "ALLOWED_HOSTS", [] if PRODUCTION else ["localhost", "127.0.0.1", "[::1]", "testserver"]
)
if PRODUCTION and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must be set when TALLY_ENV=production.")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
CORS_ALLOWED_ORIGINS = env_list("CORS_ALLOWED_ORIGINS", [])
CORS_ALLOW_CREDENTIALS = False

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "corsheaders",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served by us: /api/docs/ works offline
    "django_celery_beat",
    "accounts",
    "annotation",
    "learning",
    "delivery",
    "frontend",
]
# The demo and the benchmarks' commands (`./tally up`, `manage.py benchmark_*`) are in devtools/,
# which a checkout has and a production install does not (pyproject.toml does not package it).
if importlib.util.find_spec("devtools") is not None:
    INSTALLED_APPS.append("devtools")

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "common.middleware.ContentSecurityPolicy",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "common.middleware.RefuseUnreadable",
    "corsheaders.middleware.CorsMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "common.middleware.ApiTrailingSlash",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "accounts.device.SignedInCookie",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "common.middleware.DatabaseUnavailable",
]

# The pages load their scripts, styles, images and fonts from this site only and talk to it only
# (the API, the event streams); nothing inline runs, nothing frames them (common.middleware).
# The interactive API docs relax it for Swagger UI's own inline style (common.api.docs).
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
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

# Database: PostgreSQL from DATABASE_URL, else a local SQLite file.
DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    try:
        DATABASES = {
            "default": dj_database_url.parse(
                DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 60, minimum=0)
            )
        }
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is not a database URL: {exc}") from exc
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # A kept connection is checked before each use outside a transaction, without a round
        # trip: a PostgreSQL restart fails no request or task on a dead one (config/postgresql).
        DATABASES["default"]["ENGINE"] = "config.postgresql"
        # Only the annotator's hot statements are prepared on the server (`annotation.hotpath`);
        # each is written for one plan whatever its parameters. Left to choose, PostgreSQL may
        # plan such a statement afresh on every execution, which costs more than running it.
        options = DATABASES["default"].setdefault("OPTIONS", {})
        options["options"] = " ".join(
            filter(None, [options.get("options"), "-c plan_cache_mode=force_generic_plan"])
        )
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "tally.sqlite3",
            # WAL lets the web server and the worker read while the other writes.
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Redis: broker, cache and push channel. Without it: filesystem broker and file cache, which
# several local processes share.
REDIS_URL = env_str("REDIS_URL")
if REDIS_URL and not REDIS_URL.startswith(("redis://", "rediss://", "unix://")):
    raise ImproperlyConfigured("REDIS_URL must start with redis://, rediss:// or unix://.")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(DATA_DIR / "cache"),
        }
    }

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT") or DATA_DIR / "static")
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
MEDIA_ROOT = Path(env_str("MEDIA_ROOT") or DATA_DIR / "media")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "frontend.storage.StaticFilesStorage"
        if PRODUCTION
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# Uploads: corpora stream to a temporary file past 2.5 MB; the import itself enforces its limit.
TALLY_MAX_UPLOAD_BYTES = env_int("TALLY_MAX_UPLOAD_BYTES", 50 * 1024 * 1024, minimum=1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
# What one import may create (annotation/services/corpus.py): sentences per file, sentences and
# tasks per project. Beyond them a 413 names the setting. A file larger than
# TALLY_IMPORT_SYNC_BYTES (decompressed) or with more than TALLY_IMPORT_SYNC_SENTENCES is imported
# by a worker (202 and a job to follow) instead of inside the request.
TALLY_MAX_IMPORT_SENTENCES = env_int("TALLY_MAX_IMPORT_SENTENCES", 100_000, minimum=1)
TALLY_MAX_PROJECT_SENTENCES = env_int("TALLY_MAX_PROJECT_SENTENCES", 500_000, minimum=1)
TALLY_MAX_PROJECT_TASKS = env_int("TALLY_MAX_PROJECT_TASKS", 2_000_000, minimum=1)
TALLY_IMPORT_SYNC_BYTES = env_int("TALLY_IMPORT_SYNC_BYTES", 1024 * 1024, minimum=0)
TALLY_IMPORT_SYNC_SENTENCES = env_int("TALLY_IMPORT_SYNC_SENTENCES", 2_000, minimum=0)
DATA_UPLOAD_MAX_MEMORY_SIZE = 2_621_440
# Import jobs queued or running at once (each keeps its upload on disk until a worker runs it):
# per project (409 `import_queue_full` beyond) and per user (429 `too_many_imports`).
TALLY_IMPORT_JOBS_PER_PROJECT = env_int("TALLY_IMPORT_JOBS_PER_PROJECT", 2, minimum=1)
TALLY_IMPORT_JOBS_PER_USER = env_int("TALLY_IMPORT_JOBS_PER_USER", 3, minimum=1)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "accounts.authentication.ApiTokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "common.api.schema.TallySchema",
    "DEFAULT_PARSER_CLASSES": [
        "common.api.parsers.JsonParser",
        "common.api.parsers.FormParser",
        "common.api.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "common.api.pagination.Pagination",
    "EXCEPTION_HANDLER": "common.api.errors.exception_handler",
    "PAGE_SIZE": 50,
    "DEFAULT_THROTTLE_RATES": {
        "register": env_rate("TALLY_REGISTER_RATE", "60/min"),
        # `POST predict/` per user: "Try the model" by hand stays far below it.
        "predict": env_rate("TALLY_PREDICT_RATE", "30/min"),
        # Password-reset e-mails asked for, per client address.
        "password_reset": env_rate("TALLY_PASSWORD_RESET_RATE", "10/hour"),
    },
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
# Sign-in (accounts/signin.py): failed attempts per username and per client address, at every
# door; the client address is taken past the proxies listed here (X-Forwarded-For).
TALLY_LOGIN_RATE = env_rate("TALLY_LOGIN_RATE", "10/min")
TALLY_LOGIN_ADDRESS_RATE = env_rate("TALLY_LOGIN_ADDRESS_RATE", "60/min")
TALLY_TRUSTED_PROXIES = env_networks("TALLY_TRUSTED_PROXIES")
# API tokens (accounts/models.py): one per device, each lasting TALLY_API_TOKEN_DAYS; past
# TALLY_API_TOKENS_PER_USER a new one revokes the user's oldest.
TALLY_API_TOKEN_DAYS = env_int("TALLY_API_TOKEN_DAYS", 30, minimum=1)
TALLY_API_TOKENS_PER_USER = env_int("TALLY_API_TOKENS_PER_USER", 10, minimum=1)
# E-mail (password resets): Django's backend and server from the environment; by default the
# console backend, which writes each message to the web process's output.
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10, minimum=1)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "Tally <tally@localhost>")
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("Set EMAIL_USE_TLS or EMAIL_USE_SSL, not both.")
AUTHENTICATION_BACKENDS = [
    "accounts.backends.ThrottledModelBackend",  # every password check (it ends the chain)
    "django.contrib.auth.backends.ModelBackend",  # sessions signed in before it existed
]

SPECTACULAR_SETTINGS = {
    "TITLE": "Tally API",
    "DESCRIPTION": "Region-count annotation tasks, observations, projects and models.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "PATH_CONVERTER_OVERRIDES": {"id": int},  # config.converters.IdConverter
    # Request bodies get components of their own (`…Request`): an upload is binary there, and a
    # text field the API refuses blank has `minLength: 1`.
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "ProjectStatusEnum": "annotation.models.Project.Status",
        "RunStatusEnum": "learning.models.RetrainRun.Status",
        "DeliveryStatusEnum": "delivery.models.WebhookDelivery.Status",
    },
    # Swagger UI from the drf-spectacular-sidecar package's static files, not from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# Celery: one app in config/celery.py; JSON only; bounded time.
CELERY_BROKER_URL = REDIS_URL or "filesystem://"
CELERY_BROKER_TRANSPORT_OPTIONS = (
    {"socket_connect_timeout": 2, "socket_timeout": 5, "max_retries": 1}
    if REDIS_URL
    else {
        "data_folder_in": str(DATA_DIR / "broker"),
        "data_folder_out": str(DATA_DIR / "broker"),
        "processed_folder": str(DATA_DIR / "broker-processed"),
        "control_folder": str(DATA_DIR / "broker-control"),
        "store_processed": False,
    }
)
if not REDIS_URL:
    (DATA_DIR / "broker").mkdir(exist_ok=True)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = env_int("TALLY_TASK_TIME_LIMIT", 30 * 60, minimum=10)
CELERY_TASK_SOFT_TIME_LIMIT = CELERY_TASK_TIME_LIMIT - 5
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_WORKER_HIJACK_ROOT_LOGGER = False  # workers log through LOGGING below, like the web
CELERY_TIMEZONE = TIME_ZONE

# Retraining (learning/). A retrain lock's claim lasts TALLY_RETRAIN_LOCK_SECONDS unless its
# holder renews it (every third of that, while the job runs: learning/locks.py), so a worker
# killed mid-retrain holds the project for at most that long.
TALLY_RETRAIN_TIME_LIMIT = env_int("TALLY_RETRAIN_TIME_LIMIT", 15 * 60, minimum=10)
TALLY_RETRAIN_LOCK_SECONDS = env_int("TALLY_RETRAIN_LOCK_SECONDS", 15, minimum=3)
TALLY_RETRAIN_INTERVAL_MINUTES = env_int("TALLY_RETRAIN_INTERVAL_MINUTES", 10, minimum=1)
TALLY_RETRAIN_SWEEP_SECONDS = env_int("TALLY_RETRAIN_SWEEP_SECONDS", 60, minimum=1)
# The live model (learning/live.py): published at most every TALLY_LIVE_MODEL_SECONDS (0: off,
# the default until it learns as well as a retrain: docs/decisions/015-online-em.md), each
# update applying at most TALLY_LIVE_BLOCK_ANSWERS new answers.
TALLY_LIVE_MODEL_SECONDS = env_int("TALLY_LIVE_MODEL_SECONDS", 0, minimum=0)
TALLY_LIVE_BLOCK_ANSWERS = env_int("TALLY_LIVE_BLOCK_ANSWERS", 20_000, minimum=1)
TALLY_CODE_VERSION = env_str("TALLY_CODE_VERSION")
# Webhooks: internal targets (loopback, private, link-local) only when the admin allows them.
TALLY_WEBHOOK_ALLOW_INTERNAL = env_bool("TALLY_WEBHOOK_ALLOW_INTERNAL", False)
TALLY_WEBHOOK_BACKOFF_SECONDS = env_int("TALLY_WEBHOOK_BACKOFF_SECONDS", 10, minimum=0)
# Server-sent events: each stream ends after this long (EventSource reconnects).
TALLY_SSE_STREAM_SECONDS = env_int("TALLY_SSE_STREAM_SECONDS", 30, minimum=1)
TALLY_SSE_POLL_SECONDS = env_int("TALLY_SSE_POLL_SECONDS", 2, minimum=1)
# Open event streams per user, across every process (a manager's tabs on several projects).
TALLY_SSE_STREAMS_PER_USER = env_int("TALLY_SSE_STREAMS_PER_USER", 10, minimum=1)
# ... per client address (accounts are free to make; an office behind one address has room) and
# in all, across the event servers (`manage.py benchmark_streams` measures what one holds).
TALLY_SSE_STREAMS_PER_ADDRESS = env_int("TALLY_SSE_STREAMS_PER_ADDRESS", 50, minimum=1)
TALLY_SSE_STREAMS_TOTAL = env_int("TALLY_SSE_STREAMS_TOTAL", 1000, minimum=1)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "json": {"()": "config.logging.JsonFormatter"},
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": env_choice(
                "TALLY_LOG_FORMAT", "json" if PRODUCTION else "plain", ("json", "plain")
            ),
        }
    },
    "filters": {
        # The embedded broker (filesystem://) has no host: kombu's warning about it means nothing.
        "embedded_broker": {
            "()": "config.logging.DropMessages",
            "prefixes": () if REDIS_URL else ("No hostname was supplied",),
        },
    },
    "root": {"handlers": ["console"], "level": env_str("TALLY_LOG_LEVEL") or "INFO"},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "kombu.connection": {"filters": ["embedded_broker"]},
    },
}

if PRODUCTION:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000, minimum=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
