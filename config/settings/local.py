"""Development: embedded PostgreSQL + pgvector and Redis unless DATABASE_URL / REDIS_URL are set."""

from config.embedded import DEV, maintenance_database_url, secret_key, service_urls
from config.settings.base import *  # noqa: F403
from config.settings.base import databases, env

# Safe by default (issue 32): DEBUG only when asked for (DJANGO_DEBUG=1, and then only `manage.py runserver`:
# the gunicorn stack refuses to start with it, config/wsgi.py), and a random key kept under var/.
DEBUG = env.bool("DJANGO_DEBUG", default=False)
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="") or secret_key()

DATABASE_URL, REDIS_URL = service_urls(DEV)
DATABASE_MAINTENANCE_URL = maintenance_database_url(DEV)
DATABASES = databases(DATABASE_URL, DATABASE_MAINTENANCE_URL)
CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
CELERY_BROKER_URL = REDIS_URL

WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
