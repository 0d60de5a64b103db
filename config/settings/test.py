"""Tests: their own embedded PostgreSQL + pgvector and Redis (started here, stopped by tests/conftest.py)."""

from config.embedded import TEST, maintenance_database_url, service_urls
from config.settings.base import *  # noqa: F403
from config.settings.base import databases

DEBUG = False
SECRET_KEY = "engram-tests-not-secret"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast user fixtures

DATABASE_URL, REDIS_URL = service_urls(TEST)
DATABASE_MAINTENANCE_URL = maintenance_database_url(TEST)
DATABASES = databases(DATABASE_URL, DATABASE_MAINTENANCE_URL)
DATABASES["default"]["CONN_MAX_AGE"] = DATABASES["maintenance"]["CONN_MAX_AGE"] = 0
CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
CELERY_BROKER_URL = REDIS_URL
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
