"""Development: embedded PostgreSQL + pgvector and Redis unless DATABASE_URL / REDIS_URL are set."""

from config.embedded import DEV, service_urls
from config.settings.base import *  # noqa: F403
from config.settings.base import database_config, env

DEBUG = env.bool("DJANGO_DEBUG", default=True)
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="engram-local-development-only-not-secret")

DATABASE_URL, REDIS_URL = service_urls(DEV)
DATABASES = {"default": database_config(DATABASE_URL)}
CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
CELERY_BROKER_URL = REDIS_URL

WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
