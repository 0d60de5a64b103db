"""The web tier as `make run` starts it (runstack: a read pool and a write pool behind config/front.py), here with
one write worker and a 100 ms wait, so one long batch fills the write lane: a write sent meanwhile is refused at
once with 503 and Retry-After (nothing of it stored), reads are served meanwhile, the refused write goes through
when sent again, and the SDK sends a refused call again by itself — even one that is not safe twice — because
the refusal says nothing ran."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
from engram_client import Engram

from apps.contacts.models import Contact
from apps.conversations.models import Message
from apps.memories.benchmarks.stack import running_stack
from tests.factories import ApiKeyFactory, TenantFactory

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db(transaction=True)

SENTENCE = (
    "I spent the whole afternoon at the community garden with my sister, planting tomatoes and basil, and we "
    "talked about the pottery class she wants to start next month near the old library downtown"
)


@pytest.fixture(scope="module")
def narrow_stack(test_database_url) -> Iterator[str]:
    with running_stack(
        log_path=ROOT / "var" / "test" / "pools-stack.log",
        database_url=test_database_url,
        settings_module="config.settings.local",
        timeout=240,
        extra_env={
            "ENGRAM_WEB_POOLS": "split",
            "ENGRAM_WRITE_WORKERS": "1",
            "ENGRAM_READ_WORKERS": "2",
            "ENGRAM_WRITE_WAIT_MS": "100",
        },
    ) as base_url:
        yield base_url


def _message(index: int, conversation: str = "long") -> dict[str, Any]:
    return {
        "contact_id": "c1",
        "conversation_id": conversation,
        "message": f"{SENTENCE} (turn {index})",
        "role": "user",
        "message_id": f"{conversation}-{index}",
    }


class LongBatch:
    """500 messages in one POST /ingest/batch on a thread of its own: the write pool's one worker is busy
    with it for seconds."""

    def __init__(self, base_url: str, headers: dict[str, str]) -> None:
        self.answer: requests.Response | None = None
        self.thread = threading.Thread(
            target=self._send,
            args=(base_url, headers),
            daemon=True,
        )

    def _send(self, base_url: str, headers: dict[str, str]) -> None:
        self.answer = requests.post(
            f"{base_url}/api/v1/ingest/batch",
            json={"messages": [_message(index) for index in range(500)]},
            headers=headers,
            timeout=300,
        )

    def __enter__(self) -> LongBatch:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.thread.join(300)

    @property
    def running(self) -> bool:
        return self.thread.is_alive()


def test_a_write_beyond_the_write_pool_is_refused_at_once_while_reads_are_served(narrow_stack):
    tenant = TenantFactory()
    headers = {"Authorization": f"Bearer {ApiKeyFactory(tenant=tenant).plaintext}"}
    refusals: list[tuple[float, requests.Response]] = []
    reads: list[int] = []
    with LongBatch(narrow_stack, headers) as batch:
        time.sleep(0.3)  # the batch reaches the write pool first
        while batch.running and not (refusals and reads):
            started = time.monotonic()
            answer = requests.post(
                f"{narrow_stack}/api/v1/ingest", json=_message(0, conversation="short"), headers=headers, timeout=60
            )
            if batch.running and answer.status_code == 503:
                refusals.append((time.monotonic() - started, answer))
                read = requests.get(
                    f"{narrow_stack}/api/v1/memories", params={"page_size": 1}, headers=headers, timeout=60
                )
                reads.append(read.status_code)
            time.sleep(0.2)
    assert batch.answer is not None and batch.answer.status_code == 202
    assert refusals, "no write was refused while the one write worker was busy"
    seconds, refused = refusals[0]
    assert seconds < 1.0  # the lane's 100 ms wait, not the batch's seconds
    assert refused.headers["Retry-After"] == "1"
    assert refused.json()["error"]["code"] == "overloaded"
    assert set(reads) == {200}  # reads were served while the write pool was busy

    stored = set(Message.objects.filter(tenant=tenant).values_list("external_id", flat=True))
    assert {f"long-{index}" for index in range(500)} <= stored
    # sent again once the lane is free, the refused message goes through (stored once however often refused)
    again = requests.post(
        f"{narrow_stack}/api/v1/ingest", json=_message(0, conversation="short"), headers=headers, timeout=60
    )
    assert again.status_code == 202
    assert Message.objects.filter(tenant=tenant, external_id="short-0").count() == 1


def test_the_sdk_sends_a_refused_call_again_even_when_it_is_not_safe_twice(narrow_stack):
    tenant = TenantFactory()
    key = ApiKeyFactory(tenant=tenant).plaintext
    statuses: list[int] = []
    with LongBatch(narrow_stack, {"Authorization": f"Bearer {key}"}) as batch:
        time.sleep(0.3)
        recording = httpx.Client(
            timeout=60, event_hooks={"response": [lambda response: statuses.append(response.status_code)]}
        )
        with Engram(narrow_stack, api_key=key, http_client=recording, max_retries=300) as engram:
            created = None
            while batch.running:
                statuses.clear()
                created = engram.contacts.create(f"wa:{time.monotonic_ns()}", display_name="Asha")
                if 503 in statuses:
                    break
    assert batch.answer is not None and batch.answer.status_code == 202
    assert created is not None
    assert 503 in statuses and statuses[-1] == 201  # refused, waited Retry-After, created
    assert Contact.objects.filter(tenant=tenant, external_id=created.contact_id).count() == 1
