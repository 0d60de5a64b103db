"""Row-level security's two roles in the stack `make run` starts (docs/architecture.md, "Roles"): its web logs in
as the app role, whose `all` has no effect, so the admin shows staff every tenant only through the maintenance
login (`maintenance_scope()`, apps/core/tenancy.py) — planted: the admin binding `all` on the app role's own
connection lists no memory and fails this."""

from __future__ import annotations

import re

import pytest
import requests
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import PBKDF2PasswordHasher

from tests.factories import ContactFactory, MemoryFactory, TenantFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_admin_shows_staff_every_tenant_through_the_maintenance_login(live_url):
    contents = []
    for word in ("Bruno", "Luna"):
        contact = ContactFactory(tenant=TenantFactory())
        contents.append(
            MemoryFactory(tenant=contact.tenant, contact=contact, content=f"Has a dog named {word}").content
        )
    staff = get_user_model().objects.create_superuser("roles-admin", "roles@example.com")
    # hashed as the stack's settings check it (the tests' own hasher, MD5, is not one of them)
    staff.password = PBKDF2PasswordHasher().encode("a long unguessable passphrase", PBKDF2PasswordHasher().salt())
    staff.save(update_fields=["password"])
    with requests.Session() as session:
        session.get(f"{live_url}/admin/login/", timeout=30)
        answer = session.post(
            f"{live_url}/admin/login/?next=/admin/",
            data={
                "username": "roles-admin",
                "password": "a long unguessable passphrase",
                "csrfmiddlewaretoken": session.cookies["csrftoken"],
                "next": "/admin/",
            },
            headers={"Referer": f"{live_url}/admin/login/"},
            timeout=30,
        )
        assert answer.status_code == 200 and answer.url.endswith("/admin/"), answer.url
        page = session.get(f"{live_url}/admin/memories/memory/", timeout=30)
    assert page.status_code == 200
    listed = re.findall(r"Has a dog named \w+", page.text)
    assert sorted(set(listed)) == sorted(contents)
