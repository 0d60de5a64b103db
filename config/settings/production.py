"""Production: external PostgreSQL (with pgvector) and Redis. No defaults for secrets: start-up fails without them."""

from config.settings.base import *  # noqa: F403
from config.settings.base import database_config, env

DEBUG = False
IS_PRODUCTION = True  # seed_demo refuses to run (it creates users with known passwords)
SECRET_KEY = env.str("DJANGO_SECRET_KEY")
DATABASE_URL = env.str("DATABASE_URL")
REDIS_URL = env.str("REDIS_URL")
DATABASES = {"default": database_config(DATABASE_URL)}
CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
CELERY_BROKER_URL = REDIS_URL

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=True)
CSRF_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=True)
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
