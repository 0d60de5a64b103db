from __future__ import annotations

import math
from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from apps.core.embeddings import get_embedder
from apps.memories import scoring
from apps.memories.ingest.services import memory_add
from apps.memories.models import Memory
from apps.memories.retrieval import candidates, rerank, search
from apps.memories.retrieval import query as retrieval_query
from apps.memories.retrieval import ranker as ranking
from apps.memories.retrieval.access import access_flush
from apps.memories.retrieval.search import memory_search
from apps.memories.retrieval.signals import specificity
from apps.memories.retrieval.types import Background
from tests.factories import GARDEN_TOPICS, ContactFactory, MemoryFactory

pytestmark = pytest.mark.django_db


def add(tenant, contact, content, memory_type="fact", **extra):
    change = memory_add(tenant=tenant, contact=contact, memory_type=memory_type, content=content, actor="test", **extra)
    assert change.action == "created", change
    return change.memory


@pytest.fixture
def contact(tenant):
    return ContactFactory(tenant=tenant, external_id="arjun", display_name="Arjun")


@pytest.fixture
def single_source(monkeypatch):
    """Shrink the vector candidate list to one so each source's own hits can be told apart."""
    monkeypatch.setattr(candidates, "VECTOR_CANDIDATES", 1)


def test_keyword_only_hit_is_not_dropped(tenant, contact, single_source):
    add(tenant, contact, "Loves hiking in the mountains every weekend")
    target = add(tenant, contact, "Ordered a blender from the zyxwvut shop")
    result = memory_search(tenant=tenant, contact=contact, query="mountain hiking trips or zyxwvut", top_k=5)
    by_id = {item.memory.pk: item for item in result.results}
    assert target.pk in by_id
    assert by_id[target.pk].found_by == ("keyword",)
    assert by_id[target.pk].bm25 > 0


def test_entity_only_hit_is_not_dropped(tenant, contact, single_source, api):
    api.post(
        "/api/v1/ingest",
        {
            "contact_id": "arjun",
            "conversation_id": "c",
            "message": "My dog Bruno is a golden retriever",
            "role": "user",
            "message_id": "m1",
        },
        format="json",
    )
    episode = Memory.objects.get(tenant=tenant, memory_type="episode")
    # only its entity link names Bruno now, not its words or its meaning: the vector source's one slot goes to
    # the extracted fact 'Has a dog named Bruno' (single_source), so the episode is an entity-only hit
    content = "chewed the sofa cushions yesterday"
    embedding = get_embedder().embed_batch([content])[0].tolist()
    Memory.objects.filter(pk=episode.pk).update(content=content, embedding=embedding)
    add(tenant, contact, "Thinks the weather is nice")
    result = memory_search(tenant=tenant, contact=contact, query="what about bruno's health?", top_k=10)
    by_id = {item.memory.pk: item for item in result.results}
    assert episode.pk in by_id
    assert by_id[episode.pk].found_by == ("entity",)  # found by no other source: the hit the union must keep
    # weighted by how rare the entity is in this tiny scope (on 2 of its 3 memories)
    hit = by_id[episode.pk]
    assert hit.signals.entity_match == hit.entity_weights[0] == specificity.weight(linked=2, total=3)
    assert by_id[episode.pk].matched_entities == ("pet:bruno",)


def test_vector_only_hit(tenant, contact):
    target = add(tenant, contact, "Has a dog")
    result = memory_search(tenant=tenant, contact=contact, query="canine companion", top_k=5)
    (hit,) = [item for item in result.results if item.memory.pk == target.pk]
    assert hit.found_by == ("vector",)
    assert hit.bm25 == 0.0
    assert hit.cosine > 0.2


def test_a_background_of_some_types_is_found_by_its_own_source_and_ranked_with_the_rest(tenant, contact, monkeypatch):
    """GET /context's stage density in the same search (types.Background): the scope's memories of its types
    closest to the query, found by a source of their own even when every other source fills up with other
    types, and returned in the ranking's order, at most `limit` of them."""
    monkeypatch.setattr(candidates, "VECTOR_CANDIDATES", 2)  # the vector source's two places go to the facts
    for content in ["Works at Infosys in Pune", "Works night shifts at the plant", "Wants a job at a startup"]:
        add(tenant, contact, content)
    preferences = {add(tenant, contact, text, "preference").pk for text in ["Prefers tea", "Likes jazz", "Hates rain"]}
    query = "where does he work?"

    alone = memory_search(tenant=tenant, contact=contact, query=query, top_k=10)
    assert alone.background == []
    assert not preferences & {item.memory.pk for item in alone.results}  # no source of the search finds them

    result = memory_search(
        tenant=tenant, contact=contact, query=query, top_k=10, background=Background(("preference",), limit=5)
    )
    found = result.background
    assert len(found) == 2 and {item.memory.pk for item in found} <= preferences  # the source's depth
    assert all("background" in item.found_by for item in found)
    assert [item.score for item in found] == sorted((item.score for item in found), reverse=True)
    facts = Background(("fact",), limit=1)
    one = memory_search(tenant=tenant, contact=contact, query=query, top_k=10, background=facts).background
    assert len(one) == 1 and one[0].memory.memory_type == "fact"


def test_score_is_the_weighted_sum_of_its_signals(tenant, contact):
    """With the hand weights (the fallback, and a tenant's own weights): the spec's weighted sum. With the fitted
    ranker (the default): its relevance, with the usage signals counted in proportion to it."""
    memory = add(tenant, contact, "Works at Infosys as a backend engineer", importance=0.6)
    now = timezone.now()
    Memory.objects.filter(pk=memory.pk).update(access_count=5, accessed_at=now - timedelta(days=73))
    (hit,) = memory_search(
        tenant=tenant, contact=contact, query="Where does he work?", top_k=1, now=now, ranker=search.HAND
    ).results
    assert hit.signals.recency == pytest.approx(0.8, abs=1e-6)
    assert hit.signals.importance == 0.6
    assert hit.signals.access_frequency == 0.25
    assert hit.signals.entity_match == 0.0
    assert hit.signals.similarity == 1.0  # the only candidate is the best there is
    expected = 0.35 * hit.signals.similarity + 0.25 * 0.8 + 0.20 * 0.6 + 0.10 * 0.25 + 0.10 * 0.0
    assert hit.score == pytest.approx(expected, abs=1e-6)
    ranker = ranking.Ranker(version="test", features=("cosine", "bm25"), weights=(1.0, 1.0))
    (fitted,) = memory_search(
        tenant=tenant, contact=contact, query="Where does he work?", top_k=1, now=now, ranker=ranker
    ).results
    assert fitted.ranker_version == "test"
    assert fitted.signals.similarity == 1.0
    assert fitted.score == pytest.approx(1.0 * (0.35 + 0.25 * 0.8 + 0.10 * 0.25), abs=1e-6)


def test_bm25_is_computed_in_sql_with_the_formula_s_exact_numbers(tenant, contact):
    MemoryFactory.bulk(tenant=tenant, contact=contact, contents=["kiln kiln fire", "fire pit", "garden"])
    results = memory_search(tenant=tenant, contact=contact, query="kiln", top_k=3).results
    by_content = {item.memory.content: item for item in results}
    # 3 memories of 2, 2 and 1 lexemes (average 5/3); 'kiln' is in one of them, twice
    idf = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    expected = idf * 2 * (1.2 + 1) / (2 + 1.2 * (1 - 0.75 + 0.75 * 2 / (5 / 3)))
    assert by_content["kiln kiln fire"].bm25 == pytest.approx(expected, rel=1e-9)
    assert by_content["kiln kiln fire"].bm25 == pytest.approx(1.2768, abs=1e-4)
    assert by_content["fire pit"].bm25 == 0.0
    assert by_content["garden"].bm25 == 0.0


def test_context_cosine_is_the_query_against_the_context_embedding_else_the_own_cosine(tenant, contact):
    from apps.core.embeddings import get_embedder

    MemoryFactory.bulk(tenant=tenant, contact=contact, contents=["They're a real support.", "We repainted the fence."])
    embedder = get_embedder()
    context = embedder.embed_batch(["Melanie: my family helped me through\nThey're a real support."])[0]
    Memory.objects.filter(tenant=tenant, content="They're a real support.").update(context_embedding=context.tolist())
    query = "How does Melanie feel about her family?"
    results = memory_search(tenant=tenant, contact=contact, query=query, top_k=2).results
    by_content = {item.memory.content: item for item in results}
    vector = embedder.embed_batch([query])[0]
    support, fence = by_content["They're a real support."], by_content["We repainted the fence."]
    assert support.context_cosine == pytest.approx(float(np.dot(vector, context)), abs=1e-4)
    assert support.context_cosine > support.cosine + 0.1  # the family turn before makes it about family
    assert fence.context_cosine == pytest.approx(fence.cosine, abs=1e-9)  # no context: its own cosine
    assert support.explain()["context_cosine"] == round(support.context_cosine, 4)


def test_tenant_weight_override_changes_the_score(tenant, contact):
    add(tenant, contact, "Works at Infosys as a backend engineer", importance=0.6)
    tenant.settings = {
        "retrieval_weights": {
            "contact": {
                "similarity": 0.0,
                "recency": 0.0,
                "importance": 1.0,
                "access_frequency": 0.0,
                "entity_match": 0.0,
            }
        }
    }
    tenant.save()
    (hit,) = memory_search(tenant=tenant, contact=contact, query="work", top_k=1).results
    assert hit.score == 0.6


def test_superseded_deleted_expired_and_faded_are_excluded_and_compressed_episodes_stay_searchable(tenant, contact):
    kept = add(tenant, contact, "Lives in Chennai")
    superseded = add(tenant, contact, "Grew up near the old Chennai railway station with three cousins")
    deleted = add(tenant, contact, "Sold a vintage motorbike to a collector from Chennai")
    compressed = add(tenant, contact, "Watched a cricket final in a packed Chennai stadium", memory_type="episode")
    expired = add(tenant, contact, "Is stuck in Chennai traffic right now", memory_type="episode")
    faded = add(tenant, contact, "Once ate dosa at a Chennai beach stall during the monsoon", memory_type="episode")
    now = timezone.now()
    Memory.objects.filter(pk=superseded.pk).update(valid_to=now, superseded_by=kept)
    Memory.objects.filter(pk=deleted.pk).update(deleted_at=now)
    Memory.objects.filter(pk=compressed.pk).update(is_compressed=True)
    Memory.objects.filter(pk=expired.pk).update(expires_at=now - timedelta(minutes=1))
    Memory.objects.filter(pk=faded.pk).update(importance=0.05)
    ids = {item.memory.pk for item in memory_search(tenant=tenant, contact=contact, query="Chennai", top_k=50).results}
    # a compressed episode is summed up elsewhere, but a query still finds what it says (docs/retrieval.md)
    assert ids == {kept.pk, compressed.pk}
    # without a query (the importance listing a context without one uses), it stays out
    listed = memory_search(tenant=tenant, contact=contact, query="", top_k=50).results
    assert compressed.pk not in {item.memory.pk for item in listed}
    listed = memory_search(tenant=tenant, contact=contact, query="", top_k=50, include_compressed=True).results
    assert compressed.pk in {item.memory.pk for item in listed}


def test_search_is_scoped_to_contact_and_tenant(tenant, other_tenant, contact):
    other_contact = ContactFactory(tenant=tenant)
    foreign_contact = ContactFactory(tenant=other_tenant)
    add(tenant, contact, "Has a dog named Bruno")
    add(tenant, other_contact, "Has a dog named Rex")
    add(other_tenant, foreign_contact, "Has a dog named Max")
    add(tenant, None, "We sell dog treats")
    contents = {
        item.memory.content for item in memory_search(tenant=tenant, contact=contact, query="dog", top_k=50).results
    }
    assert contents == {"Has a dog named Bruno"}
    brain = {item.memory.content for item in memory_search(tenant=tenant, contact=None, query="dog", top_k=50).results}
    assert brain == {"We sell dog treats"}


def test_search_api_explain_sources_and_access_counts(api, other_api, tenant):
    api.post(
        "/api/v1/ingest",
        {
            "contact_id": "arjun",
            "conversation_id": "c",
            "message": "I work at Infosys",
            "role": "user",
            "message_id": "m-7",
        },
        format="json",
    )
    response = api.post(
        "/api/v1/memories/search", {"query": "Infosys job", "contact_id": "arjun", "explain": True}, format="json"
    )
    assert response.status_code == 200, response.content
    top = response.json()["results"][0]
    assert top["content"] == "Works at Infosys"
    assert top["sources"] == ["m-7"]
    assert set(top["explain"]["signals"]) == {
        "similarity",
        "recency",
        "importance",
        "access_frequency",
        "entity_match",
        "speaker_match",
        "time_match",
    }
    assert "keyword" in top["explain"]["found_by"]
    memory = Memory.objects.get(pk=top["id"])
    assert memory.access_count == 0  # nothing written on the request path
    assert access_flush() == len(response.json()["results"])
    memory.refresh_from_db()
    assert memory.access_count == 1
    assert (
        other_api.post(
            "/api/v1/memories/search", {"query": "Infosys", "contact_id": "arjun"}, format="json"
        ).status_code
        == 404
    )
    assert other_api.post("/api/v1/memories/search", {"query": "Infosys"}, format="json").json()["results"] == []


@pytest.mark.parametrize(
    "payload",
    [{}, {"query": "x", "top_k": 51}, {"query": "x", "top_k": 0}, {"query": "x", "memory_types": ["gossip"]}],
    ids=["no-query", "top-k-too-big", "top-k-zero", "bad-type"],
)
def test_search_bad_input_is_400(api, payload):
    assert api.post("/api/v1/memories/search", payload, format="json").status_code == 400


def test_read_only_key_may_search(tenant):
    from rest_framework.test import APIClient

    from tests.factories import ApiKeyFactory

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {ApiKeyFactory(tenant=tenant, scopes=('read',)).plaintext}")
    assert client.post("/api/v1/memories/search", {"query": "anything"}, format="json").status_code == 200


def test_tenant_retrieval_weights_are_used_for_brain_scope(tenant):
    weights = search.weights_for(tenant=tenant, is_tenant_scope=True)
    assert weights == scoring.TENANT_WEIGHTS


def test_reranker_setting_falls_back_to_the_blended_score_without_its_model(tenant, contact, settings):
    for text in ["Works at Infosys as a backend engineer", "Loves hiking in the mountains", "Has a dog named Bruno"]:
        add(tenant, contact, text)
    baseline = [item.memory.pk for item in memory_search(tenant=tenant, contact=contact, query="job", top_k=3).results]
    rerank._cross_encoder.cache_clear()
    settings.ENGRAM = {**settings.ENGRAM, "RERANKER_ENABLED": True, "RERANKER_MODEL": "no/such-model-offline"}
    try:
        reranked = [
            item.memory.pk for item in memory_search(tenant=tenant, contact=contact, query="job", top_k=3).results
        ]
    finally:
        rerank._cross_encoder.cache_clear()
    assert reranked == baseline


class _LongerIsBetterCrossEncoder:
    """A stand-in for the cross-encoder model (none can be loaded offline here): `predict` on (query, text)
    pairs, as sentence-transformers' CrossEncoder does, returning raw logits (any real number). It prefers
    longer texts, an order the blended score does not have, so that the test sees the reranker's order."""

    def __init__(self) -> None:
        self.pairs: list[tuple[str, str]] = []

    def predict(self, pairs):  # type: ignore[no-untyped-def]
        self.pairs += pairs
        return np.array([len(text) / 10 - 3 for _, text in pairs])


def test_reranker_replaces_the_similarity_of_the_head_and_reorders_it(tenant, contact, settings, monkeypatch):
    """memory-logic.txt §2.5: the cross-encoder's relevance replaces similarity (squashed into [0, 1]) for
    the top RERANK_TOP candidates, which are sorted by the recomputed score; the rest keep theirs, after."""
    for text in ["Works at Infosys as a backend engineer", "Loves hiking in the mountains", "Has a dog named Bruno"]:
        add(tenant, contact, text)
    query = "has he got a dog or a job"
    blended = memory_search(tenant=tenant, contact=contact, query=query, top_k=3).results
    assert blended[0].memory.content == "Has a dog named Bruno"
    model = _LongerIsBetterCrossEncoder()
    monkeypatch.setattr(rerank, "_cross_encoder", lambda: model)
    monkeypatch.setattr(rerank, "RERANK_TOP", 2)
    settings.ENGRAM = {**settings.ENGRAM, "RERANKER_ENABLED": True}
    reranked = memory_search(tenant=tenant, contact=contact, query=query, top_k=3).results

    assert model.pairs == [(query, item.memory.content) for item in blended[:2]]  # only the head is scored
    weights = scoring.CONTACT_WEIGHTS
    for item in reranked[:2]:
        raw = model.predict([(query, item.memory.content)])[0]
        assert item.signals.similarity == pytest.approx(1 / (1 + math.exp(-raw)))
        # the score recomputed from it, by the formula of the ranker in use (the hand one without a weights file)
        expected = (
            scoring.retrieval_score(item.signals, weights)
            if item.ranker_version == search.HAND
            else scoring.ranked_score(relevance=item.signals.similarity, signals=item.signals, weights=weights)
        )
        assert item.score == pytest.approx(expected)
    assert reranked[0].score >= reranked[1].score
    assert reranked[0].memory.content == "Works at Infosys as a backend engineer"  # the longer of the head
    assert {item.memory.pk for item in reranked[:2]} == {item.memory.pk for item in blended[:2]}
    tail, blended_tail = reranked[2], blended[2]  # the tail keeps its blended similarity and its place
    assert (tail.memory.pk, tail.signals.similarity) == (blended_tail.memory.pk, blended_tail.signals.similarity)


def test_the_reranker_keeps_the_time_window_factor(tenant, contact, settings, monkeypatch):
    """A query naming a day none of the memories falls in: the head the cross-encoder rescored keeps the window
    factor, as every other score does (it was dropped there), and explains it."""
    for text in ["Works at Infosys as a backend engineer", "Loves hiking in the mountains", "Has a dog named Bruno"]:
        add(tenant, contact, text)
    monkeypatch.setattr(rerank, "_cross_encoder", _LongerIsBetterCrossEncoder)
    settings.ENGRAM = {**settings.ENGRAM, "RERANKER_ENABLED": True}
    query = "has he got a dog or a job on 1 January 2020"
    reranked = memory_search(tenant=tenant, contact=contact, query=query, top_k=3).results
    weights = scoring.CONTACT_WEIGHTS
    assert len(reranked) == 3
    for item in reranked:
        assert (item.window_factor, item.explain()["time_window_factor"]) == (0.5, 0.5)
        before = (
            scoring.retrieval_score(item.signals, weights)
            if item.ranker_version == search.HAND
            else scoring.ranked_score(relevance=item.signals.similarity, signals=item.signals, weights=weights)
        )
        assert before > 0 and item.score == round(before * 0.5, 6)


def test_an_entity_linked_to_the_cap_is_ubiquitous_unless_the_search_is_restricted_to_types(
    tenant, contact, monkeypatch
):
    """Links are counted from the (entity, memory) index up to the cap; a search restricted to memory types
    counts only the links to memories of those types (the exact, scoped count)."""
    from apps.entities.models import Entity
    from apps.memories.models import MemoryEntity

    monkeypatch.setattr(retrieval_query, "UBIQUITY_LINK_CAP", 5)
    MemoryFactory.bulk(
        tenant=tenant, contact=contact, contents=[f"{topic} ({index})" for index in range(3) for topic in GARDEN_TOPICS]
    )
    Memory.objects.filter(tenant=tenant, contact=contact).update(memory_type="episode")  # 45 episodes
    bruno = Entity.objects.create(tenant=tenant, contact=contact, entity_type="pet", slug="bruno", display_name="Bruno")
    facts = [add(tenant, contact, f"Bruno's {thing}") for thing in ("vet is Dr Rao", "food is kibble", "bed is blue")]
    facts += [add(tenant, contact, f"Bruno {thing}") for thing in ("is nine", "hates baths", "snores")]
    episode = add(tenant, contact, "Bruno chewed the garden hose", memory_type="episode")
    links = [MemoryEntity(memory=memory, entity=bruno) for memory in [*facts, episode]]
    MemoryEntity.objects.bulk_create(links, ignore_conflicts=True)  # the episode may be linked by extraction
    assert Memory.objects.filter(tenant=tenant, contact=contact, memory_type="episode").count() >= 40  # share rule on

    everything = memory_search(tenant=tenant, contact=contact, query="how is bruno?", top_k=5)
    assert everything.query_entities == []  # 7 links ≥ the cap of 5: a stop word
    episodes = memory_search(tenant=tenant, contact=contact, query="how is bruno?", top_k=5, memory_types=["episode"])
    assert [entity.key for entity in episodes.query_entities] == ["pet:bruno"]  # 1 link among 46 episodes
    assert episodes.results[0].memory.pk == episode.pk
    assert episodes.results[0].signals.entity_match == 1.0


def test_a_long_messages_share_holds_under_the_reranker_and_only_ingests_split_counts(
    tenant, contact, settings, monkeypatch
):
    """One of ten chunks keeps chunk_share.factor(10) of the score the cross-encoder's relevance gives (as the
    window factor does); a memory whose metadata a client set with strings, or with chunk ≥ chunks, is not
    read as a split."""
    from apps.memories.retrieval.signals import chunk_share

    add(tenant, contact, "Works at Infosys as a backend engineer", metadata={"chunk": 3, "chunks": 10})
    add(tenant, contact, "Has a dog named Bruno", metadata={"chunk": "0", "chunks": "10"})
    add(tenant, contact, "Loves hiking in the mountains", metadata={"chunk": 10, "chunks": 10})
    monkeypatch.setattr(rerank, "_cross_encoder", _LongerIsBetterCrossEncoder)
    settings.ENGRAM = {**settings.ENGRAM, "RERANKER_ENABLED": True}
    reranked = memory_search(tenant=tenant, contact=contact, query="has he got a dog or a job", top_k=3).results
    by_content = {item.memory.content: item for item in reranked}
    assert len(by_content) == 3
    chunked = by_content["Works at Infosys as a backend engineer"]
    assert chunked.chunk_factor == chunk_share.factor(10) == chunked.explain()["chunk_factor"] < 1.0
    weights = scoring.CONTACT_WEIGHTS
    before = (
        scoring.retrieval_score(chunked.signals, weights)
        if chunked.ranker_version == search.HAND
        else scoring.ranked_score(relevance=chunked.signals.similarity, signals=chunked.signals, weights=weights)
    )
    assert before > 0 and chunked.score == round(before * chunk_share.factor(10), 6)
    assert by_content["Has a dog named Bruno"].chunk_factor == 1.0
    assert by_content["Loves hiking in the mountains"].chunk_factor == 1.0


def test_a_short_list_is_the_head_of_a_long_one_and_a_long_one_holds_every_candidate(tenant, contact, monkeypatch):
    """Only the head of the ranking becomes ScoredMemory rows (search.HEAD deep, or top_k when more): the order,
    scores and explanations of a top 3 are those of a top 60, and a top_k past every candidate returns them all,
    each with its fitted contributions (the explanation's part that is computed per result)."""
    monkeypatch.setattr(search, "HEAD", 4)  # fewer rows than candidates, so the head is cut
    for index, topic in enumerate(GARDEN_TOPICS[:12]):
        add(tenant, contact, f"Planted {topic} by the fence in week {index}")
    short = memory_search(tenant=tenant, contact=contact, query="what did I plant by the fence?", top_k=3)
    long = memory_search(tenant=tenant, contact=contact, query="what did I plant by the fence?", top_k=60)
    assert long.candidates == 12 and len(long.results) == 12 and len(short.results) == 3
    assert [(item.memory.pk, item.score, item.explain()) for item in short.results] == [
        (item.memory.pk, item.score, item.explain()) for item in long.results[:3]
    ]
    assert all(item.contributions for item in long.results)  # the fitted ranker's, for every result
    scores = [item.score for item in long.results]
    assert scores == sorted(scores, reverse=True)
