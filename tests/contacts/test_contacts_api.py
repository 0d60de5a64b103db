from __future__ import annotations

import pytest

from apps.contacts.models import Contact
from tests.factories import ContactFactory

pytestmark = pytest.mark.django_db


def test_create_get_patch_delete(api, tenant):
    created = api.post(
        "/api/v1/contacts",
        {"contact_id": "wa:+911234", "display_name": "Arjun", "channel": "whatsapp", "metadata": {"tier": "gold"}},
        format="json",
    )
    assert created.status_code == 201
    assert created.json()["contact_id"] == "wa:+911234"

    fetched = api.get("/api/v1/contacts/wa:+911234").json()
    assert (fetched["display_name"], fetched["channel"], fetched["metadata"]) == ("Arjun", "whatsapp", {"tier": "gold"})

    patched = api.patch("/api/v1/contacts/wa:+911234", {"display_name": "Arjun K"}, format="json")
    assert patched.status_code == 200
    assert patched.json()["display_name"] == "Arjun K"
    assert patched.json()["channel"] == "whatsapp"

    assert api.delete("/api/v1/contacts/wa:+911234").status_code == 204
    assert not Contact.objects.filter(tenant=tenant).exists()
    assert api.get("/api/v1/contacts/wa:+911234").status_code == 404


def test_list_is_paginated_and_searchable(api, tenant, other_tenant):
    for index in range(3):
        ContactFactory(tenant=tenant, external_id=f"c-{index}", display_name=f"Name {index}")
    ContactFactory(tenant=other_tenant, external_id="c-other")
    page = api.get("/api/v1/contacts?limit=2").json()
    assert page["count"] == 3
    assert len(page["results"]) == 2
    found = api.get("/api/v1/contacts?search=Name 1").json()
    assert [row["contact_id"] for row in found["results"]] == ["c-1"]


@pytest.mark.parametrize("query", ["limit=abc", "limit=0", "limit=-3", "offset=x", "offset=-1", "limit=2.5"])
def test_a_malformed_limit_or_offset_is_a_400_naming_it(api, tenant, query):
    ContactFactory(tenant=tenant, external_id="c-1")
    response = api.get(f"/api/v1/contacts?{query}")
    assert response.status_code == 400
    assert query.split("=")[0] in response.json()["error"]["details"]


def test_a_limit_over_the_cap_is_cut_to_200_and_offset_pages(api, tenant):
    for index in range(3):
        ContactFactory(tenant=tenant, external_id=f"c-{index}")
    assert len(api.get("/api/v1/contacts?limit=5000").json()["results"]) == 3
    assert len(api.get("/api/v1/contacts?limit=2&offset=2").json()["results"]) == 1


def test_duplicate_contact_id_is_409(api, tenant):
    ContactFactory(tenant=tenant, external_id="dup")
    response = api.post("/api/v1/contacts", {"contact_id": "dup"}, format="json")
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "conflict"
    assert Contact.objects.filter(tenant=tenant).count() == 1


def test_same_contact_id_in_two_tenants_is_two_contacts(api, other_api, tenant, other_tenant):
    assert api.post("/api/v1/contacts", {"contact_id": "same"}, format="json").status_code == 201
    assert other_api.post("/api/v1/contacts", {"contact_id": "same"}, format="json").status_code == 201
    assert Contact.objects.filter(external_id="same").count() == 2


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "contact_id"),
        ({"contact_id": ""}, "contact_id"),
        ({"contact_id": "x" * 256}, "contact_id"),
        ({"contact_id": "ok", "metadata": "not-an-object"}, "metadata"),
        ({"contact_id": "ok", "display_name": "x" * 201}, "display_name"),
    ],
    ids=["missing", "empty", "too-long", "metadata-not-object", "name-too-long"],
)
def test_bad_input_is_400_with_field_details(api, tenant, payload, field):
    response = api.post("/api/v1/contacts", payload, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert field in error["details"]
    assert not Contact.objects.filter(tenant=tenant).exists()


def test_contact_id_of_255_chars_is_accepted(api):
    assert api.post("/api/v1/contacts", {"contact_id": "x" * 255}, format="json").status_code == 201


def test_malformed_json_is_400(api):
    response = api.generic("POST", "/api/v1/contacts", "{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "parse_error"


def test_patch_with_wrong_types_is_400(api, tenant):
    ContactFactory(tenant=tenant, external_id="c")
    response = api.patch("/api/v1/contacts/c", {"metadata": [1, 2]}, format="json")
    assert response.status_code == 400
    assert "metadata" in response.json()["error"]["details"]
