"""Celery application: configured from Django settings (CELERY_* names), tasks autodiscovered per app."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

# every task runs bound as it declares: its tenant, maintenance or none (apps/core/tenancy.py)
app = Celery("engram", task_cls="apps.core.task_base:TenantBoundTask")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
