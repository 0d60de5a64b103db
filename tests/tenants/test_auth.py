from __future__ import annotations

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from apps.tenants.models import ApiKey, Tenant
from apps.tenants.selectors import api_key_resolve
from apps.tenants.services import api_key_create, api_key_record_use, api_key_revoke, hash_key
from tests.factories import ApiKeyFactory, ContactFactory

pytestmark = pytest.mark.django_db

# Every tenant endpoint that exists, with a method that reads and one that writes.
ENDPOINTS = [
    ("get", "/api/v1/contacts"),
    ("post", "/api/v1/contacts"),
    ("get", "/api/v1/contacts/c-1"),
    ("patch", "/api/v1/contacts/c-1"),
    ("delete", "/api/v1/contacts/c-1"),
    ("get", "/api/v1/conversations/conv-1"),
    ("get", "/api/v1/conversations/conv-1/messages"),
]
ANY_ID = "00000000-0000-4000-8000-000000000000"
# every other endpoint: no key or a revoked key must get 401 and write nothing
MORE_ENDPOINTS = [
    ("post", "/api/v1/ingest"),
    ("post", "/api/v1/ingest/batch"),
    ("get", f"/api/v1/events/{ANY_ID}"),
    ("post", "/api/v1/observations"),
    ("get", "/api/v1/memories"),
    ("post", "/api/v1/memories"),
    ("post", "/api/v1/memories/search"),
    ("get", "/api/v1/memories/types"),
    ("get", f"/api/v1/memories/{ANY_ID}"),
    ("patch", f"/api/v1/memories/{ANY_ID}"),
    ("delete", f"/api/v1/memories/{ANY_ID}"),
    ("get", f"/api/v1/memories/{ANY_ID}/history"),
    ("get", "/api/v1/knowledge/documents"),
    ("post", "/api/v1/knowledge/documents"),
    ("get", f"/api/v1/knowledge/documents/{ANY_ID}"),
    ("delete", f"/api/v1/knowledge/documents/{ANY_ID}"),
    ("get", "/api/v1/knowledge/search"),
    ("get", "/api/v1/context/c-1"),
    ("post", "/api/v1/brain/context"),
    ("get", "/api/v1/contacts/c-1/state"),
    ("get", "/api/v1/contacts/c-1/mood-history"),
    ("get", "/api/v1/contacts/c-1/profile"),
    ("get", "/api/v1/triggers"),
    ("post", f"/api/v1/triggers/{ANY_ID}/done"),
    ("post", "/api/v1/conversations/conv-1/close"),
]


def _assert_error(response, status: int, code: str) -> None:
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    assert body["error"]["message"]


@pytest.mark.parametrize(
    ("method", "url"), ENDPOINTS + MORE_ENDPOINTS, ids=[f"{m} {u}" for m, u in ENDPOINTS + MORE_ENDPOINTS]
)
def test_no_key_is_401(method, url):
    response = getattr(APIClient(), method)(url, {}, format="json")
    _assert_error(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize(
    ("method", "url"), ENDPOINTS + MORE_ENDPOINTS, ids=[f"{m} {u}" for m, u in ENDPOINTS + MORE_ENDPOINTS]
)
def test_revoked_key_is_401_and_writes_nothing(method, url, tenant):
    issued = ApiKeyFactory(tenant=tenant)
    ContactFactory(tenant=tenant, external_id="c-1", display_name="Before")
    api_key_revoke(api_key=issued)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    response = getattr(client, method)(url, {"contact_id": "c-2", "display_name": "After"}, format="json")
    _assert_error(response, 401, "authentication_failed")
    assert list(tenant.contacts.values_list("external_id", "display_name")) == [("c-1", "Before")]
    assert not tenant.messages.exists()
    assert not tenant.memories.exists()


@pytest.mark.parametrize(
    "header",
    ["Bearer", "Bearer eng_nope", "Token abc", "Bearer eng_deadbeef_wrongsecret", "Bearer a b"],
    ids=["no-key", "not-key-shaped", "wrong-scheme", "unknown-key", "extra-parts"],
)
def test_malformed_or_unknown_key_is_401(header):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    _assert_error(client.get("/api/v1/contacts"), 401, "authentication_failed")


def test_right_prefix_wrong_secret_is_rejected(issued_key):
    forged = f"eng_{issued_key.prefix}_{'x' * 43}"
    assert api_key_resolve(plaintext=forged) is None


@pytest.mark.parametrize(("method", "url"), ENDPOINTS, ids=[f"{m} {u}" for m, u in ENDPOINTS])
def test_other_tenants_key_sees_404_not_the_data(method, url, tenant, other_api):
    ContactFactory(tenant=tenant, external_id="c-1", display_name="Secret")
    response = getattr(other_api, method)(url, {"display_name": "Hijack"}, format="json")
    if method == "get" and url == "/api/v1/contacts":
        assert response.status_code == 200
        assert response.json()["results"] == []
    elif method == "post":
        assert response.status_code == 400  # validation, in its own tenant; never touches the other one
    else:
        _assert_error(response, 404, "not_found")
    assert tenant.contacts.get().display_name == "Secret"


def test_read_only_key_cannot_write(tenant):
    issued = ApiKeyFactory(tenant=tenant, scopes=("read",))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    assert client.get("/api/v1/contacts").status_code == 200
    _assert_error(client.post("/api/v1/contacts", {"contact_id": "x"}, format="json"), 403, "permission_denied")
    assert not tenant.contacts.exists()


def test_key_is_stored_hashed_with_visible_prefix(tenant):
    issued = api_key_create(tenant=tenant, name="ci", scopes=["read"])
    stored = ApiKey.objects.get(pk=issued.api_key.pk)
    assert issued.plaintext.startswith(f"eng_{stored.prefix}_")
    assert stored.key_hash == hash_key(issued.plaintext)
    assert issued.plaintext not in str(ApiKey.objects.filter(pk=stored.pk).values().get())
    assert stored.scopes == ["read"]


def test_unknown_scope_is_refused(tenant):
    from apps.core.exceptions import ApplicationError

    with pytest.raises(ApplicationError, match="Unknown scopes: admin"):
        api_key_create(tenant=tenant, name="x", scopes=["read", "admin"])
    assert not ApiKey.objects.filter(tenant=tenant).exists()


def test_record_use_only_moves_forward(issued_key):
    from datetime import timedelta

    from django.utils import timezone

    later = timezone.now()
    assert api_key_record_use(api_key_id=issued_key.pk, used_at=later) == 1
    assert api_key_record_use(api_key_id=issued_key.pk, used_at=later - timedelta(hours=1)) == 0
    issued_key.refresh_from_db()
    assert issued_key.last_used_at == later


def test_tenant_create_command_prints_a_working_key(capsys):
    call_command("tenant_create", "Acme Ltd")
    out = capsys.readouterr().out
    key = out.split("api key ")[1].split()[0]
    resolved = api_key_resolve(plaintext=key)
    assert resolved is not None
    assert resolved.tenant.slug == "acme-ltd"
    assert sorted(resolved.scopes) == ["read", "write"]


@pytest.mark.django_db(transaction=True)  # what a request writes is committed, as in production
def test_key_use_is_recorded_on_the_request_without_a_worker_or_broker(tenant):
    """No Celery worker runs in this test: `last_used_at` is written by the request itself (once a minute),
    so authentication does not depend on the broker."""
    from datetime import timedelta

    from django.utils import timezone
    from rest_framework.test import APIClient

    issued = api_key_create(tenant=tenant, name="ci")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.plaintext}")
    assert client.get("/api/v1/contacts").status_code == 200
    first = ApiKey.objects.get(pk=issued.api_key.pk).last_used_at
    assert first is not None and timezone.now() - first < timedelta(seconds=5)
    assert client.get("/api/v1/contacts").status_code == 200  # within the minute: not written again
    assert ApiKey.objects.get(pk=issued.api_key.pk).last_used_at == first
    ApiKey.objects.filter(pk=issued.api_key.pk).update(last_used_at=first - timedelta(minutes=2))
    assert client.get("/api/v1/contacts").status_code == 200
    assert ApiKey.objects.get(pk=issued.api_key.pk).last_used_at > first


def test_an_empty_scope_list_is_refused_not_read_and_write(tenant):
    from apps.core.exceptions import ApplicationError

    with pytest.raises(ApplicationError, match="at least one scope"):
        api_key_create(tenant=tenant, name="x", scopes=[])
    assert not ApiKey.objects.filter(tenant=tenant).exists()
    assert api_key_create(tenant=tenant, name="all").api_key.scopes == sorted(ApiKey.SCOPES)  # None: every scope


def test_seed_demo_refuses_to_run_under_production_settings(settings):
    from django.core.management.base import CommandError

    settings.IS_PRODUCTION = True
    with pytest.raises(CommandError, match="production"):
        call_command("seed_demo")
    assert not Tenant.objects.filter(slug="demo").exists()
