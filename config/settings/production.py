"""Production: external PostgreSQL (with pgvector) and Redis. No defaults for secrets: start-up fails without them."""

from config.settings.base import *  # noqa: F403
from config.settings.base import databases, env

DEBUG = False
IS_PRODUCTION = True  # seed_demo refuses to run (it creates users with known passwords)
SECRET_KEY = env.str("DJANGO_SECRET_KEY")
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS")  # the names it is served under; base.py's loopback default is not one
DATABASE_URL = env.str("DATABASE_URL")  # the app role: data-only grants (docs/architecture.md, "Roles")
# the role that owns the tables (migrate, commands, maintenance tasks, the admin); unset: DATABASE_URL's, one role
DATABASE_MAINTENANCE_URL = env.str("DATABASE_MAINTENANCE_URL", default="") or DATABASE_URL
REDIS_URL = env.str("REDIS_URL")
DATABASES = databases(DATABASE_URL, DATABASE_MAINTENANCE_URL)
CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
CELERY_BROKER_URL = REDIS_URL

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")  # TLS ends at the proxy, which says so
SECURE_SSL_REDIRECT = env.bool("DJANGO_SSL_REDIRECT", default=True)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # load-balancer probes speak plain HTTP
SECURE_HSTS_SECONDS = env.int("DJANGO_HSTS_SECONDS", default=30 * 24 * 3600)  # 0 turns HSTS off
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("DJANGO_HSTS_PRELOAD", default=False)
# submitting the domain to browsers' HSTS preload lists is its owner's decision (DJANGO_HSTS_PRELOAD=1)
SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]
SESSION_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=True)
CSRF_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=True)
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
