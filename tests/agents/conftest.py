"""The agents' doors (the SDK, the MCP server, the LangGraph store) driven against the stack `make run` starts:
gunicorn, a Celery worker and beat from `manage.py runstack`, on a free port, on the test database and Redis.
One stack serves the whole folder; each test commits its own tenant (transactional tests)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from apps.memories.benchmarks.stack import running_stack
from tests.factories import ApiKeyFactory, TenantFactory

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="package")
def live_url(test_database_url) -> Iterator[str]:
    with running_stack(
        log_path=ROOT / "var" / "test" / "agents-stack.log",
        database_url=test_database_url,
        settings_module="config.settings.local",
        timeout=240,
    ) as base_url:
        yield base_url


@pytest.fixture
def live_tenant(transactional_db):
    return TenantFactory()


@pytest.fixture
def live_key(live_tenant) -> str:
    return ApiKeyFactory(tenant=live_tenant).plaintext


@pytest.fixture
def other_live_key(transactional_db) -> str:
    return ApiKeyFactory(tenant=TenantFactory()).plaintext
