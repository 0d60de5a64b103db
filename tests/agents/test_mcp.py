"""The MCP server as MCP clients meet it: the official SDK's client (mcp 2.3.0) over streamable HTTP against
POST /mcp of the stack `make run` starts, and over stdio against `manage.py mcp_stdio`. Tools listed; add, then
search, then context finds the fact; another tenant's key sees none of it; no key, a bad key and a revoked key
are refused before any tool runs; a bad argument is a tool error, never a transport failure or a 500."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from django.conf import settings
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from apps.contacts.models import Contact, ContactState, ErasureRecord
from apps.memories.models import Memory
from apps.tenants.models import ApiKey
from tests.agents.conftest import recalls_the_dog
from tests.factories import ApiKeyFactory

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {
    "add_memory",
    "search_memory",
    "get_context",
    "list_memories",
    "update_memory",
    "delete_memory",
    "export_contact",
    "erase_contact",
}


@asynccontextmanager
async def http_client(url: str, key: str | None, mode: str = "auto") -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode) as client,
    ):
        yield client


def stdio_parameters(key: str, test_database_url: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp_stdio", "--api-key", key],
        cwd=str(ROOT),
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.local",
            "DATABASE_URL": test_database_url,
            "REDIS_URL": settings.REDIS_URL,
        },
    )


def structured(result: Any) -> dict[str, Any]:
    assert result.is_error is False, result.content[0].text
    return result.structured_content


def error_text(result: Any) -> str:
    assert result.is_error is True, result.structured_content
    return result.content[0].text


async def remember_and_recall(client: Client) -> dict[str, Any]:
    """add → search → context, the loop an agent runs; returns what each step said."""
    added = structured(
        await client.call_tool(
            "add_memory", {"contact_id": "arjun", "message": "My dog Bruno is a beagle and I work at Infosys"}
        )
    )
    found = structured(await client.call_tool("search_memory", {"contact_id": "arjun", "query": "what pet?"}))
    context = structured(
        await client.call_tool("get_context", {"contact_id": "arjun", "query": "how is Bruno?", "token_budget": 500})
    )
    return {"added": added, "found": found, "context": context}


@pytest.mark.parametrize("mode", ["auto", "legacy"], ids=["protocol-2026-07-28", "initialize-handshake"])
def test_tools_listed_then_add_search_context_over_http(live_url, live_key, live_tenant, mode):
    async def run() -> tuple[Any, dict[str, Any]]:
        async with http_client(live_url, live_key, mode) as client:
            tools = (await client.list_tools()).tools
            return tools, await remember_and_recall(client)

    tools, said = anyio.run(run)
    assert {tool.name for tool in tools} == TOOLS
    add = next(tool for tool in tools if tool.name == "add_memory")
    assert add.input_schema["required"] == ["message"] and "contact_id" in add.input_schema["properties"]
    assert add.description and all(tool.description for tool in tools)
    assert {"Has a dog named Bruno", "Works at Infosys"} <= {memory["content"] for memory in said["added"]["memories"]}
    assert "Has a dog named Bruno" in [hit["content"] for hit in said["found"]["results"]]
    assert recalls_the_dog(said["context"]["context_text"])
    stored = set(
        Memory.objects.filter(tenant=live_tenant, contact__external_id="arjun").values_list("content", flat=True)
    )
    assert {"Has a dog named Bruno", "Works at Infosys"} <= stored  # the REST path's write path, same rows


def test_the_tools_answer_what_the_rest_api_answers(live_url, live_key):
    async def run() -> dict[str, Any]:
        async with http_client(live_url, live_key) as client:
            await client.call_tool("add_memory", {"contact_id": "u", "message": "I live in Pune", "message_id": "m1"})
            again = structured(
                await client.call_tool(
                    "add_memory", {"contact_id": "u", "message": "I live in Pune", "message_id": "m1"}
                )
            )
            found = structured(
                await client.call_tool("search_memory", {"contact_id": "u", "query": "where?", "top_k": 5})
            )
            page = structured(await client.call_tool("list_memories", {"contact_id": "u", "limit": 1}))
            return {"again": again, "found": found, "page": page}

    said = anyio.run(run)
    rest = httpx.Client(base_url=f"{live_url}/api/v1", headers={"Authorization": f"Bearer {live_key}"})
    assert said["again"]["duplicate"] is True  # the message_id is idempotent, as POST /ingest
    rest_found = rest.post("/memories/search", json={"contact_id": "u", "query": "where?", "top_k": 5}).json()
    assert [hit["id"] for hit in said["found"]["results"]] == [hit["id"] for hit in rest_found["results"]]
    rest_page = rest.get("/memories", params={"contact_id": "u"}).json()
    assert said["page"]["count"] == rest_page["count"] >= 2 and said["page"]["next_offset"] == 1
    # The same memory body, field for field, except the access bookkeeping: the searches above queue their
    # accesses and the live beat folds them in every 30 s, which can land between the two reads.
    bookkeeping = {"access_count", "accessed_at"}
    mcp_body, rest_body = said["page"]["results"][0], rest_page["results"][0]
    assert bookkeeping <= mcp_body.keys() and bookkeeping <= rest_body.keys()
    assert {k: v for k, v in mcp_body.items() if k not in bookkeeping} == {
        k: v for k, v in rest_body.items() if k not in bookkeeping
    }


def test_list_update_delete_export_erase_over_http(live_url, live_key, live_tenant):
    async def run() -> dict[str, Any]:
        async with http_client(live_url, live_key) as client:
            await client.call_tool("add_memory", {"contact_id": "priya", "message": "My sister Anya lives in Delhi"})
            brain = structured(await client.call_tool("add_memory", {"message": "We sell sourdough in Mumbai"}))
            listed = structured(await client.call_tool("list_memories", {"contact_id": "priya", "types": ["fact"]}))
            memory_id = listed["results"][0]["id"]
            updated = structured(
                await client.call_tool(
                    "update_memory",
                    {"memory_id": memory_id, "content": "Her sister Anya lives in Delhi", "is_pinned": True},
                )
            )
            deleted = structured(await client.call_tool("delete_memory", {"memory_id": memory_id}))
            gone = error_text(await client.call_tool("update_memory", {"memory_id": memory_id, "importance": 0.5}))
            brain_search = structured(await client.call_tool("search_memory", {"query": "what do we sell?"}))
            exported = structured(await client.call_tool("export_contact", {"contact_id": "priya"}))
            erased = structured(await client.call_tool("erase_contact", {"contact_id": "priya"}))
            after = error_text(await client.call_tool("export_contact", {"contact_id": "priya"}))
            return locals()

    said = anyio.run(run)
    assert said["listed"]["results"] and all(row["memory_type"] == "fact" for row in said["listed"]["results"])
    assert (said["updated"]["content"], said["updated"]["is_pinned"]) == ("Her sister Anya lives in Delhi", True)
    assert said["deleted"] == {"id": said["memory_id"], "deleted": True}
    assert said["gone"] == "Memory not found."
    brain_contents = {memory["content"] for memory in said["brain"]["memories"]}
    assert brain_contents & {hit["content"] for hit in said["brain_search"]["results"]}  # no contact_id: the brain
    assert said["exported"]["contact"]["contact_id"] == "priya" and said["exported"]["messages"]
    assert said["erased"]["erased"] is True and "not found" in said["after"]
    assert not Contact.objects.filter(tenant=live_tenant, external_id="priya").exists()
    record = ErasureRecord.objects.get(tenant=live_tenant)  # the audit log, as DELETE /contacts/{id} writes it
    assert record.actor == f"api_key:{live_key.split('_')[1]}"


def test_search_and_context_are_asked_as_of_a_moment_as_the_rest_api_asks_them(live_url, live_key):
    """`as_of` reaches search (what "last week" counts from) and context (the stage as of then): the tools answer
    what the REST API answers as of the same moment, and not what they answer as of now; a moment without an offset
    is UTC, as the REST API reads it; a bad one is a tool error naming the field."""
    fair = {"contact_id": "mira", "message": "I went to the pottery fair with my aunt"}

    def a_long_friendship_that_ended_on(last_seen: datetime) -> None:  # what the stage is read from
        ContactState.objects.filter(contact__external_id="mira").update(
            relationship_stage="dormant", sessions_count=20, active_streak=1, last_seen_at=last_seen
        )

    asked = {"contact_id": "mira", "query": "what did I do last week?"}

    async def run() -> dict[str, Any]:
        async with http_client(live_url, live_key) as client:
            await client.call_tool("add_memory", fair | {"occurred_at": "2023-05-05T12:00:00Z"})
            then = structured(await client.call_tool("search_memory", asked | {"as_of": "2023-05-08T00:00:00Z"}))
            now = structured(await client.call_tool("search_memory", asked))
            await anyio.to_thread.run_sync(a_long_friendship_that_ended_on, datetime(2023, 5, 8, 20, tzinfo=UTC))
            context_then = structured(
                await client.call_tool("get_context", {"contact_id": "mira", "as_of": "2023-05-08T00:00:00"})
            )
            context_now = structured(await client.call_tool("get_context", {"contact_id": "mira"}))
            bad = error_text(await client.call_tool("get_context", {"contact_id": "mira", "as_of": "last spring"}))
            return locals()

    said = anyio.run(run)
    rest = httpx.Client(base_url=f"{live_url}/api/v1", headers={"Authorization": f"Bearer {live_key}"})
    rest_then = rest.post("/memories/search", json=asked | {"as_of": "2023-05-08T00:00:00Z", "explain": True}).json()
    assert [(hit["id"], hit["score"]) for hit in said["then"]["results"]] == [
        (hit["id"], hit["score"]) for hit in rest_then["results"]
    ]
    assert rest_then["time_windows"]  # "last week" as of 8 May 2023 is a window the fair is in
    assert said["then"]["results"][0]["score"] != said["now"]["results"][0]["score"]
    rest_context = rest.get("/context/mira", params={"as_of": "2023-05-08T00:00:00Z"}).json()
    assert said["context_then"]["state"] == rest_context["state"]

    def stage(context: dict[str, Any]) -> tuple[str, int]:
        return context["state"]["relationship_stage"], context["memory_budget"]

    assert (stage(said["context_then"]), stage(said["context_now"])) == (("established", 1200), ("dormant", 200))
    assert said["bad"].startswith("Invalid arguments: as_of:")


def test_another_tenants_key_sees_nothing(live_url, live_key, other_live_key):
    async def run() -> dict[str, Any]:
        async with http_client(live_url, live_key) as owner:
            added = structured(
                await owner.call_tool("add_memory", {"contact_id": "arjun", "message": "I have a cat named Luna"})
            )
        async with http_client(live_url, other_live_key) as stranger:
            return {
                "added": added,
                "context": error_text(await stranger.call_tool("get_context", {"contact_id": "arjun"})),
                "search": error_text(
                    await stranger.call_tool("search_memory", {"contact_id": "arjun", "query": "cat"})
                ),
                "brain": structured(await stranger.call_tool("search_memory", {"query": "Luna the cat"})),
                "update": error_text(
                    await stranger.call_tool("update_memory", {"memory_id": added["memories"][0]["id"], "content": "x"})
                ),
                "erase": error_text(await stranger.call_tool("erase_contact", {"contact_id": "arjun"})),
            }

    said = anyio.run(run)
    assert said["context"] == said["search"] == "Contact 'arjun' not found."
    assert said["brain"]["results"] == [] and said["update"] == "Memory not found."
    assert Memory.objects.filter(content="I have a cat named Luna").exists()  # nothing erased, nothing changed


def test_no_key_a_bad_key_and_a_revoked_key_are_refused_before_any_tool(live_url, live_tenant):
    revoked = ApiKeyFactory(tenant=live_tenant)
    ApiKey.objects.filter(pk=revoked.pk).update(revoked_at="2026-01-01T00:00:00Z")
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for key in [None, "eng_nothing_here", revoked.plaintext]:
        headers = {"Accept": "application/json, text/event-stream"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        answer = httpx.post(f"{live_url}/mcp", json=body, headers=headers)
        assert answer.status_code == 401 and answer.headers["WWW-Authenticate"] == "Bearer", (key, answer.text)

        async def connect(key: str | None = key) -> None:
            async with http_client(live_url, key) as client:
                await client.list_tools()

        with pytest.raises(Exception):  # noqa: B017 — the client fails to connect; which error is the SDK's
            anyio.run(connect)
    assert not Memory.objects.exists()


def test_bad_arguments_are_tool_errors(live_url, live_key, live_tenant):
    async def run() -> dict[str, str]:
        async with http_client(live_url, live_key) as client:
            return {
                "unknown contact": error_text(await client.call_tool("get_context", {"contact_id": "nobody"})),
                "budget": error_text(await client.call_tool("get_context", {"contact_id": "x", "token_budget": 99999})),
                "invalid id": error_text(await client.call_tool("delete_memory", {"memory_id": "not-a-uuid"})),
                "missing": error_text(await client.call_tool("add_memory", {"contact_id": "x"})),
                "nul": error_text(await client.call_tool("add_memory", {"contact_id": "x", "message": "a\x00b"})),
                "slash": error_text(await client.call_tool("add_memory", {"contact_id": "a/b", "message": "hi"})),
                "blank id": error_text(
                    await client.call_tool("add_memory", {"contact_id": "x", "message": "hi", "message_id": "   "})
                ),
                "unknown tool": error_text(await client.call_tool("forget_everything", {})),
                "extra": error_text(await client.call_tool("search_memory", {"query": "q", "limit": 3})),
            }

    said = anyio.run(run)
    assert said["unknown contact"] == "Contact 'nobody' not found."
    assert said["budget"].startswith("Invalid arguments: token_budget:")
    assert said["invalid id"] == "memory_id: 'not-a-uuid' is not a memory id (a UUID)."
    assert said["missing"].startswith("Invalid arguments: message: Field required")
    assert "message" in said["nul"] and "NUL" in said["nul"]
    assert said["slash"].startswith("Invalid arguments: contact_id:")
    assert said["blank id"].startswith("Invalid arguments: message_id:")  # as REST refuses a blank one
    assert said["unknown tool"].startswith("Unknown tool 'forget_everything'")
    assert said["extra"].startswith("Invalid arguments: limit:")
    assert not Memory.objects.filter(tenant=live_tenant).exists()


def test_a_read_only_key_cannot_write(live_url, live_tenant):
    reader = ApiKeyFactory(tenant=live_tenant, scopes=("read",)).plaintext

    async def run() -> str:
        async with http_client(live_url, reader) as client:
            return error_text(await client.call_tool("add_memory", {"contact_id": "x", "message": "I live in Pune"}))

    assert anyio.run(run) == "This API key lacks the 'write' scope that add_memory needs."
    assert not Memory.objects.exists()


def test_mcp_requests_count_against_the_keys_rate_limit(live_url, live_key, live_tenant):
    live_tenant.settings = {"rate_limit": {"requests": 2, "window_seconds": 60}}
    live_tenant.save(update_fields=["settings"])
    headers = {"Authorization": f"Bearer {live_key}", "Accept": "application/json, text/event-stream"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    # the window is fixed (a minute of the clock): five requests within a minute fall into at most two windows,
    # so one of them holds three and refuses its third, even when a loaded machine crosses the minute mid-test
    answers = [httpx.post(f"{live_url}/mcp", json=body, headers=headers) for _ in range(5)]
    codes = [answer.status_code for answer in answers]
    assert codes[:2] == [200, 200] and 429 in codes, codes
    refused = answers[codes.index(429)]
    assert 0 < int(refused.headers["Retry-After"]) <= 60


def test_get_and_delete_are_not_offered(live_url, live_key):
    headers = {"Authorization": f"Bearer {live_key}"}
    assert httpx.get(f"{live_url}/mcp", headers=headers).status_code == 405
    assert httpx.delete(f"{live_url}/mcp", headers=headers).status_code == 405


def test_stdio_serves_the_same_tools_for_its_key(live_tenant, live_key, other_live_key, test_database_url):
    async def run(key: str) -> dict[str, Any]:
        async with Client(stdio_parameters(key, test_database_url)) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            said = await remember_and_recall(client)
            return {"tools": tools, **said}

    said = anyio.run(run, live_key)
    assert said["tools"] == TOOLS
    assert "Has a dog named Bruno" in [hit["content"] for hit in said["found"]["results"]]
    assert recalls_the_dog(said["context"]["context_text"])
    assert Memory.objects.filter(tenant=live_tenant, content="Has a dog named Bruno").count() == 1

    async def stranger() -> str:
        async with Client(stdio_parameters(other_live_key, test_database_url)) as client:
            return error_text(await client.call_tool("search_memory", {"contact_id": "arjun", "query": "dog"}))

    assert anyio.run(stranger) == "Contact 'arjun' not found."


def test_stdio_refuses_a_bad_key_and_stops_serving_a_revoked_one(live_tenant, test_database_url):
    import subprocess

    parameters = stdio_parameters("eng_nothing_here", test_database_url)
    refused = subprocess.run(
        [sys.executable, *parameters.args], cwd=ROOT, env=parameters.env, capture_output=True, text=True, timeout=120
    )
    assert refused.returncode != 0 and "valid, unrevoked API key" in refused.stderr
    key = ApiKeyFactory(tenant=live_tenant)

    def revoke() -> None:
        from django.db import connection

        ApiKey.objects.filter(pk=key.pk).update(revoked_at="2026-01-01T00:00:00Z")
        connection.close()

    async def run() -> tuple[dict[str, Any], str]:
        async with Client(stdio_parameters(key.plaintext, test_database_url)) as client:
            before = structured(await client.call_tool("list_memories", {}))
            await anyio.to_thread.run_sync(revoke)  # the ORM is synchronous: another thread, as an admin would
            return before, error_text(await client.call_tool("list_memories", {}))

    before, after = anyio.run(run)
    assert before["count"] == 0 and after == "Invalid or revoked API key."


def test_delete_memory_scrubs_the_text_and_hard_takes_the_history(live_url, live_key, live_tenant):
    from apps.memories.models import MemoryRevision

    async def listed_fact(client: Client) -> str:
        await client.call_tool("add_memory", {"contact_id": "ravi", "message": "My cat Quillon is a tabby"})
        listed = structured(await client.call_tool("list_memories", {"contact_id": "ravi", "types": ["fact"]}))
        return str(listed["results"][0]["id"])

    async def soft() -> tuple[str, Any]:
        async with http_client(live_url, live_key) as client:
            memory_id = await listed_fact(client)
            return memory_id, structured(await client.call_tool("delete_memory", {"memory_id": memory_id}))

    memory_id, deleted = anyio.run(soft)
    assert deleted == {"id": memory_id, "deleted": True}
    memory = Memory.objects.get(pk=memory_id)
    assert memory.content == "" and memory.embedding is None
    assert not MemoryRevision.objects.filter(memory_id=memory_id, before__has_key="content").exists()
    assert not MemoryRevision.objects.filter(memory_id=memory_id, after__has_key="content").exists()
    assert MemoryRevision.objects.filter(memory_id=memory_id, action="deleted").exists()

    async def hard() -> Any:
        async with http_client(live_url, live_key) as client:
            return structured(await client.call_tool("delete_memory", {"memory_id": memory_id, "hard": True}))

    assert anyio.run(hard) == {"id": memory_id, "deleted": True}
    assert not Memory.objects.filter(pk=memory_id).exists()
    assert not MemoryRevision.objects.filter(memory_id=memory_id).exists()
