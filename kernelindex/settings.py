"""KernelIndex settings, read from the environment.

Development defaults are safe to run on a laptop (SQLite, DEBUG on, local hosts only);
production sets DEBUG=0, SECRET_KEY and DATABASE_URL, and a missing secret is a hard error.
Every variable is listed in `.env.example`; the README's "Deploying" section gives the
production values.

Variables come from the process environment first, then from the `.env` file in the project
root (or the file named by ENV_FILE), so `cp .env.example .env` works and an exported variable
still wins over the file.
"""

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from dotenv import load_dotenv

BASE_DIR = Path(__file__).resolve().parent.parent

# override=False: a variable already in the process environment is never replaced by the file.
load_dotenv(os.environ.get("ENV_FILE") or BASE_DIR / ".env", override=False)


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in {"1", "true", "yes", "on"}:
        return True
    if value.lower() in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use 1/0, true/false).")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer.") from None


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


DEBUG = env_bool("DEBUG", True)

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = "dev-insecure-kernelindex-secret-key-do-not-use-in-production"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

# The public base URL used in permalinks and citations (no trailing slash).
SITE_URL = os.environ.get("SITE_URL", "http://127.0.0.1:8000").rstrip("/")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "axes",
    "kernelindex",
    "runs",
    "ingest",
    "attestations",
    "web",
    "drf_spectacular_sidecar",
    "api",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Before whitenoise, so static files carry the header too.
    "kernelindex.middleware.PermissionsPolicyMiddleware",
    "kernelindex.middleware.ContentSecurityPolicyMiddleware",
    "api.middleware.ApiCorsMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "kernelindex.middleware.NoStoreForSignedInMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Innermost: conditional GET and full-page caching of public pages for anonymous visitors.
    "kernelindex.pagecache.PageCacheMiddleware",
    # Last, as django-axes asks: it turns a lockout raised during authenticate() into the page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "kernelindex.urls"

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
                "kernelindex.context_processors.site",
            ],
        },
    },
]

WSGI_APPLICATION = "kernelindex.wsgi.application"

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}",
        conn_max_age=env_int("CONN_MAX_AGE", 60),
    )
}
# The embedded SQLite database, shared by several gunicorn workers: a writer waits for the lock
# (timeout, IMMEDIATE) instead of failing. Write-ahead logging lets pages read while an import or
# a rate-limit counter writes, and with synchronous=NORMAL a commit no longer waits for the disk
# (a power cut may lose the last commits, never the file): the API throttle's write on every
# request took 1.6 ms of a 2 ms 304 in the journal's default mode, 0.5 ms in this one.
# Memory-mapped reads: a connection drops its page cache whenever another one has written, and
# the API throttle writes on every request, so each worker read a list's pages back through a
# system call each (bench/pages.py: the API list at 5.4 ms of server CPU, 3.7 ms mapped).
SQLITE_OPTIONS = {
    "timeout": 20,
    "transaction_mode": "IMMEDIATE",
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA mmap_size=1073741824;",
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["ENGINE"] = "kernelindex.sqlite3"  # Django's, placeholders rewritten once
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"].update(SQLITE_OPTIONS)
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["ENGINE"] = "kernelindex.postgresql"  # Django's, dates read in C
    # A run list joins nine tables, and PostgreSQL planned every join order of them: 18 ms of
    # planning for 2 ms of execution at a million runs. Six keeps the runs table and the tables
    # pages filter on in the searched set (bench/pages.py at 1M: the lists' planning 18 → 4 ms,
    # no plan worse). A DATABASE_URL that sets ?options= keeps its own.
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"].setdefault(
        "options", f"-c join_collapse_limit={env_int('PG_JOIN_COLLAPSE_LIMIT', 6)}"
    )
    # Prepared statements: a page asks the same queries on every request, and PostgreSQL planned
    # each anew, 2–9 ms of planning for 0.3–0.7 ms of execution on the shipped data (a run list
    # joins nine tables). With the values bound by the server, psycopg prepares a statement after
    # its fifth run on a connection, and PostgreSQL keeps one plan for it once that plan costs no
    # more than the ones made for each call's values (kernelindex.inline writes into the SQL the
    # constants an index depends on, so that plan can use them). In-process on the shipped data:
    # the API list 15.4 → 6.1 ms, a run page 6.4 → 3.6 ms. PG_PREPARE_THRESHOLD=off binds on
    # the client as Django does by default (for a pooler in transaction mode that cannot keep
    # prepared statements, e.g. PgBouncer before 1.21).
    if os.environ.get("PG_PREPARE_THRESHOLD") != "off":
        DATABASES["default"]["OPTIONS"].setdefault("server_side_binding", True)
        DATABASES["default"]["OPTIONS"].setdefault("prepare_threshold", env_int("PG_PREPARE_THRESHOLD", 5))

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

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "kernelindex" / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

# Cache: Redis in production (shared by every gunicorn worker), the database otherwise, so
# rate limits hold across workers even in the SQLite default.
REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"CLIENT_CLASS": "django_redis.client.DefaultClient"},
        },
        # Whole pages and the site-wide data version (kernelindex.pagecache).
        "pages": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "pages",
            "OPTIONS": {"CLIENT_CLASS": "django_redis.client.DefaultClient"},
        },
    }
else:
    CACHES = {
        "default": {
            # Django's DatabaseCache with an atomic incr (rate limits); needs
            # `manage.py createcachetable`. Culling would drop rate-limit counters: keep it rare.
            "BACKEND": "kernelindex.cache.AtomicDatabaseCache",
            "LOCATION": "kernelindex_cache",
            "OPTIONS": {"MAX_ENTRIES": 100000},
        },
        # Whole pages and the site-wide data version (kernelindex.pagecache), in their own table
        # so culling old pages never drops a rate-limit counter.
        "pages": {
            "BACKEND": "kernelindex.cache.AtomicDatabaseCache",
            "LOCATION": "kernelindex_pages",
            "OPTIONS": {"MAX_ENTRIES": 20000},
        },
    }

# Full-page cache of anonymous GETs (kernelindex.pagecache): how long a page is kept (0: never
# stored; conditional GET still answers 304), and the Cache-Control it is served with.
PAGE_CACHE_SECONDS = env_int("PAGE_CACHE_SECONDS", 3600)
PAGE_CACHE_MAX_AGE = env_int("PAGE_CACHE_MAX_AGE", 0)
PAGE_CACHE_SHARED_MAX_AGE = env_int("PAGE_CACHE_SHARED_MAX_AGE", 60)
PAGE_CACHE_STALE_WHILE_REVALIDATE = env_int("PAGE_CACHE_STALE_WHILE_REVALIDATE", 300)

# Mail. In development the console backend prints mail to the log; in production the default is
# SMTP, and without a real mail server password reset is off (see PASSWORD_RESET below).
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND") or (
    "django.core.mail.backends.console.EmailBackend" if DEBUG else "django.core.mail.backends.smtp.EmailBackend"
)
EMAIL_HOST = os.environ.get("EMAIL_HOST", "") or "localhost"

EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "KernelIndex <noreply@kernelindex.invalid>")
MODERATOR_EMAILS = env_list("MODERATOR_EMAILS", [])

# Backends that deliver nothing: the console one prints the message, reset link and token
# included, to the server log.
_UNDELIVERED_MAIL_BACKENDS = {
    "django.core.mail.backends.console.EmailBackend",
    "django.core.mail.backends.locmem.EmailBackend",
    "django.core.mail.backends.dummy.EmailBackend",
    "django.core.mail.backends.filebased.EmailBackend",
}
MAIL_DELIVERED = EMAIL_BACKEND not in _UNDELIVERED_MAIL_BACKENDS and (
    EMAIL_BACKEND != "django.core.mail.backends.smtp.EmailBackend" or bool(os.environ.get("EMAIL_HOST"))
)
# Password reset by e-mail: on in development (the link shows in the console) and in production
# only when mail is really delivered. Asking for it in production without a mail server is a
# configuration error, not a silent leak of reset links into the log.
PASSWORD_RESET_ENABLED = env_bool("PASSWORD_RESET", DEBUG or MAIL_DELIVERED)
if PASSWORD_RESET_ENABLED and not DEBUG and not MAIL_DELIVERED:
    raise ImproperlyConfigured(
        "PASSWORD_RESET=1 needs a mail server when DEBUG is off: set EMAIL_BACKEND (SMTP by default) and "
        f"EMAIL_HOST, or set PASSWORD_RESET=0. EMAIL_BACKEND={EMAIL_BACKEND!r} delivers no mail."
    )

LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

# Number of reverse proxies in front of the app whose X-Forwarded-For entries are trusted
# (kernelindex.clients.client_ip). It says nothing about HTTPS: see SECURE_PROXY_SSL_HEADER.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)
# Anonymous posting limits, "count/period" with period in seconds.
RATE_LIMIT_PER_MINUTE = env_int("RATE_LIMIT_PER_MINUTE", 5)
RATE_LIMIT_PER_DAY = env_int("RATE_LIMIT_PER_DAY", 50)
# The rerun queue (api.reruns): how long a worker's claim lasts before the request returns to the
# queue, and the folders holding SOL-ExecBench definitions/ and kernels/ that reruns are made of.
RERUN_LEASE_SECONDS = env_int("RERUN_LEASE_SECONDS", 3600)
RERUN_SOURCE_DIRS = env_list("RERUN_SOURCE_DIRS", [str(BASE_DIR / "data" / "sol-execbench")])

# -- HTTPS and headers ---------------------------------------------------------------------------
# The header a TLS-terminating proxy sets to "https" (e.g. X-Forwarded-Proto), and only when that
# proxy always sets or overwrites it: otherwise a client could claim HTTPS. Empty: not trusted.
_proxy_ssl_header = os.environ.get("SECURE_PROXY_SSL_HEADER", "").strip()
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_" + _proxy_ssl_header.upper().replace("-", "_"), "https") if _proxy_ssl_header else None
)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# Secure cookies by default in production; scripts/serve turns them off for plain local HTTP.
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

# django-csp: no inline script or style anywhere; everything comes from this origin.
_SELF, _NONE = "'self'", "'none'"
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [_SELF],
        "script-src": [_SELF],
        "style-src": [_SELF],
        "img-src": [_SELF],
        "object-src": [_NONE],
        "base-uri": [_NONE],
        "frame-ancestors": [_NONE],
        "form-action": [_SELF],
    }
}
# Additions for pages that are not ours (kernelindex.middleware.ContentSecurityPolicyMiddleware):
# Swagger UI's stylesheet draws its icons from data: URLs; Redoc injects its styles and runs a
# worker from a blob:. Script stays 'self' on both.
CONTENT_SECURITY_POLICY_PATH_UPDATES = {
    "/api/docs/": {"img-src": ["data:"]},
    "/api/redoc/": {"img-src": ["data:"], "style-src": ["'unsafe-inline'"], "worker-src": ["blob:"]},
}
# No page needs any of these browser features.
PERMISSIONS_POLICY = (
    "accelerometer=(), autoplay=(), camera=(), display-capture=(), geolocation=(), gyroscope=(), "
    "magnetometer=(), microphone=(), midi=(), payment=(), usb=()"
)

# -- Login throttling (django-axes) -------------------------------------------------------------
AUTHENTICATION_BACKENDS = [
    # First, so a locked-out client is refused before its password is even checked.
    "kernelindex.auth.LoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Locked out after LOGIN_FAILURE_LIMIT failures from one client address, or for one username
# (whichever comes first), for LOGIN_LOCKOUT_MINUTES. Failures are rows moderators read in the
# admin (kernelindex/admin.py).
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_LOCKOUT_MINUTES", 60))
AXES_LOCKOUT_PARAMETERS = ["ip_address", "username"]
# The client's address the way the rest of the site sees it (TRUSTED_PROXY_COUNT).
AXES_CLIENT_IP_CALLABLE = "kernelindex.clients.client_ip"
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_RESET_ON_SUCCESS = True
AXES_ENABLE_ACCESS_FAILURE_LOG = True
# Registered by kernelindex/admin.py instead, so moderators can read them.
AXES_ENABLE_ADMIN = False
# No start-up banner on every manage.py command; failures and lockouts are still logged.
AXES_VERBOSE = False

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Password-reset links carry a token: it is cut out of every log line (kernelindex.logfilters).
    "filters": {"redact_secrets": {"()": "kernelindex.logfilters.RedactSecretsFilter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["redact_secrets"]}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}

# -- JSON API (api app) -------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["api.authentication.TokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_RENDERER_CLASSES": ["api.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "api.exceptions.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # Requests per client: anonymous clients by kernelindex.clients.client_key, tokens by token.
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("API_THROTTLE_ANON", "120/min"),
        "token": os.environ.get("API_THROTTLE_TOKEN", "600/min"),
        "submissions": os.environ.get("API_THROTTLE_SUBMISSIONS", "60/min"),
    },
}
SPECTACULAR_SETTINGS = {
    "TITLE": "KernelIndex API",
    "DESCRIPTION": (
        "The public, citable index of GPU-kernel benchmark runs. Reads are open (CORS for GET); recording "
        "runs needs an API token issued in the admin."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "api.schema.add_error_responses"],
    # Docs pages load Swagger UI / Redoc from drf-spectacular-sidecar's static files: no CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}
