"""Messages whose extraction spent its attempts are extracted again on an operator's request: the
`retry_extraction` command, and the admin's action on context events (queued for the worker's sweep)."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.db.models import F
from django.urls import reverse

from apps.core.redis import get_redis
from apps.memories.lifecycle.deferred import MAX_EXTRACTION_ATTEMPTS, pending_events_extract
from apps.memories.models import ContextEvent, Memory
from tests.factories import UserFactory
from tests.inspector.conftest import login
from tests.memories.test_ingest_api import contents, ingest

pytestmark = pytest.mark.django_db


def _exhausted(api, tenant, text: str, message_id: str) -> ContextEvent:
    """A message whose extraction failed its every attempt (as the worker's did before Session 34's fix)."""
    event_id = ingest(api, text, message_id=message_id).json()["event_id"]
    Memory.objects.filter(tenant=tenant, source_message_ids__contains=[message_id]).delete()
    ContextEvent.objects.filter(pk=event_id).update(
        extracted_at=None,
        result={},
        attempts=MAX_EXTRACTION_ATTEMPTS,
        last_error="ValueError('Cannot assign …')",
        created_at=F("created_at") - timedelta(hours=1),  # older than the sweep's wait
    )
    return ContextEvent.objects.get(pk=event_id)


def test_the_command_extracts_what_spent_its_attempts(api, tenant, other_tenant):
    event = _exhausted(api, tenant, "I have a sister named Maya", "m1")
    assert pending_events_extract() == 0  # the sweeps leave it alone
    out = StringIO()
    call_command("retry_extraction", "--dry-run", stdout=out)
    assert "1 events spent their 5 attempts" in out.getvalue()
    assert ContextEvent.objects.get(pk=event.pk).extracted_at is None  # a dry run changes nothing

    call_command("retry_extraction", "--tenant", other_tenant.slug, stdout=StringIO())
    assert ContextEvent.objects.get(pk=event.pk).extracted_at is None  # another tenant's events only

    out = StringIO()
    call_command("retry_extraction", "--tenant", tenant.slug, stdout=out)
    assert "1 extracted, 0 failed again" in out.getvalue()
    event.refresh_from_db()
    assert event.extracted_at is not None and event.attempts == 0 and event.last_error == ""
    assert "Has a sister named Maya" in contents(api)


def test_the_command_names_an_unknown_tenant():
    with pytest.raises(Exception, match="No tenant with slug 'nope'"):
        call_command("retry_extraction", "--tenant", "nope", stdout=StringIO())


def test_the_admin_action_lets_the_worker_try_them_again(api, tenant):
    exhausted = _exhausted(api, tenant, "I have a sister named Maya", "m1")
    extracted_id = ingest(api, "My brother lives in Lisbon", message_id="m2").json()["event_id"]
    user = UserFactory(username="operator", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=["view_contextevent", "change_contextevent"]))
    get_redis().delete("celery")
    response = login(user).post(
        reverse("admin:memories_contextevent_changelist"),
        {"action": "retry_extraction", "_selected_action": [str(exhausted.pk), str(extracted_id)]},
        follow=True,
    )
    assert response.status_code == 200
    assert b"1 event(s) whose extraction spent its attempts queued" in response.content
    exhausted.refresh_from_db()
    assert exhausted.attempts == 0 and exhausted.extracted_at is None  # the sweep's to extract, queued now
    assert get_redis().llen("celery") == 1
    assert pending_events_extract() == 1  # what the sweep does with it
    assert "Has a sister named Maya" in contents(api)
