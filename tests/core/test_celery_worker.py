"""A real Celery worker process consumes a task through the real Redis broker and writes to PostgreSQL."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from apps.tenants.models import ApiKey
from tests.conftest import wait_until
from tests.factories import ApiKeyFactory, TenantFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.celery_worker]


def test_api_call_records_key_use_through_the_worker(celery_worker_process):
    issued = ApiKeyFactory(tenant=TenantFactory())
    assert ApiKey.objects.get(pk=issued.pk).last_used_at is None
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    assert client.get("/api/v1/contacts").status_code == 200

    used_at = wait_until(lambda: ApiKey.objects.get(pk=issued.pk).last_used_at)
    assert used_at is not None
    assert celery_worker_process.poll() is None  # the worker is still alive and consuming
