"""The agents' doors (the SDK, the MCP server, the LangGraph store) driven against the stack `make run` starts:
gunicorn, a Celery worker and beat from `manage.py runstack`, on a free port, on the test database and Redis.
One stack serves the whole folder; each test commits its own tenant (transactional tests).

Beat runs here as in production: its periodic jobs change rows between two reads of a test (every 30 s the
searches' accesses are folded into `access_count` and `accessed_at`). A test comparing two reads compares what no
periodic job rewrites (test_mcp.py's body comparison failed CI once on that)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from apps.memories.benchmarks.stack import running_stack
from tests.context_blocks import memory_block
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


def recalls_the_dog(context_text: str) -> bool:
    """The context's memory block says Arjun has a dog named Bruno: the fact or the episode that states it
    (context assembly keeps one of two memories that say the same; which ranks first is a close call)."""
    return re.search(r"\bdog\b.*\bBruno\b", memory_block(context_text)) is not None
