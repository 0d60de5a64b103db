"""The LangGraph store (`engram_client.langgraph.EngramStore`, langgraph 1.2.22) against the live stack: put, get,
search (by namespace prefix and filter, and semantically through Engram's retrieval), delete and
list_namespaces, their async forms, the same answers as LangGraph's own InMemoryStore for the same operations,
and a compiled graph whose node remembers and recalls through it. langgraph ships no store conformance suite
(only a checkpointer one), so the comparison with InMemoryStore stands in for it."""

from __future__ import annotations

import asyncio
import time
from typing import TypedDict

import pytest
from engram_client import AsyncEngram, Engram
from engram_client.langgraph import EngramStore
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.memory import InMemoryStore

from apps.contacts.models import Contact
from apps.memories.models import Memory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def store(live_url, live_key):
    with Engram(live_url, api_key=live_key) as client:
        yield EngramStore(client)


def test_put_get_update_delete(store, live_tenant):
    value = {"text": "Likes spicy ramen", "tags": ["food", "日本"], "level": 3, "nested": {"a": None, "b": 1.5}}
    store.put(("user-1", "preferences"), "food", value)
    item = store.get(("user-1", "preferences"), "food")
    assert (item.value, item.key, item.namespace) == (value, "food", ("user-1", "preferences"))
    assert Contact.objects.filter(tenant=live_tenant, external_id="user-1").exists()  # made on the first put
    time.sleep(0.01)
    store.put(("user-1", "preferences"), "food", {"text": "Likes sushi"})
    updated = store.get(("user-1", "preferences"), "food")
    assert updated.value == {"text": "Likes sushi"}
    assert updated.created_at == item.created_at and updated.updated_at > item.updated_at
    assert Memory.objects.filter(tenant=live_tenant, key__startswith="lg:").count() == 1  # updated in place
    assert store.get(("user-1", "preferences"), "drink") is None
    assert store.get(("nobody", "preferences"), "food") is None
    store.put(("user-1", "preferences"), "same", {"text": "Likes sushi"})  # the same text under another key
    assert store.get(("user-1", "preferences"), "same").value == {"text": "Likes sushi"}
    store.delete(("user-1", "preferences"), "food")
    assert store.get(("user-1", "preferences"), "food") is None
    assert store.get(("user-1", "preferences"), "same") is not None


def test_search_by_prefix_filter_and_query(store):
    store.put(("u1", "memories"), "dog", {"text": "Has a beagle named Bruno", "kind": "pet"})
    store.put(("u1", "memories"), "job", {"text": "Works as a nurse at the city hospital", "kind": "work"})
    store.put(("u1", "memories"), "city", {"text": "Lives in Pune near the river", "kind": "place"})
    store.put(("u1", "notes"), "x", {"text": "The dog Bruno was adopted in March", "kind": "pet"})
    store.put(("u2", "memories"), "dog", {"text": "Has a cat named Luna", "kind": "pet"})
    listed = store.search(("u1", "memories"))
    assert sorted(item.key for item in listed) == ["city", "dog", "job"]
    assert all(item.score is None for item in listed)
    assert [item.key for item in store.search(("u1",), filter={"kind": "pet"})] == ["x", "dog"]  # newest first
    assert len(store.search(("u1",), limit=2)) == 2 and len(store.search(("u1",), limit=2, offset=2)) == 2
    found = store.search(("u1", "memories"), query="what is the name of the dog?")
    assert found[0].key == "dog" and found[0].score > 0
    assert {item.namespace for item in found} == {("u1", "memories")}  # not u1/notes, not u2
    wider = store.search(("u1",), query="Bruno the dog", filter={"kind": "pet"})
    assert {item.key for item in wider} == {"dog", "x"}
    assert store.list_namespaces() == [("u1", "memories"), ("u1", "notes"), ("u2", "memories")]
    assert store.list_namespaces(prefix=("u1",)) == [("u1", "memories"), ("u1", "notes")]
    assert store.list_namespaces(suffix=("memories",)) == [("u1", "memories"), ("u2", "memories")]
    assert store.list_namespaces(max_depth=1) == [("u1",), ("u2",)]


def test_the_same_answers_as_langgraphs_in_memory_store(store):
    reference = InMemoryStore()
    operations = [
        ("put", ("a", "x"), "k1", {"n": 1, "text": "one"}),
        ("put", ("a", "x"), "k2", {"n": 2, "text": "two"}),
        ("put", ("a", "y", "z"), "k1", {"n": 3, "text": "three"}),
        ("put", ("b", "x"), "k1", {"n": 4, "text": "four"}),
        ("put", ("a", "x"), "k1", {"n": 5, "text": "five"}),
        ("delete", ("a", "x"), "k2", None),
        ("put", ("a", "x"), "k.with.dots", {"n": 6, "text": "six"}),
    ]
    for kind, namespace, key, value in operations:
        for target in (reference, store):
            if kind == "put":
                target.put(namespace, key, value)
            else:
                target.delete(namespace, key)

    def view(target):
        def items(found):
            return sorted((item.namespace, item.key, tuple(sorted(item.value.items()))) for item in found)

        return {
            "get": [
                (item.value if (item := target.get(namespace, key)) else None)
                for namespace, key in [(("a", "x"), "k1"), (("a", "x"), "k2"), (("a", "y", "z"), "k1")]
            ],
            "prefix a": items(target.search(("a",), limit=50)),
            "prefix a/x": items(target.search(("a", "x"), limit=50)),
            "filter": items(target.search(("a",), filter={"n": {"$gte": 5}}, limit=50)),
            "namespaces": target.list_namespaces(),
            "depth 1": target.list_namespaces(max_depth=1),
            "suffix": target.list_namespaces(suffix=("x",)),
        }

    assert view(store) == view(reference)


def test_the_async_forms(live_url, live_key):
    async def run():
        async with AsyncEngram(live_url, api_key=live_key) as client:
            store = EngramStore(async_client=client)
            await store.aput(("u3", "facts"), "home", {"text": "Lives in Delhi"})
            got = await store.aget(("u3", "facts"), "home")
            found = await store.asearch(("u3",), query="where does he live?")
            namespaces = await store.alist_namespaces()
            await store.adelete(("u3", "facts"), "home")
            return got, found, namespaces, await store.aget(("u3", "facts"), "home")

    got, found, namespaces, gone = asyncio.run(run())
    assert got.value == {"text": "Lives in Delhi"} and found[0].key == "home"
    assert namespaces == [("u3", "facts")] and gone is None


def test_another_tenants_store_sees_nothing(store, live_url, other_live_key):
    store.put(("u1", "memories"), "secret", {"text": "The alarm code is 4321"})
    with Engram(live_url, api_key=other_live_key) as client:
        stranger = EngramStore(client)
        assert stranger.get(("u1", "memories"), "secret") is None
        assert stranger.search(("u1",)) == [] and stranger.search(("u1",), query="alarm code") == []
        assert stranger.list_namespaces() == []


def test_a_graph_remembers_and_recalls_through_the_store(store):
    class State(TypedDict):
        user: str
        message: str
        recalled: list[str]

    def remember(state: State, runtime: Runtime) -> dict:
        runtime.store.put((state["user"], "memories"), "latest", {"text": state["message"]})
        return {}

    def recall(state: State, runtime: Runtime) -> dict:
        found = runtime.store.search((state["user"], "memories"), query="which pet?")
        return {"recalled": [item.value["text"] for item in found]}

    graph = StateGraph(State)
    graph.add_node("remember", remember)
    graph.add_node("recall", recall)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    graph.add_edge("recall", END)
    app = graph.compile(store=store)
    result = app.invoke({"user": "u9", "message": "My parrot Kiwi talks all day", "recalled": []})
    assert result["recalled"] == ["My parrot Kiwi talks all day"]
    assert store.get(("u9", "memories"), "latest").value == {"text": "My parrot Kiwi talks all day"}
