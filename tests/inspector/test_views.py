"""The inspector through Django's test client against the real database: permissions, tenant isolation,
CSRF, the memory actions and their history, the context preview and the operator admin."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from html import unescape

import pytest
from django.apps import apps as django_apps
from django.contrib import admin as django_admin
from django.template.defaultfilters import floatformat
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from apps.contacts.models import Contact, ContactState
from apps.conversations.models import Conversation
from apps.inspector.selectors import SESSION_TENANT_KEY
from apps.knowledge.models import KnowledgeDocument
from apps.knowledge.services import document_create
from apps.memories import scoring
from apps.memories.ingest.services import memory_add
from apps.memories.models import ConsolidationRun, Memory, MemoryProfile, MemoryRevision
from apps.memories.retrieval import ranker as ranking
from apps.tenants.models import Membership
from tests.factories import ContactFactory, MembershipFactory, UserFactory
from tests.inspector.conftest import ARJUN_MESSAGES, login, seed_contact
from tests.knowledge.uploads import processed

pytestmark = pytest.mark.django_db

WORK = "Works at Infosys in Chennai"


def revisions(memory: Memory, action: str) -> list[MemoryRevision]:
    return list(MemoryRevision.objects.filter(memory=memory, action=action))


def preview_ids(html: str) -> list[str]:
    return re.findall(r'data-memory-id="([0-9a-f-]+)"', html)


@pytest.fixture
def document(tenant):
    return processed(
        document_create(
            tenant=tenant,
            title="Refund policy",
            content="# Refunds\n\nCakes can be refunded within 24 hours of delivery if they arrive damaged.",
            actor="test",
        )
    )


# --- who may see what ----------------------------------------------------------------------------


def test_anonymous_users_are_sent_to_the_login_page(client, seeded):
    for url in ("/inspector/", f"/inspector/contacts/{seeded.contact.pk}/", "/inspector/brain/"):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"] == f"/accounts/login/?next={url}"


def test_a_user_without_a_tenant_gets_403(seeded):
    response = login(UserFactory(username="stranger")).get("/inspector/")
    assert response.status_code == 403
    assert b"not linked to a tenant" in response.content


def _object_urls(seeded, document) -> dict[str, tuple[str, str]]:
    """(method, url) of every inspector view that takes an object id."""
    memory = seeded.memory(WORK)
    conversation = Conversation.objects.get(contact=seeded.contact)
    contact = seeded.contact.pk
    return {
        "contact": ("get", f"/inspector/contacts/{contact}/"),
        "context": ("get", f"/inspector/contacts/{contact}/context/?query=work"),
        "export": ("get", f"/inspector/contacts/{contact}/export.json"),
        "memory": ("get", f"/inspector/memories/{memory.pk}/"),
        "memory-edit": ("post", f"/inspector/memories/{memory.pk}/edit/"),
        "memory-pin": ("post", f"/inspector/memories/{memory.pk}/pin/"),
        "memory-correct": ("post", f"/inspector/memories/{memory.pk}/correct/"),
        "memory-delete-confirm": ("get", f"/inspector/memories/{memory.pk}/delete/"),
        "memory-delete": ("post", f"/inspector/memories/{memory.pk}/delete/"),
        "conversation": ("get", f"/inspector/conversations/{conversation.pk}/"),
        "document": ("get", f"/inspector/brain/documents/{document.pk}/"),
        "document-delete-confirm": ("get", f"/inspector/brain/documents/{document.pk}/delete/"),
        "document-delete": ("post", f"/inspector/brain/documents/{document.pk}/delete/"),
    }


@pytest.mark.parametrize(
    "view",
    [
        "contact",
        "context",
        "export",
        "memory",
        "memory-edit",
        "memory-pin",
        "memory-correct",
        "memory-delete-confirm",
        "memory-delete",
        "conversation",
        "document",
        "document-delete-confirm",
        "document-delete",
    ],
)
def test_another_tenants_object_is_a_404_page_and_nothing_changes(view, seeded, document, other_owner):
    method, url = _object_urls(seeded, document)[view]
    memory = seeded.memory(WORK)
    revisions_before = MemoryRevision.objects.count()
    client = login(other_owner)
    data = {"content": "hijacked", "importance": "0.1", "is_pinned": "true"}
    response = client.get(url) if method == "get" else client.post(url, data)
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
    assert b"Not found" in response.content
    assert b"Arjun" not in response.content and b"Infosys" not in response.content
    memory.refresh_from_db()
    assert memory.content == WORK and memory.is_current and not memory.is_pinned
    assert MemoryRevision.objects.count() == revisions_before
    assert KnowledgeDocument.objects.filter(pk=document.pk).exists()


@pytest.mark.parametrize("bad_id", ["not-a-uuid", "00000000-0000-0000-0000-000000000000"])
def test_unknown_or_malformed_ids_are_a_404_page(owner_client, bad_id):
    for url in (
        f"/inspector/contacts/{bad_id}/",
        f"/inspector/memories/{bad_id}/",
        f"/inspector/conversations/{bad_id}/",
    ):
        response = owner_client.get(url)
        assert response.status_code == 404
        assert b"Not found" in response.content


def test_the_contact_list_shows_only_the_users_tenant(owner_client, seeded, other_tenant):
    seed_contact(other_tenant, external_id="zed", display_name="Zed", texts=["I work at Wipro."], stage=None)
    html = owner_client.get("/inspector/contacts/").content.decode()
    assert "Arjun" in html
    assert "Zed" not in html


def test_a_forged_session_tenant_does_not_widen_an_owners_access(owner_client, seeded, other_tenant):
    foreign = seed_contact(other_tenant, external_id="zed", display_name="Zed", texts=["I work at Wipro."], stage=None)
    session = owner_client.session
    session[SESSION_TENANT_KEY] = str(other_tenant.pk)
    session.save()
    assert owner_client.get(f"/inspector/contacts/{foreign.contact.pk}/").status_code == 404
    assert "Arjun" in owner_client.get("/inspector/contacts/").content.decode()


def test_only_operators_can_switch_tenant(owner_client, seeded, other_tenant):
    foreign = seed_contact(other_tenant, external_id="zed", display_name="Zed", texts=["I work at Wipro."], stage=None)
    response = owner_client.post("/inspector/tenant/", {"tenant_id": str(other_tenant.pk)})
    assert response.status_code == 403
    assert SESSION_TENANT_KEY not in owner_client.session

    # staff status alone (the admin site) opens no other tenant's memory
    assert login(UserFactory(username="clerk", is_staff=True)).post(
        "/inspector/tenant/", {"tenant_id": str(other_tenant.pk)}
    ).status_code in (302, 403)
    assert SESSION_TENANT_KEY not in owner_client.session
    staff = login(_with_permissions(UserFactory(username="ops", is_staff=True), "inspect_all_tenants"))
    assert staff.post("/inspector/tenant/", {"tenant_id": str(other_tenant.pk)}).status_code == 302
    page = staff.get(f"/inspector/contacts/{foreign.contact.pk}/")
    assert page.status_code == 200 and b"Zed" in page.content
    assert b'id="tenant-switch"' in page.content
    # once switched, the first tenant's objects are out of scope for the operator too
    assert staff.get(f"/inspector/contacts/{seeded.contact.pk}/").status_code == 404
    assert staff.post("/inspector/tenant/", {"tenant_id": "nope"}).status_code == 404


def _with_permissions(user, *codenames):
    from django.contrib.auth.models import Permission

    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="tenants", codename__in=codenames))
    return user


def test_cross_tenant_access_needs_the_permissions_staff_alone_gives_none(seeded, tenant, other_tenant):
    memory = seeded.memory(WORK)
    url = f"/inspector/memories/{memory.pk}/"
    clerk = login(UserFactory(username="clerk", is_staff=True))  # admin-site staff, no membership
    assert clerk.get(url).status_code == 403
    assert clerk.post(f"{url}delete/", {"confirm": "yes"}).status_code == 403
    reader = login(_with_permissions(UserFactory(username="auditor", is_staff=True), "inspect_all_tenants"))
    assert reader.post("/inspector/tenant/", {"tenant_id": str(tenant.pk)}).status_code == 302
    assert reader.get(url).status_code == 200
    assert reader.post(f"{url}pin/", {"is_pinned": "true"}).status_code == 403  # reads every tenant, changes none
    editor = login(
        _with_permissions(UserFactory(username="ops2", is_staff=True), "inspect_all_tenants", "edit_all_tenants")
    )
    assert editor.post("/inspector/tenant/", {"tenant_id": str(tenant.pk)}).status_code == 302
    assert editor.post(f"{url}pin/", {"is_pinned": "true"}).status_code == 302
    memory.refresh_from_db()
    assert memory.is_pinned
    assert memory.revisions.filter(action="pinned", actor="user:ops2").exists()


def test_a_viewer_reads_but_cannot_change(seeded, tenant):
    viewer = MembershipFactory(tenant=tenant, user=UserFactory(username="vic"), role=Membership.ROLE_VIEWER).user
    client = login(viewer)
    memory = seeded.memory(WORK)
    page = client.get(f"/inspector/memories/{memory.pk}/")
    assert page.status_code == 200
    assert b"Your role can read memories but not change them." in page.content
    assert b"Save changes" not in page.content
    response = client.post(f"/inspector/memories/{memory.pk}/delete/")
    assert response.status_code == 403
    memory.refresh_from_db()
    assert memory.deleted_at is None
    assert not revisions(memory, "deleted")


# --- CSRF ------------------------------------------------------------------------------------------


def test_posts_without_a_csrf_token_are_refused(owner, seeded):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    memory = seeded.memory(WORK)
    response = client.post(f"/inspector/memories/{memory.pk}/delete/")
    assert response.status_code == 403
    memory.refresh_from_db()
    assert memory.deleted_at is None and not revisions(memory, "deleted")

    page = client.get(f"/inspector/memories/{memory.pk}/delete/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode()).group(1)
    response = client.post(f"/inspector/memories/{memory.pk}/delete/", {"csrfmiddlewaretoken": token})
    assert response.status_code == 302
    memory.refresh_from_db()
    assert memory.deleted_at is not None


def test_htmx_posts_carry_the_csrf_token_in_a_header(owner, seeded):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    memory = seeded.memory(WORK)
    page = client.get(f"/inspector/memories/{memory.pk}/").content.decode()
    token = re.search(r'hx-headers=\'\{"X-CSRFToken": "([^"]+)"\}\'', page).group(1)
    response = client.post(
        f"/inspector/memories/{memory.pk}/pin/", {"is_pinned": "true"}, HTTP_X_CSRFTOKEN=token, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 302
    memory.refresh_from_db()
    assert memory.is_pinned


# --- contacts list ---------------------------------------------------------------------------------


def _names(html: str) -> list[str]:
    return re.findall(r'<a class="strong one-line" href="/inspector/contacts/[^"]+/" title="[^"]*">([^<]+)</a>', html)


def test_contacts_search_and_filters(owner_client, tenant, seeded):
    quiet = ContactFactory(tenant=tenant, external_id="wa:+91-1", display_name="Meera")
    ContactState.objects.create(contact=quiet, tenant=tenant, mood="sad", relationship_stage="fading", churn_risk=0.72)
    Contact.objects.filter(pk=quiet.pk).update(last_seen_at=timezone.now() - timezone.timedelta(days=45))
    ContactFactory(tenant=tenant, external_id="wa:+91-2", display_name="Kabir")  # never seen, no state

    def names(**params) -> list[str]:
        return _names(owner_client.get("/inspector/contacts/", params).content.decode())

    assert names() == ["Arjun", "Meera", "Kabir"]
    assert names(q="meer") == ["Meera"]
    assert names(q="+91-2") == ["Kabir"]
    assert names(stage="fading") == ["Meera"]
    assert names(stage="new") == ["Kabir"]  # no state yet counts as new
    assert names(mood="sad") == ["Meera"]
    assert names(churn="high") == ["Meera"]
    assert names(churn="low") == ["Arjun", "Kabir"]
    assert names(seen="7d") == ["Arjun"]
    assert names(seen="older") == ["Meera"]
    assert names(seen="never") == ["Kabir"]
    assert names(stage="bogus") == ["Arjun", "Meera", "Kabir"]  # a hand-edited choice is ignored
    empty = owner_client.get("/inspector/contacts/", {"q": "nobody"}).content.decode()
    assert "No contacts match these filters." in empty


def test_contacts_are_paginated_and_htmx_gets_only_the_rows(owner_client, tenant):
    for index in range(30):
        ContactFactory(tenant=tenant, display_name=f"Person {index:02d}")
    first = owner_client.get("/inspector/contacts/").content.decode()
    assert len(_names(first)) == 25 and "Page 1 of 2" in first
    second = owner_client.get("/inspector/contacts/", {"page": 2}).content.decode()
    assert len(_names(second)) == 5
    partial = owner_client.get("/inspector/contacts/", {"q": "Person 0"}, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in partial and len(_names(partial)) == 10
    # htmx restoring a page from history after a cache miss needs the whole page
    restore = owner_client.get("/inspector/contacts/", HTTP_HX_REQUEST="true", HTTP_HX_HISTORY_RESTORE_REQUEST="true")
    assert "<html" in restore.content.decode()


# --- contact page ------------------------------------------------------------------------------------


def test_contact_page_shows_profile_state_memories_graph_and_charts(owner_client, tenant, seeded):
    MemoryProfile.objects.create(
        tenant=tenant,
        contact=seeded.contact,
        working_memory="Arjun is a software engineer who recently moved to Bangalore.",
        scaffold={"pets": ["Bruno"], "diet": "vegetarian"},
        version=3,
    )
    html = owner_client.get(f"/inspector/contacts/{seeded.contact.pk}/").content.decode()
    assert "recently moved to Bangalore" in html
    assert "<dt>pets</dt><dd>Bruno</dd>" in html and "<dt>diet</dt><dd>vegetarian</dd>" in html
    assert 'class="badge stage-established">established<' in html
    # memories grouped by type, with an importance bar as wide as the importance
    work = seeded.memory(WORK)
    assert f'style="width: {round(work.importance * 100)}%"' in html
    for heading in ("facts</span>", "preferences</span>", "episodes</span>"):
        assert heading in html
    # the entity graph nests a pet's fact under the pet
    bruno = html.index("<strong>Bruno</strong>")
    assert html.index("Has a dog named Bruno", bruno) < html.index("</details>", bruno)
    # the mood timeline has a lane per mood that occurred and a dot per classified message
    mood_svg = html[html.index('aria-label="Mood timeline') :]
    assert ">anxious</text>" in mood_svg and ">happy</text>" in mood_svg
    assert mood_svg.count('class="mood-dot') == 10
    current = Memory.objects.filter(contact=seeded.contact, valid_to__isnull=True, deleted_at__isnull=True).count()
    assert f"{current} current now" in html


def test_the_entity_graph_shows_a_speakers_aliases(owner_client, tenant):
    from apps.entities.models import Entity
    from apps.memories.ingest.services import IngestItem, ingest_messages

    turns = [
        ("Jordan", "Hey Rosie! How was the weekend?"),
        ("Sam", "Great, I went to a concert with Lena."),
        ("Jordan", "Lucky you, Rosie."),
    ]
    ingest_messages(
        tenant=tenant,
        items=[
            IngestItem(contact_id="pair", conversation_id="c1", message=text, message_id=f"m{index}", speaker=speaker)
            for index, (speaker, text) in enumerate(turns)
        ],
        actor="test",
    )
    contact = Contact.objects.get(tenant=tenant, external_id="pair")
    assert Entity.objects.get(tenant=tenant, contact=contact, slug="sam").aliases == ["rosie"]
    html = owner_client.get(f"/inspector/contacts/{contact.pk}/").content.decode()
    sam = html.index("<strong>Sam</strong>")
    summary = html[sam : html.index("</summary>", sam)]
    assert '<span class="tag">speaker</span>' in summary
    assert "also called" in summary and ">Rosie</span>" in summary
    assert 'title="addressed so 2× since' in summary


def test_contact_export_downloads_memories_with_history_and_messages(owner_client, seeded):
    response = owner_client.get(f"/inspector/contacts/{seeded.contact.pk}/export.json")
    assert response["Content-Disposition"] == f'attachment; filename="contact-{seeded.contact.pk}.json"'
    body = json.loads(response.content)
    assert body["contact"]["contact_id"] == "arjun"
    work = next(memory for memory in body["memories"] if memory["content"] == WORK)
    assert work["sources"] == ["arjun-m0"]
    assert [revision["action"] for revision in work["history"]] == ["created"]
    assert len(body["messages"]) == 10 and body["messages"][0]["message_id"] == "arjun-m0"
    assert {"pet:bruno", "workplace:infosys"} <= {entity["key"] for entity in body["entities"]}
    assert len(body["mood_history"]) == 10


# --- memory page and actions -------------------------------------------------------------------------


def test_memory_page_shows_sources_linked_to_the_conversation_and_history(owner_client, seeded):
    memory = seeded.memory(WORK)
    conversation = Conversation.objects.get(contact=seeded.contact)
    html = owner_client.get(f"/inspector/memories/{memory.pk}/").content.decode()
    assert f'href="/inspector/conversations/{conversation.pk}/?message=arjun-m0#m-' in html
    assert "Hi, I&#x27;m Arjun. I work at Infosys in Chennai." in html
    assert "<strong>created</strong>" in html
    chat = owner_client.get(f"/inspector/conversations/{conversation.pk}/", {"message": "arjun-m0"}).content.decode()
    assert 'class="bubble role-user highlight"' in chat


def test_edit_writes_a_revision_with_the_user_as_actor(owner_client, seeded):
    memory = seeded.memory(WORK)
    old_embedding = list(memory.embedding)
    response = owner_client.post(
        f"/inspector/memories/{memory.pk}/edit/", {"content": "Works at TCS in Chennai", "importance": "0.9"}
    )
    assert response.status_code == 302 and response["Location"] == f"/inspector/memories/{memory.pk}/"
    memory.refresh_from_db()
    assert memory.content == "Works at TCS in Chennai" and memory.importance == 0.9
    assert list(memory.embedding) != old_embedding
    (revision,) = revisions(memory, "edited")
    assert revision.actor == "user:olivia"
    assert revision.before["content"] == WORK and revision.after["content"] == "Works at TCS in Chennai"
    page = owner_client.get(f"/inspector/memories/{memory.pk}/").content.decode()
    assert "Memory updated." in page and "user:olivia" in page


def test_an_unchanged_edit_writes_nothing_and_bad_input_is_shown(owner_client, seeded):
    memory = seeded.memory(WORK)
    owner_client.post(f"/inspector/memories/{memory.pk}/edit/", {"content": WORK, "importance": str(memory.importance)})
    assert not revisions(memory, "edited")
    response = owner_client.post(f"/inspector/memories/{memory.pk}/edit/", {"content": "", "importance": "7"})
    assert response.status_code == 200
    assert b"This field is required." in response.content
    assert b"Ensure this value is less than or equal to 1.0." in response.content
    assert not revisions(memory, "edited")


def test_pin_and_unpin_are_recorded(owner_client, seeded):
    memory = seeded.memory(WORK)
    owner_client.post(f"/inspector/memories/{memory.pk}/pin/", {"is_pinned": "true"})
    memory.refresh_from_db()
    assert memory.is_pinned
    owner_client.post(f"/inspector/memories/{memory.pk}/pin/", {"is_pinned": "false"})
    memory.refresh_from_db()
    assert not memory.is_pinned
    assert [r.actor for r in revisions(memory, "pinned")] == ["user:olivia"]
    assert [r.actor for r in revisions(memory, "unpinned")] == ["user:olivia"]


def test_correct_creates_a_superseding_memory_and_context_follows(owner_client, api, seeded):
    memory = seeded.memory(WORK)
    response = owner_client.post(f"/inspector/memories/{memory.pk}/correct/", {"content": "Works at Wipro in Pune"})
    memory.refresh_from_db()
    new = memory.superseded_by
    assert new is not None and new.content == "Works at Wipro in Pune" and new.is_current
    assert response["Location"] == f"/inspector/memories/{new.pk}/"
    assert not memory.is_current
    (superseded,) = revisions(memory, "superseded")
    assert superseded.actor == "user:olivia" and superseded.related_memory_id == new.pk
    assert revisions(new, "created")[0].actor == "user:olivia"
    assert new.source_message_ids == ["arjun-m0"]  # the correction keeps the provenance
    body = api.get("/api/v1/context/arjun", {"query": "where does he work"}).json()
    contents = [row["content"] for row in body["memories"]]
    assert "Works at Wipro in Pune" in contents and WORK not in contents


def test_delete_asks_first_then_records_and_leaves_context(owner_client, api, seeded):
    memory = seeded.memory(WORK)
    before = api.get("/api/v1/context/arjun", {"query": "where does he work"}).json()
    assert WORK in [row["content"] for row in before["memories"]]

    confirm = owner_client.get(f"/inspector/memories/{memory.pk}/delete/")
    assert b"Delete this memory?" in confirm.content
    memory.refresh_from_db()
    assert memory.deleted_at is None  # a GET never deletes

    response = owner_client.post(f"/inspector/memories/{memory.pk}/delete/")
    assert response["Location"] == f"/inspector/contacts/{seeded.contact.pk}/"
    memory.refresh_from_db()
    assert memory.deleted_at is not None
    (revision,) = revisions(memory, "deleted")
    assert revision.actor == "user:olivia"
    assert revision.note == "deleted in the inspector; text, vectors and the history's text scrubbed"
    assert memory.content == "" and WORK not in str(revision.before)
    after = api.get("/api/v1/context/arjun", {"query": "where does he work"}).json()
    assert WORK not in [row["content"] for row in after["memories"]]
    assert WORK not in after["context_text"]
    # and the memory page now says so, with the actions gone
    page = owner_client.get(f"/inspector/memories/{memory.pk}/").content.decode()
    assert "Deleted memories cannot be changed." in page and "Save changes" not in page


# --- context preview --------------------------------------------------------------------------------


def test_context_preview_is_exactly_what_get_context_returns(owner_client, api, seeded):
    query = "where does he work"
    api_body = api.get("/api/v1/context/arjun", {"query": query, "explain": "true"}).json()
    html = owner_client.get(f"/inspector/contacts/{seeded.contact.pk}/context/", {"query": query}).content.decode()
    assert preview_ids(html) == [row["id"] for row in api_body["memories"]]
    assert api_body["memories"], "the seeded contact has an 'established' budget"
    shown = json.loads(unescape(re.search(r'data-testid="context-json">(.*?)</pre>', html, re.S).group(1)))
    for key in ("contact", "state", "context_text", "memory_budget", "tokens_used", "entities", "crisis", "dropped"):
        assert shown[key] == api_body[key], key
    assert [(row["id"], row["content"], row["sources"], row["explain"]["found_by"]) for row in shown["memories"]] == [
        (row["id"], row["content"], row["sources"], row["explain"]["found_by"]) for row in api_body["memories"]
    ]
    # why: the score breakdown and the source message of the top fact
    work = seeded.memory(WORK)
    item = html[html.index(f'data-memory-id="{work.pk}"') :]
    item = re.split(r'<li class="why-item"|</ol>', item)[0]
    assert 'data-testid="legend-fitted"' in html  # the shipped ranker_weights.json scores it
    # its cosine line: the feature's value × the shipped weight = its contribution (read from the weights file,
    # not written here: the line must follow whatever fit ships)
    ranker = next(row for row in api_body["memories"] if row["id"] == str(work.pk))["explain"]["ranker"]
    weight = dict(zip(ranking.active().features, ranking.active().weights, strict=True))["cosine"]
    value, contribution = ranker["features"]["cosine"], ranker["contributions"]["cosine"]
    assert weight > 0 and contribution == round(value * weight, 4) and contribution > 0
    line = f"cosine {floatformat(value, 3)} × {floatformat(weight, 2)} = <b>+{floatformat(contribution, 3)}</b>"
    assert f'feat-cosine">{line}' in item
    assert "Hi, I&#x27;m Arjun. I work at Infosys in Chennai." in item
    assert f"{api_body['tokens_used']}</strong> of <strong>{api_body['memory_budget']}</strong>" in html
    # why it is in the context at all: the query's best matches lead whatever the stage, the rest is the stage's
    placed = {row["id"]: row["placed_by"] for row in api_body["memories"]}
    assert placed[str(work.pk)] == "query"
    assert 'data-testid="placed-by">placed as one of the query\'s best matches' in item
    by_stage = next(memory_id for memory_id, by in placed.items() if by == "stage")
    stage_item = re.split(r'<li class="why-item"|</ol>', html[html.index(f'data-memory-id="{by_stage}"') :])[0]
    assert 'data-testid="placed-by">placed by the stage (established)' in stage_item


def _shown_body(html: str) -> dict:
    """The GET /context body the preview shows (and draws its breakdown from)."""
    return json.loads(unescape(re.search(r'data-testid="context-json">(.*?)</pre>', html, re.S).group(1)))


def _why_item(html: str, memory_id: str) -> str:
    item = html[html.index(f'data-memory-id="{memory_id}"') :]
    return re.split(r'<li class="why-item"|</ol>', item)[0]


def test_the_score_breakdown_shows_the_fitted_rankers_contributions(owner_client, tenant):
    """With the fitted ranker (the shipped weights file) each memory shows the version, every feature's signed
    contribution (a short question's counts against it: a red segment and a minus sign; zero ones left out)
    and how its relevance among the query's candidates makes the score."""
    seeded = seed_contact(tenant, texts=[*ARJUN_MESSAGES, "Where can I buy good filter coffee in Bangalore?"])
    query, budget = "filter coffee", "2000"  # a budget opens every type: the question's episode comes too
    html = owner_client.get(
        f"/inspector/contacts/{seeded.contact.pk}/context/", {"query": query, "token_budget": budget}
    ).content.decode()
    body = _shown_body(html)
    version = body["memories"][0]["explain"]["ranker"]["version"]
    assert version != "hand"
    assert f'data-testid="legend-fitted">Fitted ranker <code>{version}</code>' in html
    assert 'data-testid="legend-hand"' not in html and "Σ signal × weight" not in html
    question = next(row for row in body["memories"] if row["content"].startswith("Where can I buy"))
    item = _why_item(html, question["id"])
    weight = dict(zip(ranking.active().features, ranking.active().weights, strict=True))["short_question"]
    assert weight < 0  # the shipped fit counts a short question against a memory
    assert question["explain"]["ranker"]["contributions"]["short_question"] == round(weight, 4)
    assert f"short question 1.000 × −{floatformat(-weight, 2)} = <b>−{floatformat(-weight, 3)}</b>" in item
    assert item.count('class="seg seg-negative"') == 1
    # every nonzero contribution has its segment and line, the zero ones none (the question names no speaker)
    contributions = question["explain"]["ranker"]["contributions"]
    assert contributions["speaker_match"] == 0 and "speaker match" not in item
    assert item.count('<span class="seg ') == sum(1 for value in contributions.values() if value)
    # the composition: relevance × (similarity weight + recency × weight + access × weight) = the score
    signals = question["explain"]["signals"]
    composition = re.search(r'data-testid="score-composition">(.*?)</p>', item, re.S).group(1)
    shown = {name: floatformat(value, 3) for name, value in signals.items()}
    linear = floatformat(sum(contributions.values()), 3)
    expected = (
        f"Σ {linear} → relevance {shown['similarity']} × (similarity weight 0.35 + recency {shown['recency']} × 0.25"
        f" + access {shown['access_frequency']} × 0.10) ="
    )
    words = re.sub(r"<[^>]+>", "", composition).split()
    equals = words.index("=")
    assert words[: equals + 1] == expected.split()
    # what the terms compose to, from the signals rounded as explain gives them, is the score up to rounding; the
    # score is shown beside it when the two differ in the third decimal (which a seed written relative to now
    # lands on either side of)
    composed, shown_score = words[equals + 1], floatformat(question["score"], 3)
    assert float(composed) == pytest.approx(question["score"], abs=1.5e-3)
    assert words[equals + 2 :] == ([] if composed == shown_score else ["(score", f"{shown_score})"])
    relevance_times_usage = signals["similarity"] * (
        0.35 + signals["recency"] * 0.25 + signals["access_frequency"] * 0.1
    )
    assert relevance_times_usage == pytest.approx(question["score"], abs=1e-3)


def test_the_score_breakdown_shows_the_time_window_factor_the_search_applied(owner_client, tenant):
    """A query naming a day none of the memories falls in: each is discounted by the factor the search applied,
    which the breakdown reads from explain.time_window_factor (before: read back as score ÷ the score before it,
    rounded to two decimals), so the composition comes to the score."""
    seeded = seed_contact(tenant)
    query = "where did he work on 1 January 2020"
    html = owner_client.get(f"/inspector/contacts/{seeded.contact.pk}/context/", {"query": query}).content.decode()
    rows = [row for row in _shown_body(html)["memories"] if row["explain"]["found_by"] != ["last"]]
    assert rows
    for row in rows:
        assert row["explain"]["time_window"] is None and row["explain"]["time_window_factor"] == 0.5
        item = _why_item(html, row["id"])
        composition = re.search(r'data-testid="score-composition">(.*?)</p>', item, re.S).group(1)
        composition = " ".join(unescape(re.sub(r"<[^>]+>", "", composition)).split())
        shown = re.search(r"× 0\.5 \(outside the query's time window\) = ([0-9.]+)", composition)
        assert shown is not None, composition
        # equal up to the explained relevance's rounding (4 decimals), which can move the third
        assert float(shown.group(1)) == pytest.approx(row["score"], abs=0.001)


def test_the_score_breakdown_keeps_signal_times_weight_for_a_tenant_with_its_own_weights(owner_client, tenant):
    """A tenant that set its own retrieval_weights keeps the hand formula: the bar is signal × its weight,
    the usage signals counted in proportion to similarity, and they add up to the score."""
    tenant.settings = {**(tenant.settings or {}), "retrieval_weights": {"contact": {"similarity": 0.5}}}
    tenant.save(update_fields=["settings"])
    seeded = seed_contact(tenant)
    query = "where does he work"
    html = owner_client.get(f"/inspector/contacts/{seeded.contact.pk}/context/", {"query": query}).content.decode()
    body = _shown_body(html)
    assert {row["explain"]["ranker"]["version"] for row in body["memories"]} == {"hand"}
    assert 'data-testid="legend-hand">Hand weights: score = Σ signal × weight' in html
    assert 'data-testid="legend-fitted"' not in html
    work = next(row for row in body["memories"] if row["content"] == WORK)
    item = _why_item(html, work["id"])
    signals = work["explain"]["signals"]
    similarity = signals["similarity"]
    shown = {name: floatformat(value, 3) for name, value in signals.items()}
    assert f"similarity {shown['similarity']} × 0.50 = <b>{floatformat(round(similarity * 0.5, 4), 3)}</b>" in item
    recency = floatformat(round(signals["recency"] * 0.25 * similarity, 4), 3)
    assert f"recency {shown['recency']} × 0.25 × similarity {shown['similarity']} = <b>{recency}</b>" in item
    total = sum(float(value) for value in re.findall(r"= <b>([0-9.]+)</b></li>", item))
    assert total == pytest.approx(work["score"], abs=0.004)


def test_a_context_preview_of_crisis_words_flags_no_one(owner_client, seeded, tenant):
    """The owner trying a query in the preview is not the contact writing it: no review, no flag."""
    from apps.contacts.models import CrisisReview

    url = f"/inspector/contacts/{seeded.contact.pk}/context/"
    assert owner_client.get(url, {"query": "I want to die"}).status_code == 200
    assert not CrisisReview.objects.filter(tenant=tenant).exists()
    assert not ContactState.objects.filter(contact=seeded.contact, crisis_flag=True).exists()


def test_context_preview_token_budget_and_validation(owner_client, seeded):
    url = f"/inspector/contacts/{seeded.contact.pk}/context/"
    zero = owner_client.get(url, {"query": "work", "token_budget": "0"}).content.decode()
    assert preview_ids(zero) == [] and "No memory made it into context" in zero
    small = owner_client.get(url, {"query": "work", "token_budget": "12"}).content.decode()
    assert 1 <= len(preview_ids(small)) < len(preview_ids(owner_client.get(url, {"query": "work"}).content.decode()))
    assert "dropped (did not fit the budget)" in small
    bad = owner_client.get(url, {"query": "work", "token_budget": "-5"}).content.decode()
    assert "token_budget: Ensure this value is greater than or equal to 0." in bad
    assert 'data-testid="context-json"' not in bad
    bad_partial = owner_client.get(url, {"query": "work", "token_budget": "x"}, HTTP_HX_REQUEST="true").content.decode()
    assert '<p class="error card" role="alert">token_budget: Enter a whole number.' in bad_partial  # says why, in place
    partial = owner_client.get(url, {"query": "work"}, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in partial and 'data-testid="context-text"' in partial


def test_context_preview_as_of_a_moment_is_what_get_context_returns_as_of_it(owner_client, api, seeded):
    """`as_of` (the API's name; without an offset, UTC): the context as it would be assembled then — the stage as
    of that moment — exactly as GET /context?as_of= returns it; a bad one says why."""
    url = f"/inspector/contacts/{seeded.contact.pk}/context/"
    asked = {"query": "where does he work", "as_of": "2031-01-01T00:00:00"}
    later = api.get("/api/v1/context/arjun", asked | {"as_of": "2031-01-01T00:00:00Z", "explain": "true"}).json()
    today = api.get("/api/v1/context/arjun", {"query": "where does he work"}).json()
    assert later["state"]["relationship_stage"] == "dormant" != today["state"]["relationship_stage"]
    html = owner_client.get(url, asked).content.decode()
    shown = json.loads(unescape(re.search(r'data-testid="context-json">(.*?)</pre>', html, re.S).group(1)))
    for key in ("state", "context_text", "memory_budget", "tokens_used"):
        assert shown[key] == later[key], key
    assert preview_ids(html) == [row["id"] for row in later["memories"]]
    assert re.search(r'name="as_of" id="id_as_of" step="1" value="2031-01-01T00:00:00"', html)
    assert "as of 2031-01-01 00:00:00 UTC" in html
    bad = owner_client.get(url, {"query": "work", "as_of": "last spring"}).content.decode()
    assert "as_of: Enter a valid date/time." in bad and 'data-testid="context-json"' not in bad


def test_context_preview_opens_prefilled_from_its_url(owner_client, seeded):
    """A preview can be linked and bookmarked: `query` and `token_budget` (the API's names) prefill the form and
    assemble the context; `q`, the name before, still works."""
    url = f"/inspector/contacts/{seeded.contact.pk}/context/"
    html = owner_client.get(url, {"query": "where does he work", "token_budget": "300"}).content.decode()
    assert re.search(r'<input type="search" name="query" id="id_query" value="where does he work"', html)
    assert re.search(r'<input type="number" name="token_budget" id="id_token_budget"[^>]* value="300"', html)
    assert "budget set here" in html and "<strong>300</strong> memory tokens used" in html
    assert preview_ids(html)  # the context was assembled
    legacy = owner_client.get(url, {"q": "where does he work"}).content.decode()
    assert 'value="where does he work"' in legacy and preview_ids(legacy) == preview_ids(
        owner_client.get(url, {"query": "where does he work"}).content.decode()
    )
    assert 'data-testid="context-json"' not in owner_client.get(url).content.decode()  # nothing asked yet


# --- tenant brain -----------------------------------------------------------------------------------------


def test_brain_lists_tenant_memories_and_documents(owner_client, tenant, other_tenant, document):
    memory_add(tenant=tenant, contact=None, memory_type="fact", content="We close at 9pm on Sundays", actor="test")
    memory_add(tenant=other_tenant, contact=None, memory_type="fact", content="Other shop opens at dawn", actor="test")
    html = owner_client.get("/inspector/brain/").content.decode()
    assert "We close at 9pm on Sundays" in html and "Other shop" not in html
    assert "Refund policy" in html
    search = owner_client.get("/inspector/brain/", {"q": "sundays"}).content.decode()
    assert "We close at 9pm on Sundays" in search
    assert "No business memory matches" in owner_client.get("/inspector/brain/", {"q": "zebra"}).content.decode()
    sundays = Memory.objects.get(tenant=tenant, content="We close at 9pm on Sundays")
    page = owner_client.get(f"/inspector/memories/{sundays.pk}/").content.decode()
    assert '<a href="/inspector/brain/">Tenant brain</a>' in page
    assert owner_client.post(f"/inspector/memories/{sundays.pk}/delete/")["Location"] == "/inspector/brain/"
    assert revisions(sundays, "deleted")[0].actor == "user:olivia"


def test_knowledge_upload_search_and_delete(owner_client, tenant):
    response = owner_client.post(
        "/inspector/brain/documents/",
        {
            "title": "Delivery",
            "content": "We deliver cakes across Pune between 10am and 8pm.",
            "content_type": "text/plain",
        },
    )
    assert response.status_code == 302
    document = KnowledgeDocument.objects.get(tenant=tenant, title="Delivery")
    assert document.created_by == "user:olivia" and document.status == "processing" and document.chunk_count == 0
    brain = owner_client.get("/inspector/brain/").content.decode()
    assert "the worker chunks and embeds it (Processing)" in brain
    assert '<span class="badge document-processing">Processing</span>' in brain
    assert "Processing" in owner_client.get(f"/inspector/brain/documents/{document.pk}/").content.decode()
    assert processed(document).chunk_count == 1
    assert '<span class="badge document-ready">Ready</span>' in owner_client.get("/inspector/brain/").content.decode()

    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("faq.md", b"# FAQ\n\nEggless cakes are available on request.", "text/markdown")
    owner_client.post("/inspector/brain/documents/", {"title": "FAQ", "file": upload, "content_type": "text/markdown"})
    processed(KnowledgeDocument.objects.get(tenant=tenant, title="FAQ"))

    hits = owner_client.get("/inspector/brain/search/", {"q": "eggless cakes"}, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in hits and hits.index("FAQ") < hits.index("found by")

    nothing = owner_client.post("/inspector/brain/documents/", {"title": "Empty", "content_type": "text/plain"})
    assert nothing.status_code == 302 and not KnowledgeDocument.objects.filter(title="Empty").exists()
    assert "Upload a file or paste some text." in owner_client.get("/inspector/brain/").content.decode()

    confirm = owner_client.get(f"/inspector/brain/documents/{document.pk}/delete/")
    assert b"Delete \xe2\x80\x9cDelivery\xe2\x80\x9d?" in confirm.content
    assert KnowledgeDocument.objects.filter(pk=document.pk).exists()
    owner_client.post(f"/inspector/brain/documents/{document.pk}/delete/")
    assert not KnowledgeDocument.objects.filter(pk=document.pk).exists()


# --- operator admin ------------------------------------------------------------------------------------------


@pytest.fixture
def operator_client() -> Client:
    user = UserFactory(username="root", is_staff=True, is_superuser=True)
    return login(user)


def _changelist(model) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")


def _action(client: Client, model, action: str, pks) -> object:
    return client.post(
        _changelist(model), {"action": action, "_selected_action": [str(pk) for pk in pks]}, follow=False
    )


def test_every_model_is_registered_and_its_admin_pages_load(operator_client, seeded, document):
    ConsolidationRun.objects.create(kind="periodic", started_at=seeded.contact.created_at)
    for label in ("tenants", "contacts", "conversations", "entities", "memories", "core"):
        for model in django_apps.get_app_config(label).get_models():
            assert model in django_admin.site._registry, f"{model.__name__} is not registered"
            response = operator_client.get(_changelist(model))
            assert response.status_code == 200, model.__name__
    memory = seeded.memory(WORK)
    page = operator_client.get(reverse("admin:memories_memory_change", args=[memory.pk]))
    assert page.status_code == 200 and b"created" in page.content  # read-only history inline


def test_admin_edit_and_delete_go_through_the_services(operator_client, seeded):
    memory = seeded.memory(WORK)
    url = reverse("admin:memories_memory_change", args=[memory.pk])
    form_page = operator_client.get(url).content.decode()
    hidden = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form_page))  # inline management
    response = operator_client.post(
        url, {**hidden, "content": "Works at Zoho in Chennai", "importance": "0.8", "is_pinned": "on"}
    )
    assert response.status_code == 302
    memory.refresh_from_db()
    assert memory.content == "Works at Zoho in Chennai" and memory.is_pinned
    assert [r.actor for r in revisions(memory, "edited")] == ["user:root"]
    assert [r.actor for r in revisions(memory, "pinned")] == ["user:root"]

    _action(operator_client, Memory, "soft_delete_selected", [memory.pk])
    memory.refresh_from_db()
    assert memory.deleted_at is not None and revisions(memory, "deleted")[0].actor == "user:root"
    assert Memory.objects.filter(pk=memory.pk).exists()  # soft: still there for the audit trail


def test_admin_merge_and_supersede_actions(operator_client, tenant, seeded):
    first = memory_add(
        tenant=tenant, contact=seeded.contact, memory_type="preference", content="Likes masala chai", actor="t"
    ).memory
    second = memory_add(
        tenant=tenant,
        contact=seeded.contact,
        memory_type="preference",
        content="Enjoys ginger tea in the evening",
        actor="t",
    ).memory
    _action(operator_client, Memory, "merge_selected", [first.pk, second.pk])
    first.refresh_from_db()
    second.refresh_from_db()
    survivor, absorbed = (first, second) if first.is_current else (second, first)
    assert survivor.is_current and absorbed.superseded_by_id == survivor.pk
    assert revisions(absorbed, "merged")[0].actor == "user:root"

    # one selected is refused, nothing changes
    fact_a = seeded.memory("Lives in Bangalore")
    fact_b = seeded.memory(WORK)
    _action(operator_client, Memory, "supersede_older_by_newer", [fact_a.pk])
    fact_a.refresh_from_db()
    assert fact_a.is_current
    # two: the older is superseded by the newer
    _action(operator_client, Memory, "supersede_older_by_newer", [fact_a.pk, fact_b.pk])
    fact_a.refresh_from_db()
    fact_b.refresh_from_db()
    older, newer = sorted([fact_a, fact_b], key=lambda memory: memory.created_at)
    assert older.superseded_by_id == newer.pk and newer.is_current
    assert revisions(older, "superseded")[0].actor == "user:root"

    # a merge across types is refused
    episode = Memory.objects.filter(contact=seeded.contact, memory_type="episode", valid_to__isnull=True).first()
    response = _action(operator_client, Memory, "merge_selected", [newer.pk, episode.pk])
    assert response.status_code == 302
    newer.refresh_from_db()
    episode.refresh_from_db()
    assert newer.is_current and episode.is_current


def test_admin_reembed_and_recompute_importance(operator_client, seeded):
    memory = seeded.memory(WORK)
    Memory.objects.filter(pk=memory.pk).update(
        embedding_model="old-model",
        importance=0.05,
        base_importance=0.05,
        accessed_at=timezone.now() - timedelta(days=40),
    )
    _action(operator_client, Memory, "reembed_selected", [memory.pk])
    _action(operator_client, Memory, "recompute_importance", [memory.pk])
    memory.refresh_from_db()
    assert memory.embedding_model != "old-model"
    (reembedded,) = revisions(memory, "reembedded")
    assert reembedded.before == {"embedding_model": "old-model"} and reembedded.actor == "user:root"
    (recomputed,) = revisions(memory, "importance_recomputed")
    assert recomputed.actor == "user:root" and "novelty" in recomputed.note
    # a new base from the formula, then the decay earned since it was last used (40 days ago: 33 decaying days)
    assert f"base {memory.base_importance}, now {memory.importance}" in recomputed.note
    expected = scoring.decayed_importance(
        base_importance=memory.base_importance,
        decay_rate=memory.decay_rate,
        anchor_at=memory.accessed_at,
        now=timezone.now(),
        is_pinned=False,
        memory_type="fact",
    )
    assert memory.importance == pytest.approx(expected, abs=1e-3)
    assert 0.3 < memory.importance < memory.base_importance


def test_admin_contact_export_and_consolidation_actions(operator_client, tenant, seeded):
    response = _action(operator_client, Contact, "export_json", [seeded.contact.pk])
    assert response["Content-Type"] == "application/json"
    body = json.loads(response.content)
    assert body["contact"]["contact_id"] == "arjun" and any(m["content"] == WORK for m in body["memories"])

    from apps.core.redis import get_redis

    # queued for the worker (no worker runs here): nothing runs in the admin's request
    _action(operator_client, Contact, "run_consolidation", [seeded.contact.pk])
    _action(operator_client, type(tenant), "run_consolidation", [tenant.pk])
    queued = [json.loads(raw)["headers"]["task"] for raw in get_redis().lrange("celery", 0, -1)]
    assert sorted(queued) == [
        "apps.memories.tasks.scope_consolidation_task",
        "apps.memories.tasks.tenant_consolidation_task",
    ]
    assert not ConsolidationRun.objects.filter(tenant=tenant).exists()


def test_admin_tenant_reembed_and_create_through_the_service(operator_client, tenant, seeded):
    Memory.objects.filter(tenant=tenant).update(embedding_model="old-model")
    _action(operator_client, type(tenant), "reembed_tenant", [tenant.pk])
    assert not Memory.objects.filter(tenant=tenant, embedding_model="old-model").exists()
    response = operator_client.post(
        reverse("admin:tenants_tenant_add"),
        {"name": "Corner Cafe", "slug": "corner-cafe", "settings": "{}", "is_active": "on"},
    )
    assert response.status_code == 302
    assert type(tenant).objects.filter(slug="corner-cafe", name="Corner Cafe").exists()


def test_admin_is_for_operators_only(owner_client):
    response = owner_client.get("/admin/memories/memory/")
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
