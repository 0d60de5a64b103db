"""seed_synthetic (issue 29 item 4): the rows it loads with COPY are searchable through the API like ingested ones
(vector, full-text and entity paths), in the contact's scope and the tenant's only; and the recall measurement
of the growth benchmark (apps/memories/benchmarks/recall.py) measures what it says."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection

from apps.contacts.models import Contact, ContactState
from apps.core.embeddings import get_embedder
from apps.memories.benchmarks import synthetic
from apps.memories.benchmarks.corpus import queries
from apps.memories.benchmarks.recall import scope_recall
from apps.memories.models import Memory, MemoryEntity, MemoryRevision
from apps.tenants.models import Tenant

pytestmark = pytest.mark.django_db


def _seed(slug: str, *extra: str, memories: int = 200, contacts: int = 5) -> str:
    out = io.StringIO()
    call_command(
        "seed_synthetic",
        "--memories",
        str(memories),
        "--contacts",
        str(contacts),
        "--tenant",
        slug,
        "--pool",
        "60",
        *extra,
        stdout=out,
    )
    return out.getvalue()


def _indexes() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'memories_memory'")
        return {row[0] for row in cursor.fetchall()}


def test_the_seeded_rows_carry_what_ingest_gives_a_memory():
    out = _seed("syn")
    tenant = Tenant.objects.get(slug="syn")
    assert "200 memories, 5 contacts" in out
    rows = Memory.objects.filter(tenant=tenant)
    assert rows.count() == 200
    assert rows.filter(contact__isnull=True).count() == 40  # the brain: one in five
    assert rows.filter(contact__external_id="heavy").count() == 40
    assert set(Contact.objects.filter(tenant=tenant).values_list("external_id", flat=True)) == {
        "heavy",
        "c0",
        "c1",
        "c2",
    } | {"c3"}
    assert ContactState.objects.get(contact__tenant=tenant, contact__external_id="heavy").relationship_stage == "deep"
    assert ContactState.objects.filter(tenant=tenant).count() == 5
    assert len(set(rows.values_list("content", flat=True))) > 120  # varied texts, not one sentence repeated
    assert set(rows.values_list("memory_type", flat=True)) == {"fact", "preference", "episode", "pattern"}
    episodes = rows.filter(memory_type="episode")
    assert not episodes.filter(context_vector__isnull=True).exists()
    assert not episodes.filter(index_terms="").exists()  # the episode's date, as ingest indexes it
    assert not rows.filter(embedding__isnull=True).exists() and not rows.filter(context_embedding__isnull=True).exists()
    assert MemoryRevision.objects.filter(tenant=tenant, action="created").count() == 200
    links = MemoryEntity.objects.filter(memory__tenant=tenant).select_related("memory", "entity")
    assert links.count() > 150
    for link in links[:50]:
        assert link.entity.display_name in link.memory.content
        assert link.entity.contact_id == link.memory.contact_id  # one entity per scope


def test_a_seeded_text_is_found_through_the_api_in_its_contact_scope_and_its_tenant_only(api, tenant, other_api):
    _seed(tenant.slug)
    memory = (
        Memory.objects.filter(
            tenant=tenant, contact__external_id="c1", memory_type="episode", memoryentity__isnull=False
        )
        .distinct()
        .first()
    )
    assert memory is not None
    response = api.post(
        "/api/v1/memories/search",
        {"query": memory.content, "contact_id": "c1", "top_k": 10, "explain": True},
        format="json",
    )
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    found = next(result for result in results if result["id"] == str(memory.pk))
    assert {"vector", "keyword", "entity"} <= set(found["explain"]["found_by"])  # every index path finds it
    owners = set(Memory.objects.filter(pk__in=[result["id"] for result in results]).values_list("contact", flat=True))
    assert owners == {memory.contact_id}  # the contact's memories only
    context = api.get("/api/v1/context/c1", {"query": memory.content})
    assert context.status_code == 200 and memory.content in context.content.decode()
    # another tenant's key knows no such contact and finds none of it in its own brain
    assert other_api.post("/api/v1/memories/search", {"query": memory.content, "contact_id": "c1"}, format="json")
    brain = other_api.post("/api/v1/memories/search", {"query": memory.content}, format="json")
    assert brain.status_code == 200 and brain.json()["results"] == []


def test_seeding_refuses_a_tenant_that_holds_memories():
    _seed("syn", memories=20, contacts=2)
    with pytest.raises(CommandError, match="already holds memories"):
        _seed("syn", memories=20, contacts=2)
    assert Memory.objects.filter(tenant__slug="syn").count() == 20


@pytest.mark.django_db(transaction=True)  # an index is built after the load commits (deferred FK checks)
def test_a_rebuilding_load_builds_the_dropped_indexes_again_and_the_vector_path_still_finds(api, tenant):
    before = _indexes()
    assert set(synthetic.REBUILT_INDEXES) <= before
    out = _seed(tenant.slug, "--rebuild-indexes", memories=100, contacts=3)
    assert _indexes() == before
    assert "memory_embedding_hnsw" in out and "indexes: kept" not in out
    memory = Memory.objects.filter(tenant=tenant, contact__isnull=True).first()
    assert memory is not None
    response = api.post("/api/v1/memories/search", {"query": memory.content, "top_k": 5}, format="json")
    assert str(memory.pk) in [result["id"] for result in response.json()["results"]]


def test_the_plan_is_a_pure_function_of_the_row_number_and_adds_contacts_as_it_grows():
    plan = synthetic.Plan(memories=10_000, contacts=101)
    assert [plan.owner(i)[0] for i in range(5)] == ["heavy", "brain", "light", "light", "light"]
    light = [plan.owner(i)[1] for i in range(10_000) if plan.owner(i)[0] == "light"]
    assert light == sorted(light)  # contacts in blocks: a prefix of the plan holds the first contacts
    assert set(light) == set(range(100))
    sizes = [light.count(contact) for contact in range(100)]
    assert sum(sizes) == 6000 and min(sizes) >= 1 and max(sizes) > 3 * (6000 / 100)  # lognormal: a long tail


def test_recall_is_exact_on_a_small_tenant_and_the_contact_scope_returns_only_its_rows(tenant):
    _seed(tenant.slug, memories=300, contacts=4)
    vectors = get_embedder().embed_batch(["How is Bruno doing?", "What did I tell you about sailing in Lisbon?"])
    contacts = list(Contact.objects.filter(tenant=tenant).values_list("pk", flat=True))
    brain = scope_recall(tenant_id=tenant.pk, contact_ids=[None], vectors=vectors, label="brain")
    assert brain.recall_at_10 == 1.0 and brain.short == 0 and brain.foreign == 0 and brain.scope_size == 60
    assert brain.within_1pct == 1.0 and brain.distance_gap == pytest.approx(0.0, abs=1e-9)
    asked = get_embedder().embed_batch(queries(2 * len(contacts)))  # shared out: two per contact
    scoped = scope_recall(tenant_id=tenant.pk, contact_ids=contacts, vectors=asked, label="contacts")
    assert scoped.queries == 2 * len(contacts) and scoped.foreign == 0 and scoped.short == 0
    assert scoped.recall_at_10 == 1.0


def test_recall_falls_when_the_index_is_forced_with_a_tiny_candidate_list(tenant):
    """The measurement can see a bad index: HNSW forced (no sort allowed) with ef_search 1 and no iterative scan
    returns one row where ten are asked, and recall@10 falls to about a tenth."""
    _seed(tenant.slug, memories=300, contacts=4)
    vectors = get_embedder().embed_batch(["How is Bruno doing?", "Any plans for Lisbon next month?"])
    with connection.cursor() as cursor:
        cursor.execute(
            "SET enable_sort = off; SET enable_seqscan = off; SET hnsw.ef_search = 1; SET hnsw.iterative_scan = off"
        )
    try:
        bad = scope_recall(tenant_id=tenant.pk, contact_ids=[None], vectors=vectors, label="brain")
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET enable_sort; RESET enable_seqscan; RESET hnsw.ef_search; RESET hnsw.iterative_scan")
    assert bad.plan == "hnsw"
    assert bad.recall_at_10 < 0.5 and bad.short == 2
    assert bad.within_1pct < 0.5  # one row where ten are asked


@pytest.mark.django_db(transaction=True)  # bench_latency VACUUMs
def test_bench_latency_reuses_a_kept_tenant_and_reports_recall_at_other_ef_search_values():
    _seed("kept", memories=150, contacts=3)
    out = io.StringIO()
    call_command(
        "bench_latency", "--reuse", "kept", "--requests", "3", "--recall-queries", "4", "--recall-ef", "40", stdout=out
    )
    text = out.getvalue()
    assert "    150 memories | GET /context (heavy contact" in text and "growing to" not in text
    for scope in ("brain", "heavy", "whole tenant"):
        for mode in ("relaxed_order", "strict_order"):
            assert f"{scope} at ef_search 40, {mode}: recall@10 " in text
    assert "whole tenant at ef_search 40, relaxed_order: recall@10 1.0000" in text  # 150 rows: exact
    assert Memory.objects.filter(tenant__slug="kept").count() == 150  # measured as it is, kept


def test_the_periodic_refresh_keeps_each_seeded_contacts_stage():
    """A seeded contact carries the activity its stage needs: the refresh beat runs (fading from inactivity,
    the stage from sessions and streak) leaves every stage as seeded. Before, all had one session, and the
    first refresh made them all "new": GET /context then had no budget and retrieved nothing."""
    from django.utils import timezone

    from apps.contacts.services.state import contact_state_refresh

    _seed("staged", memories=120, contacts=12)
    states = ContactState.objects.filter(tenant__slug="staged").select_related("contact")
    seeded = {state.contact.external_id: state.relationship_stage for state in states}
    assert seeded["heavy"] == "deep"
    assert len(set(seeded.values())) >= 3  # a spread of stages, not one
    for state in states:
        contact_state_refresh(contact=state.contact, now=timezone.now())
    assert {state.contact.external_id: state.relationship_stage for state in states.all()} == seeded


@pytest.mark.django_db(transaction=True)  # bench_latency VACUUMs
def test_bench_latency_gives_a_kept_tenants_contacts_their_stage_again_and_refuses_an_empty_context():
    _seed("faded", memories=150, contacts=3)
    ContactState.objects.filter(tenant__slug="faded").update(relationship_stage="new", sessions_count=1)
    out = io.StringIO()
    call_command("bench_latency", "--reuse", "faded", "--requests", "3", "--recall-queries", "0", stdout=out)
    assert "3 contacts given their stage again (the heavy one deep)" in out.getvalue()
    heavy = ContactState.objects.get(tenant__slug="faded", contact__external_id="heavy")
    assert (heavy.relationship_stage, heavy.sessions_count) == ("deep", 40)
    # a heavy contact with no budget is refused, not timed (the stage is restored before: its memories are gone)
    Memory.objects.filter(tenant__slug="faded", contact__external_id="heavy").delete()
    with pytest.raises(CommandError, match="GET /context of the heavy contact returned no memories"):
        call_command("bench_latency", "--reuse", "faded", "--requests", "3", "--recall-queries", "0", stdout=out)
