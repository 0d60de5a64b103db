"""`occurred_at` is bounded (apps/core/moments.py): 1970-01-01T00:00:00Z up to one day ahead of now. Out of
bounds is a 400 naming the field (ingest, batch ingest, MCP add_memory), and nothing is written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from apps.conversations.models import Message
from apps.core.exceptions import ApplicationError
from apps.mcp_server.tools import AddMemory
from apps.memories.ingest.services import IngestItem, ingest_messages
from apps.memories.models import ContextEvent

pytestmark = pytest.mark.django_db


def _iso(moment: datetime) -> str:
    return moment.isoformat()


NOW = datetime.now(UTC)
REFUSED = {
    "year-1": "0001-01-01T00:00:00Z",
    "1969": "1969-12-31T23:59:59Z",
    "year-9999": "9999-12-31T23:59:59Z",
    "two-days-ahead": _iso(NOW + timedelta(days=2)),
}
ACCEPTED = {
    "1970": "1970-01-01T00:00:00Z",
    "a-year-ago": _iso(NOW - timedelta(days=365)),
    "23-hours-ahead": _iso(NOW + timedelta(hours=23)),
}


def _message(occurred_at: str, index: int = 0) -> dict:
    return {
        "contact_id": "ola",
        "conversation_id": "ola-chat",
        "message": "My dog Bruno is a beagle",
        "role": "user",
        "message_id": f"ola-{index}",
        "occurred_at": occurred_at,
    }


@pytest.mark.parametrize("occurred_at", REFUSED.values(), ids=REFUSED.keys())
def test_an_occurred_at_out_of_bounds_is_a_400_and_nothing_is_written(api, tenant, occurred_at):
    response = api.post("/api/v1/ingest", _message(occurred_at), format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "validation_error" and list(error["details"]) == ["occurred_at"]
    assert "occurred_at must be" in error["details"]["occurred_at"][0]

    batch = {"messages": [_message(ACCEPTED["1970"], 0), _message(occurred_at, 1)]}
    response = api.post("/api/v1/ingest/batch", batch, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["details"]["messages"]["1"]["occurred_at"]
    assert not Message.objects.filter(tenant=tenant).exists() and not ContextEvent.objects.exists()

    with pytest.raises(ValidationError, match="occurred_at must be"):
        AddMemory(message="My dog Bruno is a beagle", contact_id="ola", occurred_at=occurred_at)
    item = IngestItem(
        contact_id="ola", conversation_id="c", message="hi", occurred_at=datetime.fromisoformat(occurred_at)
    )
    with pytest.raises(ApplicationError, match="occurred_at must be"):
        ingest_messages(tenant=tenant, items=[item], actor="test")
    assert not Message.objects.filter(tenant=tenant).exists()


@pytest.mark.parametrize("occurred_at", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_an_occurred_at_within_bounds_is_stored_as_sent(api, tenant, occurred_at):
    response = api.post("/api/v1/ingest", _message(occurred_at), format="json")
    assert response.status_code == 202
    stored = Message.objects.get(tenant=tenant).occurred_at
    assert stored == datetime.fromisoformat(occurred_at.replace("Z", "+00:00"))
    assert AddMemory(message="hi", contact_id="ola", occurred_at=occurred_at).occurred_at == stored


def test_a_simulations_clock_moves_the_upper_bound(tenant):
    later = NOW + timedelta(days=400)
    item = IngestItem(contact_id="ola", conversation_id="c", message="hi", occurred_at=later - timedelta(hours=1))
    (outcome,) = ingest_messages(tenant=tenant, items=[item], actor="test", now=later)
    assert outcome.event.message.occurred_at == later - timedelta(hours=1)
