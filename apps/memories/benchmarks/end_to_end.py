"""LoCoMo through HTTP, as a client meets Engram: every conversation a contact of one shared tenant, turns
sent with `POST /ingest/batch` as they arrive, every question asked with `POST /memories/search` twice —
*fresh*, the moment the last batch has been answered, and *settled*, after the deferred consolidation of
every conversation has run on the worker and the worker's queue has drained (docs/benchmarks.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from apps.conversations.models import Conversation
from apps.memories import dispatch
from apps.memories.benchmarks import locomo
from apps.memories.benchmarks.stack import EngramClient, bench_tenant_delete, wait_drained
from apps.tenants.models import Tenant
from apps.tenants.services import api_key_create, tenant_create

SETTLE_JOBS = ("deferred", "periodic")


@dataclass
class Phase:
    """One moment's answers: recall per category and the search latency the client saw."""

    recall: locomo.Recall = field(default_factory=locomo.Recall)
    latencies_ms: list[float] = field(default_factory=list)
    details: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Run:
    stamping: str
    turns: int = 0
    ingest_seconds: float = 0.0
    batch_ms: list[float] = field(default_factory=list)
    settle_seconds: float = 0.0
    phases: dict[str, Phase] = field(default_factory=dict)

    def figures(self) -> dict[str, Any]:
        return {
            "stamping": self.stamping,
            "ingest": {
                "turns": self.turns,
                "seconds": round(self.ingest_seconds, 1),
                "turns_per_second": round(self.turns / self.ingest_seconds, 1) if self.ingest_seconds else None,
                "batch_ms": locomo.percentiles(self.batch_ms),
            },
            "settle_seconds": round(self.settle_seconds, 1),
            "phases": {
                name: {"recall": phase.recall.figures(), "search_ms": locomo.percentiles(phase.latencies_ms)}
                for name, phase in self.phases.items()
            },
        }


def message_id(sample_id: str, dia_id: str) -> str:
    return f"{sample_id}:{dia_id}"


def ingest_bodies(sample: dict[str, Any], *, stamping: str) -> list[dict[str, Any]]:
    """The conversation as a chat client sends it: one contact, a conversation per session, the dataset's
    turn ids as message ids (prefixed: ids are unique per tenant)."""
    sample_id = str(sample["sample_id"])
    display_name = locomo.speakers(sample)
    return [
        {
            "contact_id": sample_id,
            "conversation_id": f"{sample_id}:session_{turn.session}",
            "message": turn.text,
            "role": "user",
            "message_id": message_id(sample_id, turn.dia_id),
            "speaker": turn.speaker,
            "occurred_at": turn.occurred_at.isoformat(),
            "display_name": display_name,
        }
        for turn in locomo.turns(sample, stamping=stamping)
    ]


def bench_tenant(*, label: str) -> tuple[Tenant, str]:
    run = timezone.now().strftime("%Y%m%d%H%M%S%f")
    tenant = tenant_create(name=f"bench locomo http {label} {run}", slug=f"bench-http-{label}-{run}")
    return tenant, api_key_create(tenant=tenant, name="bench").plaintext


def ask_all(client: EngramClient, data: list[dict[str, Any]], *, phase: Phase, tick: Callable[[], None]) -> None:
    for sample in data:
        sample_id = str(sample["sample_id"])
        prefix = f"{sample_id}:"
        for qa in sample["qa"]:
            evidence = locomo.evidence_ids(qa.get("evidence", []))
            answer = client.search(contact_id=sample_id, query=str(qa["question"]), top_k=50)
            phase.latencies_ms.append(answer.milliseconds)
            ranked = locomo.ranked_turns(
                [source.removeprefix(prefix) for source in row["sources"]] for row in answer.body["results"]
            )
            phase.recall.add(category=int(qa["category"]), ranked=ranked, evidence=evidence)
            phase.details.append(
                {
                    "sample": sample_id,
                    "question": qa["question"],
                    "category": int(qa["category"]),
                    "evidence": evidence,
                    "ranked": ranked[:25],
                }
            )
            tick()


def settle(*, tenant: Tenant, jobs: tuple[str, ...], on_poll: Callable[[int, int], None] | None = None) -> float:
    """Run now, on the worker, what the background would run later: the deferred consolidation of every
    conversation (normally 5 minutes after its last turn) and, with `periodic`, the 6-hourly job; then
    wait until the worker's queue has drained. Returns the seconds it took."""
    started = time.monotonic()
    wait_drained(on_poll=on_poll)  # what the ingest queued (context embeddings, …) first
    if "deferred" in jobs:
        for conversation_id in Conversation.objects.filter(tenant=tenant).values_list("pk", flat=True):
            dispatch.conversation_consolidation_queue(conversation_id=conversation_id)
        wait_drained(on_poll=on_poll)
    if "periodic" in jobs:
        dispatch.tenant_consolidation_queue(tenant_id=tenant.pk)
        wait_drained(on_poll=on_poll)
    return time.monotonic() - started


def run_locomo_http(
    *,
    base_url: str,
    data: list[dict[str, Any]],
    stamping: str,
    batch: int,
    settle_jobs: tuple[str, ...],
    keep: bool,
    progress: Callable[[str, int], Callable[[], None]],
    on_poll: Callable[[int, int], None] | None = None,
) -> Run:
    """Ingest every conversation into one new tenant, ask every question fresh and settled; delete the
    tenant afterwards unless `keep`."""
    tenant, key = bench_tenant(label=stamping)
    client = EngramClient(base_url, key)
    run = Run(stamping=stamping)
    try:
        bodies = [ingest_bodies(sample, stamping=stamping) for sample in data]
        run.turns = sum(len(items) for items in bodies)
        tick = progress(f"ingest ({stamping} stamps)", run.turns)
        started = time.perf_counter()
        for items in bodies:
            for first in range(0, len(items), batch):
                chunk = items[first : first + batch]
                answer = client.ingest_batch(chunk)
                run.batch_ms.append(answer.milliseconds)
                for _ in chunk:
                    tick()
        run.ingest_seconds = time.perf_counter() - started
        questions = sum(len(sample["qa"]) for sample in data)
        run.phases["fresh"] = Phase()
        ask_all(client, data, phase=run.phases["fresh"], tick=progress("questions, fresh", questions))
        run.settle_seconds = settle(tenant=tenant, jobs=settle_jobs, on_poll=on_poll)
        run.phases["settled"] = Phase()
        ask_all(client, data, phase=run.phases["settled"], tick=progress("questions, settled", questions))
    finally:
        client.close()
        if not keep:
            bench_tenant_delete(tenant)
    return run
