"""Admin actions are permissions like any other change: a staff user who may only view runs none of them
(issue 32: a view-only operator issued a read+write key for another tenant and soft-deleted memories)."""

from __future__ import annotations

import json

import pytest
from django.contrib import admin as django_admin
from django.contrib.auth.models import Permission
from django.db import connection
from django.test import Client
from django.urls import reverse

from apps.contacts.models import CrisisReview
from apps.core.redis import get_redis
from apps.tenants.models import ApiKey
from apps.tenants.services import api_key_create
from tests.factories import UserFactory
from tests.inspector.conftest import login

# Django's own "delete selected" checks the delete permission itself; every other action must say what it needs
ACTIONS_WITHOUT_DECLARATION = {"delete_selected"}


def _registered_actions() -> list[tuple[type, object, str]]:
    found = []
    for model, model_admin in django_admin.site._registry.items():
        for action in model_admin.actions or []:
            function = getattr(model_admin, action) if isinstance(action, str) else action
            found.append((model, model_admin, getattr(function, "__name__", str(action))))
    return found


def _fingerprint() -> dict[str, str]:
    """Every table's rows, hashed (sessions aside: signing in writes one), and what waits in the broker."""
    tables = {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'django_session' "
            "ORDER BY tablename"
        )
        for (table,) in cursor.fetchall():
            cursor.execute(
                f"SELECT count(*), coalesce(md5(string_agg(md5(t::text), '' ORDER BY md5(t::text))), '') "
                f'FROM "{table}" t'
            )
            count, digest = cursor.fetchone()
            tables[table] = f"{count}:{digest}"
    tables["celery queue"] = str(get_redis().llen("celery"))
    return tables


@pytest.fixture
def view_only_client() -> Client:
    user = UserFactory(username="viewer-staff", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__startswith="view_"))
    return login(user)


def _post_action(client: Client, model: type, action: str) -> object:
    selected = [str(pk) for pk in model._default_manager.values_list("pk", flat=True)[:2]]
    url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    return client.post(url, {"action": action, "_selected_action": selected or ["0"]})


def test_every_admin_action_declares_its_permissions():
    undeclared = [
        f"{model.__name__}.{name}"
        for model, model_admin, name in _registered_actions()
        if name not in ACTIONS_WITHOUT_DECLARATION
        and not getattr(getattr(model_admin, name), "allowed_permissions", None)
    ]
    assert undeclared == []
    assert len(_registered_actions()) >= 13  # every action of the tenants, contacts and memories admins was seen


@pytest.mark.django_db(transaction=True)
def test_a_view_only_staff_user_can_run_no_admin_action(view_only_client, tenant, other_tenant, seeded):
    api_key_create(tenant=other_tenant, name="existing")
    CrisisReview.objects.create(
        tenant=tenant, contact=seeded.contact, message_id="m1", excerpt="…", matched=[], severity="high", guidance="-"
    )
    before = _fingerprint()
    actions = _registered_actions()
    for model, _, name in actions:
        response = _post_action(view_only_client, model, name)
        assert response.status_code in (200, 302), f"{model.__name__}.{name}"
        assert response.get("Content-Disposition") is None, f"{model.__name__}.{name} answered a download"
        assert b"eng_" not in response.content, f"{model.__name__}.{name} showed a key"
    assert _fingerprint() == before
    # and the changelists offer them nothing to choose
    page = view_only_client.get(reverse("admin:memories_memory_changelist"))
    assert page.status_code == 200 and b'name="action"' not in page.content


@pytest.mark.django_db(transaction=True)
def test_the_same_actions_run_for_a_user_holding_the_permissions(tenant, other_tenant, seeded):
    """The other side (so the test above cannot pass by never reaching the actions): with the permission the
    key is issued, with change and delete the memory is deleted."""
    user = UserFactory(username="key-issuer", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            codename__in=[
                "view_tenant",
                "issue_api_key",
                "view_memory",
                "delete_memory",
                "view_contact",
                "export_contact",
            ]
        )
    )
    client = login(user)
    keys = ApiKey.objects.filter(tenant=other_tenant).count()
    response = client.post(
        reverse("admin:tenants_tenant_changelist"),
        {"action": "issue_api_key", "_selected_action": [str(other_tenant.pk)]},
        follow=True,
    )
    assert ApiKey.objects.filter(tenant=other_tenant).count() == keys + 1
    assert b"eng_" in response.content
    memory = seeded.contact.memories.filter(deleted_at__isnull=True).first()
    client.post(
        reverse("admin:memories_memory_changelist"),
        {"action": "soft_delete_selected", "_selected_action": [str(memory.pk)]},
    )
    memory.refresh_from_db()
    assert memory.deleted_at is not None
    response = client.post(
        reverse("admin:contacts_contact_changelist"),
        {"action": "export_json", "_selected_action": [str(seeded.contact.pk)]},
    )
    assert json.loads(response.content)["contact"]["contact_id"] == seeded.contact.external_id
