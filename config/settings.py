"""Settings for the banking API.

Everything environment-specific comes from environment variables (names in the
README, "Configuration"). Which kind of run this is fails closed:

- No `DATABASE_URL`: the embedded default, a zero-setup development start
  (SQLite, Celery in-process, local files, console e-mail, generated secrets).
- `DATABASE_URL` set: a deployment. SECRET_KEY, FIELD_ENCRYPTION_KEY, the JWT
  private key, ALLOWED_HOSTS and TRUSTED_PROXY_COUNT must be given; if any is
  missing, start-up stops with one message naming all of them.
- `BANKAPI_ENV` chooses explicitly: `production` (a deployment, whatever the
  database) or `development` (generated secrets, e.g. the test suite on PostgreSQL).
"""

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from bankapi.ops.logs import logging_settings
from config import dev_secrets
from config.env import (
    email_settings,
    env_bool,
    env_file_text,
    env_float,
    env_int,
    env_list,
    env_required,
    env_str,
    require_deployment_settings,
)
from config.settings_database import prepared_statements_configure

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("BANKAPI_VAR_DIR", str(BASE_DIR / "var")))

_CHOSEN_ENV = env_str("BANKAPI_ENV")
if _CHOSEN_ENV not in (None, "development", "production"):
    raise ImproperlyConfigured(f"BANKAPI_ENV must be development or production, got {_CHOSEN_ENV!r}")
# A deployment unless development is chosen: forgetting BANKAPI_ENV on a server
# with a real database must not run it on generated development secrets.
PRODUCTION = _CHOSEN_ENV == "production" or (_CHOSEN_ENV is None and env_str("DATABASE_URL") is not None)
ENVIRONMENT = "production" if PRODUCTION else "development"

if PRODUCTION:
    require_deployment_settings(
        [
            "SECRET_KEY",
            "FIELD_ENCRYPTION_KEY",
            ("JWT_PRIVATE_KEY", "JWT_PRIVATE_KEY_FILE"),
            "ALLOWED_HOSTS",
            "TRUSTED_PROXY_COUNT",
        ],
        reason=(
            "BANKAPI_ENV is production"
            if _CHOSEN_ENV == "production"
            else "DATABASE_URL is set, so this is a deployment"
        ),
    )
    SECRET_KEY = env_required("SECRET_KEY")
    FIELD_ENCRYPTION_KEY = env_required("FIELD_ENCRYPTION_KEY")
    JWT_PRIVATE_KEY = env_str("JWT_PRIVATE_KEY") or env_file_text("JWT_PRIVATE_KEY_FILE")
else:
    _dev = dev_secrets.load_or_create(VAR_DIR)
    SECRET_KEY = env_str("SECRET_KEY", _dev["SECRET_KEY"])
    FIELD_ENCRYPTION_KEY = env_str("FIELD_ENCRYPTION_KEY", _dev["FIELD_ENCRYPTION_KEY"])
    JWT_PRIVATE_KEY = env_str("JWT_PRIVATE_KEY", _dev["JWT_PRIVATE_KEY"])

# Extra public keys (PEM, separated by blank lines) still accepted for verification
# while a key rotation is under way.
JWT_PREVIOUS_PUBLIC_KEYS = env_str("JWT_PREVIOUS_PUBLIC_KEYS", "")
JWT_ISSUER = env_str("JWT_ISSUER", "bankapi")
JWT_LIFETIME_SECONDS = 15 * 60
REFRESH_TOKEN_LIFETIME_DAYS = 30

# Sign-in abuse limits (docs/rate-limits.md). Per (program, e-mail) for
# passwords and per user for second-factor codes and passkey sign-ins: this many
# failures within the window lock that key for AUTH_LOCKOUT_SECONDS.
AUTH_LOCKOUT_MAX_FAILURES = env_int("AUTH_LOCKOUT_MAX_FAILURES", 5)
AUTH_LOCKOUT_WINDOW_SECONDS = env_int("AUTH_LOCKOUT_WINDOW_SECONDS", 15 * 60)
AUTH_LOCKOUT_SECONDS = env_int("AUTH_LOCKOUT_SECONDS", 15 * 60)
# Per client address: failed login, verify-2fa and verify-passkey attempts of any
# user; at the maximum every such attempt answers 429 until the window ends.
AUTH_CLIENT_MAX_FAILURES = env_int("AUTH_CLIENT_MAX_FAILURES", 50)
AUTH_CLIENT_WINDOW_SECONDS = env_int("AUTH_CLIENT_WINDOW_SECONDS", 15 * 60)
# How many proxies of ours append to X-Forwarded-For; 0: the client is the TCP
# peer and X-Forwarded-For is ignored. Required in a deployment (0 when clients
# connect directly): behind a proxy, a forgotten 0 makes every client the proxy.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)
if TRUSTED_PROXY_COUNT < 0:
    raise ImproperlyConfigured(f"TRUSTED_PROXY_COUNT must not be negative, got {TRUSTED_PROXY_COUNT}")
# Argon2 checks per process, the waits for one, its waiters (gunicorn's WEB_THREADS less two, else 8).
PASSWORD_CHECKS_IN_FLIGHT = env_int("PASSWORD_CHECKS_IN_FLIGHT", 1)
PASSWORD_CHECK_WAIT_SECONDS = env_float("PASSWORD_CHECK_WAIT_SECONDS", 0.5)
PASSWORD_CHECK_CLEAN_WAIT_SECONDS = env_float("PASSWORD_CHECK_CLEAN_WAIT_SECONDS", 10.0)
PASSWORD_CHECK_WAITERS = env_int("PASSWORD_CHECK_WAITERS", max(1, env_int("WEB_THREADS", 10) - 2))
# Requests per window on every API route: per access or id token, and per client
# address for requests without a bearer. Counted in Redis when REDIS_URL is set
# (shared by every process), in each process's memory otherwise.
REQUEST_BUDGET_PER_TOKEN = env_int("REQUEST_BUDGET_PER_TOKEN", 1200)
REQUEST_BUDGET_PER_ADDRESS = env_int("REQUEST_BUDGET_PER_ADDRESS", 300)
REQUEST_BUDGET_WINDOW_SECONDS = env_int("REQUEST_BUDGET_WINDOW_SECONDS", 60)
for _name in (
    "PASSWORD_CHECKS_IN_FLIGHT",
    "PASSWORD_CHECK_WAITERS",
    "REQUEST_BUDGET_PER_TOKEN",
    "REQUEST_BUDGET_PER_ADDRESS",
    "REQUEST_BUDGET_WINDOW_SECONDS",
):
    if globals()[_name] < 1:
        raise ImproperlyConfigured(f"{_name} must be at least 1, got {globals()[_name]}")
if min(PASSWORD_CHECK_WAIT_SECONDS, PASSWORD_CHECK_CLEAN_WAIT_SECONDS) < 0:
    raise ImproperlyConfigured("The PASSWORD_CHECK_*_SECONDS settings must not be negative")

DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list(
    "ALLOWED_HOSTS", [] if PRODUCTION else ["localhost", "127.0.0.1", "[::1]", "testserver"]
)
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    # Django's admin with the back-office site (bankapi.backoffice.admin_site).
    "bankapi.apps.BankAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_filters",
    "bankapi",
    "authn",
    "payments",
    "batches",
    "cards",
    "onboarding",
    "events",
    "approvals",
    "sandbox",
    "audit",
]

MIDDLEWARE = [
    "bankapi.ops.metrics.HttpMetricsMiddleware",
    "bankapi.http.middleware.RequestIdMiddleware",
    "bankapi.test_clocks.SandboxClockMiddleware",
    "bankapi.http.middleware.BodyLimitMiddleware",
    "bankapi.http.middleware.ProbeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # bankapi.http.middleware's four run on every route but the API's (under /v1/):
    # the back office's static files, sessions, the session's user and messages.
    "bankapi.http.middleware.StaticFilesMiddleware",
    "bankapi.http.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "bankapi.http.middleware.AuthenticationMiddleware",
    "bankapi.http.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # Searched before the apps' directories, so that bankapi's admin/*.html
        # override Django's admin templates (the admin app is installed first):
        # the changelist count past the cap of admin_base.CappedCountPaginator.
        "DIRS": [BASE_DIR / "bankapi" / "templates"],
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

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'bankapi.sqlite3'}"), conn_health_checks=True
    )
}
_on_postgres = DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"
# Persistent connections on PostgreSQL: opening one costs a server process and
# several round trips, more than a whole payment. Safe behind PgBouncer in
# transaction pooling: nothing is kept in the session (no SET, no prepared
# statements: Django binds parameters client-side). The health check drops a
# connection the server or the pooler closed before a request reuses it; it
# reads the connection's socket instead of sending `SELECT 1` on every request
# (bankapi/ops/connection_health.py).
DATABASES["default"]["CONN_MAX_AGE"] = env_int("DATABASE_CONN_MAX_AGE", 600 if _on_postgres else 0)
# Prepared statements where the connection keeps them (config/settings_database.py).
DATABASE_PREPARED_STATEMENTS = prepared_statements_configure(DATABASES["default"])
if _on_postgres:
    # A database host that does not answer (down, or its network) costs a request
    # at most this many seconds before its 503, not the system's TCP timeout.
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
        "connect_timeout", env_int("DATABASE_CONNECT_TIMEOUT", 5)
    )
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # SQLite serialises writers; wait for the lock instead of failing at once.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 20
    DATABASES["default"]["OPTIONS"]["transaction_mode"] = "IMMEDIATE"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_USER_MODEL = "authn.User"
AUTHENTICATION_BACKENDS = ["authn.backends.StaffEmailBackend"]
# E-mail is unique per program, not globally; the staff backend above resolves it.
SILENCED_SYSTEM_CHECKS = ["auth.W004"]
PASSWORD_HASHERS = [
    "authn.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": 12},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
FORMAT_MODULE_PATH = "bankapi.locale_formats"  # back-office times name their zone

STATIC_URL = "static/"
STATIC_ROOT = Path(
    env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles" if PRODUCTION else VAR_DIR / "static"))
)
if not PRODUCTION:
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)
MEDIA_ROOT = VAR_DIR / "media"

AWS_STORAGE_BUCKET_NAME = env_str("AWS_STORAGE_BUCKET_NAME")
AWS_S3_ENDPOINT_URL = env_str("AWS_S3_ENDPOINT_URL")
STORAGES = {
    "default": (
        {
            "BACKEND": "storages.backends.s3.S3Storage",
            "OPTIONS": {
                "bucket_name": AWS_STORAGE_BUCKET_NAME,
                "endpoint_url": AWS_S3_ENDPOINT_URL,
            },
        }
        if AWS_STORAGE_BUCKET_NAME
        else {"BACKEND": "django.core.files.storage.FileSystemStorage"}
    ),
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if PRODUCTION
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}
WHITENOISE_USE_FINDERS = not PRODUCTION

# One URL for outgoing mail (UBO verification e-mails), e.g. smtp://user:password@host:25.
globals().update(email_settings(env_str("EMAIL_URL")))
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "no-reply@bankapi.local")

REDIS_URL = env_str("REDIS_URL")
CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
        if REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

# The work behind the door (Celery, periodic runs, settlement, webhook delivery):
# config/settings_work.py.
from config.settings_work import *  # noqa: E402, F403

# How long a verified batch draft can be submitted.
BATCH_DRAFT_TTL_SECONDS = env_int("BATCH_DRAFT_TTL_SECONDS", 86400)
# Batch items paid per transaction (payer accounts locked once per chunk).
BATCH_CHUNK_SIZE = env_int("BATCH_CHUNK_SIZE", 500)

# Back office: admin sign-in asks for a TOTP code too. On by default
# wherever a real database is configured; off on the embedded default.
ADMIN_REQUIRE_TOTP = env_bool("ADMIN_REQUIRE_TOTP", env_str("DATABASE_URL") is not None)
ADMIN_LOGIN_FORM = "authn.admin_login.StaffLoginForm"

WEBAUTHN_RP_ID = env_str("WEBAUTHN_RP_ID", "localhost")
WEBAUTHN_RP_NAME = env_str("WEBAUTHN_RP_NAME", "Bank API")
WEBAUTHN_ORIGINS = env_list("WEBAUTHN_ORIGINS", ["http://localhost:8000"])

# Verification providers of onboarding, by name; a program picks its active one in
# admin. The second sandbox name lets operators try a provider switch.
ONBOARDING_VERIFICATION_PROVIDERS = {
    "sandbox": "onboarding.providers.SandboxVerificationProvider",
    "sandbox-alternate": "onboarding.providers.SandboxVerificationProvider",
}

# Largest document accepted by this service's own presigned upload URLs (bytes).
DOCUMENT_UPLOAD_MAX_BYTES = env_int("DOCUMENT_UPLOAD_MAX_BYTES", 10 * 1024 * 1024)

FX_PROVIDER = env_str("FX_PROVIDER", "payments.fx.provider.SandboxFxProvider")

# Steps of `manage.py bootstrap_sandbox`, in order. Each app contributes its part.
SANDBOX_BOOTSTRAP_STEPS = [
    "bankapi.sandbox.bootstrap",
    "authn.sandbox.bootstrap",
    "payments.sandbox.bootstrap",
    "payments.sandbox_fx.bootstrap",
    "cards.sandbox.bootstrap",
    "onboarding.sandbox.bootstrap",
    "batches.sandbox.bootstrap",
    "approvals.sandbox.bootstrap",
]

# The sandbox as a world: customers made on demand per program in any 24 hours,
# clocks per program, the sweeps an advance runs at each moment (each `(now,
# clock_id) -> int`: None sweeps customers without a clock, an id that clock's).
SANDBOX_CUSTOMERS_MAX = env_int("SANDBOX_CUSTOMERS_MAX", 1000)
SANDBOX_CLOCKS_MAX = env_int("SANDBOX_CLOCKS_MAX", 100)
SANDBOX_CLOCK_EXPIRY_SWEEPS = [
    "approvals.services.approvals_expire_sweep",
    "cards.authorizations.authorizations_expire",
]

# The approval policy every route that moves money asks (bankapi.approval_gate).
APPROVAL_GATE = "approvals.gate.GATE"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["authn.authentication.BearerAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["bankapi.http.permissions.TokenRequired"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["bankapi.http.parsers.JSONParser"],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "bankapi.http.negotiation.JsonNegotiation",
    "EXCEPTION_HANDLER": "bankapi.http.handlers.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": ["authn.throttling.RequestBudgetThrottle"],
    "DEFAULT_SCHEMA_CLASS": "bankapi.http.schema.AutoSchema",
    "UNAUTHENTICATED_USER": None,
    "COERCE_DECIMAL_TO_STRING": True,
    # OPTIONS is not part of the API (no CORS here): 405 like any method a route
    # does not document, instead of DRF's undocumented metadata answer.
    "DEFAULT_METADATA_CLASS": None,
    # `format` is a parameter of the statement route (json, camt053, csv), not a
    # renderer override: every route answers JSON, and none is chosen by URL.
    "URL_FORMAT_OVERRIDE": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Bank API",
    "DESCRIPTION": (
        "Payments, batch payments, FX, cards, onboarding and authentication for "
        "a bank's partner programs. Program and environment come from the bearer "
        "token. Every response carries `success`; errors carry `code` and `message`. "
        "Every authenticated answer to a user of a sandbox customer living on a test clock "
        "carries the header `Sandbox-Clock`: the clock's time (UTC, `Z`), which that "
        "customer's money and objects live at."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The document and Swagger UI are public: a stale or garbage bearer a browser
    # still sends must not turn them into a 401 (or a 500 while rendering the page).
    "SERVE_AUTHENTICATION": [],
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SCHEMA_PATH_PREFIX": r"/v1",
    "ENUM_NAME_OVERRIDES": {
        "ProgramAccountTypeEnum": ["consumer", "business"],
        "EventTypeEnum": "events.models.EventType",
        "BatchStatusEnum": "batches.serializers.BATCH_STATUSES",
        "BatchItemStatusEnum": "batches.serializers.ITEM_STATUSES",
        "BatchDraftStatusEnum": "batches.serializers.DRAFT_STATUSES",
        "UboStatusEnum": ["PENDING", "LINK_SENT", "IN_PROGRESS", "VERIFIED", "REJECTED"],
        "VerificationStepStatusEnum": ["PENDING", "IN_PROGRESS", "COMPLETED", "FAILED"],
        "KycDocumentTypeEnum": "onboarding.kyc.DOCUMENT_TYPES",
        "DocumentContentTypeEnum": "onboarding.document_formats.DOCUMENT_CONTENT_TYPES",
        "CardStatusEnum": "cards.models.Card.Status",
        "CurrencyEnum": "bankapi.codes.SUPPORTED_CURRENCIES",
        "CardAuthorizationStatusEnum": "cards.models.CardAuthorization.Status",
        "IsoCurrencyEnum": "cards.serializers_authorizations.ISO_CURRENCIES",
    },
    # "* `ON` - ON" under every enum says nothing the enum does not.
    "ENUM_GENERATE_CHOICE_DESCRIPTION": False,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "bankapi.http.schema.document_payload_limit",
        "bankapi.http.schema.document_request_budget",
        "bankapi.http.schema.public_routes_take_no_bearer",
        "bankapi.http.examples.request_examples",
    ],
    # In the order a newcomer meets them (Swagger UI lists the tags in this order).
    "TAGS": [
        {"name": "auth", "description": "Sign in (password, then TOTP or a passkey) and manage sessions."},
        {"name": "accounts", "description": "What the signed-in user may do, and on which accounts."},
        {"name": "payments", "description": "Payments, scheduled payments and transactions of an account."},
        {"name": "sandbox", "description": "Sandbox only: payments' outcomes, customers, test clocks."},
        {"name": "fx", "description": "Foreign exchange quotes."},
        {"name": "batch payments", "description": "Verify, initiate and submit many payments at once."},
        {
            "name": "approvals",
            "description": "Payments, schedules and batches that other users of the customer approve first.",
        },
        {"name": "cards", "description": "Cardholders and card security."},
        {"name": "onboarding", "description": "Applications, legal documents, UBOs and document uploads."},
        {"name": "webhooks", "description": "Endpoints that receive events."},
        {"name": "events", "description": "What happened, and its redelivery."},
        {"name": "service", "description": "Health, readiness and the token signing keys."},
    ],
}

# Logs: JSON lines on stdout in a deployment (for a log shipper), readable lines
# on stderr on the embedded default; LOG_FORMAT=json|text chooses either way.
LOG_FORMAT = env_str("LOG_FORMAT", "json" if PRODUCTION else "text")
if LOG_FORMAT not in ("json", "text"):
    raise ImproperlyConfigured(f"LOG_FORMAT must be json or text, got {LOG_FORMAT!r}")
LOGGING = logging_settings(json_lines=LOG_FORMAT == "json", level=env_str("LOG_LEVEL", "INFO"))

# GET /metrics (Prometheus): open on a development run; in a deployment it takes
# `Authorization: Bearer <METRICS_TOKEN>` and answers 404 while none is set.
METRICS_TOKEN = env_str("METRICS_TOKEN")
METRICS_REQUIRE_TOKEN = PRODUCTION
# Several processes (gunicorn and Celery workers) count into files there, summed
# at scrape; prometheus_client reads the variable itself.
if env_str("PROMETHEUS_MULTIPROC_DIR"):
    Path(env_required("PROMETHEUS_MULTIPROC_DIR")).mkdir(parents=True, exist_ok=True)

if PRODUCTION:
    # Behind a TLS-terminating proxy that sets X-Forwarded-Proto.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    # The probes and the scrape (plain HTTP, by the node's address) are answered
    # before this redirect and the host check: bankapi.http.middleware.ProbeMiddleware.
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    # The header alone enrols nothing: a domain joins the preload list only when submitted.
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
