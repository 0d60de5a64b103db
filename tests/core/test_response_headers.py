"""Headers on every answer (apps/core/headers.py): `Cache-Control: no-store` on the API's, MCP's, the
inspector's and the admin's, so no browser or proxy cache keeps a contact's data; static files keep theirs."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner_client(tenant) -> Client:
    client = Client()
    client.force_login(MembershipFactory(tenant=tenant, user=UserFactory(username="olivia")).user)
    return client


def test_api_and_inspector_answers_are_not_stored(api, owner_client, tenant):
    assert api.post("/api/v1/contacts", {"contact_id": "ann"}, format="json").status_code == 201
    answers = {
        "api list": api.get("/api/v1/contacts"),
        "api export": api.get("/api/v1/contacts/ann/export"),
        "api 404": api.get("/api/v1/contacts/nobody"),
        "api 401": Client().get("/api/v1/contacts"),
        "api 400": api.get("/api/v1/contacts", {"search": "\x00"}),
        "mcp 401": Client().post("/mcp", "{}", content_type="application/json"),
        "schema": api.get("/api/v1/schema/"),
        "inspector": owner_client.get("/inspector/"),
        "inspector contact": owner_client.get("/inspector/contacts/"),
        "login": Client().get("/accounts/login/"),
        "admin login": Client().get("/admin/login/"),
        "health": Client().get("/healthz"),
    }
    stored = {name: response.get("Cache-Control") for name, response in answers.items()}
    assert {name: "no-store" in (value or "") for name, value in stored.items()} == dict.fromkeys(answers, True), stored


def test_static_files_keep_their_caching():
    response = Client().get("/static/css/engram.css")
    assert response.status_code == 200
    assert "no-store" not in response.get("Cache-Control", "")
