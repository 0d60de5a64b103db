"""A development set through HTTP, as a client meets Engram: every conversation a contact of one shared
tenant, turns sent with `POST /ingest/batch` as they arrive, every question asked with `POST /memories/search`
twice — *fresh*, the moment the last batch has been answered, and *settled*, after the deferred consolidation
of every conversation has run on the worker and the worker's queue has drained (docs/benchmarks.md). With
`contexts`, every question is then also sent as the `query` of GET /context — what a chatbot's model is handed
before its reply — and scored by the evidence among the context's memories (`ContextRound`).

A question is asked as of its conversation's last turn (`as_of`): a replayed conversation is asked about at
the time it ended, as a live one would be, so "last week" means the week before that, not before today.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Q
from django.utils import timezone

from apps.conversations.models import Conversation
from apps.memories import dispatch
from apps.memories.benchmarks import datasets
from apps.memories.benchmarks.stack import EngramClient, bench_tenant_delete, wait_drained
from apps.memories.ingest.services import IngestItem
from apps.memories.models import Memory
from apps.memories.store.vector_indexes import vector_indexes_sync
from apps.tenants.models import Tenant
from apps.tenants.services import api_key_create, tenant_create

SETTLE_JOBS = ("deferred", "periodic")


@dataclass
class Phase:
    """One moment's answers: per-question scores and the search latency the client saw."""

    scores: datasets.Scores = field(default_factory=datasets.Scores)
    latencies_ms: list[float] = field(default_factory=list)
    details: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ContextRound:
    """GET /context for every question: the evidence recall of the whole context (its memories' source turns,
    however many lines the stage's budget holds; R or any, as the set measures), with the lines, tokens and
    stage of each answer."""

    token_budget: int | None
    scores: list[tuple[datasets.Question, float]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    stages: dict[str, int] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)

    @property
    def label(self) -> str:
        return "stage as of the last turn" if self.token_budget is None else f"token_budget {self.token_budget}"

    def recall(self, *, categories: set[str] | None = None, conversations: set[str] | None = None) -> float | None:
        values = [
            value
            for question, value in self.scores
            if (categories is None or question.category in categories)
            and (conversations is None or question.conversation in conversations)
        ]
        return round(sum(values) / len(values), 4) if values else None

    def figures(self, dataset: datasets.Dataset) -> dict[str, Any]:
        groups: dict[str, set[str] | None] = {"all": None, **{name: set(ids) for name, ids in dataset.splits.items()}}
        return {
            "token_budget": self.token_budget,
            "recall": {
                group: {
                    **{
                        category: self.recall(categories={category}, conversations=ids)
                        for category in dataset.categories
                    },
                    "overall": self.recall(conversations=ids),
                }
                for group, ids in groups.items()
            },
            "lines_mean": round(sum(self.lines) / len(self.lines), 2) if self.lines else None,
            "tokens_mean": round(sum(self.tokens) / len(self.tokens), 1) if self.tokens else None,
            "stages": dict(self.stages),
            "context_ms": datasets.percentiles(self.latencies_ms),
        }


@dataclass
class Run:
    dataset: datasets.Dataset
    stamping: str
    conversation_ids: str = "session"
    turns: int = 0
    ingest_seconds: float = 0.0
    batch_ms: list[float] = field(default_factory=list)
    ingest_retries: int = 0
    settle_seconds: float = 0.0
    phases: dict[str, Phase] = field(default_factory=dict)
    contexts: list[ContextRound] = field(default_factory=list)

    def figures(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset.name,
            "stamping": self.stamping,
            "conversation_ids": self.conversation_ids,
            "ingest": {
                "turns": self.turns,
                "seconds": round(self.ingest_seconds, 1),
                "turns_per_second": round(self.turns / self.ingest_seconds, 1) if self.ingest_seconds else None,
                "batch_ms": datasets.percentiles(self.batch_ms),
                "retries": self.ingest_retries,
            },
            "settle_seconds": round(self.settle_seconds, 1),
            "phases": {
                name: {
                    "recall": phase.scores.figures(self.dataset),
                    "search_ms": datasets.percentiles(phase.latencies_ms),
                }
                for name, phase in self.phases.items()
            },
            "contexts": [round_.figures(self.dataset) for round_ in self.contexts],
        }


BATCH_CHARS = 60_000


def batches(
    items: list[dict[str, Any]], *, max_items: int, max_chars: int = BATCH_CHARS
) -> Iterator[list[dict[str, Any]]]:
    """Consecutive batches of at most `max_items` messages and about `max_chars` characters: 200 LoCoMo turns are
    ~25k characters, 200 of BEAM's long chunks ~800k, which one sync web worker embeds past its timeout on a
    loaded machine. A client sizes batches by work, not by count; so does the benchmark."""
    chunk: list[dict[str, Any]] = []
    size = 0
    for item in items:
        length = len(item["message"])
        if chunk and (len(chunk) == max_items or size + length > max_chars):
            yield chunk
            chunk, size = [], 0
        chunk.append(item)
        size += length
    if chunk:
        yield chunk


def message_id(conversation_id: str, turn_id: str) -> str:
    return f"{conversation_id}:{turn_id}"


CONVERSATION_IDS = ("session", "chat")


def ingest_bodies(conversation: datasets.Conversation, *, conversation_ids: str = "session") -> list[dict[str, Any]]:
    """The conversation as a chat client sends it: one contact, the dataset's turn ids as message ids
    (prefixed: ids are unique per tenant), and `conversation_ids` "session" — a conversation per session, as
    the sets delimit them — or "chat": one conversation id for the whole chat, as a client that keeps one
    thread per end-user sends it (the sessions are then only in the turns' times)."""
    if conversation_ids not in CONVERSATION_IDS:
        raise ValueError(f"unknown conversation_ids {conversation_ids!r}")
    return [
        {
            "contact_id": conversation.id,
            "conversation_id": (
                f"{conversation.id}:session_{turn.session}" if conversation_ids == "session" else conversation.id
            ),
            "message": turn.text,
            "role": turn.role,
            "message_id": message_id(conversation.id, turn.id),
            "speaker": turn.speaker,
            "occurred_at": turn.occurred_at.isoformat(),
            "display_name": conversation.display_name,
        }
        for turn in conversation.turns
    ]


def ingest_items(conversation: datasets.Conversation) -> list[IngestItem]:
    """The conversation as the in-process benchmarks ingest it (`ingest_messages`, one tenant per conversation,
    so session ids need no prefix)."""
    return [
        IngestItem(
            contact_id=conversation.id,
            conversation_id=f"session_{turn.session}",
            message=turn.text,
            role=turn.role,
            message_id=message_id(conversation.id, turn.id),
            speaker=turn.speaker,
            occurred_at=turn.occurred_at,
            display_name=conversation.display_name,
        )
        for turn in conversation.turns
    ]


SLUG_LENGTH, NAME_LENGTH = 100, 200  # Tenant.slug's, Tenant.name's


def run_label(*, dataset: str, stamping: str, conversation_ids: str) -> str:
    """What a kept tenant's name says of how its run sent the set: the dataset (with its sending mode, e.g.
    "locomo-export-bursts"), the stamping and, when not one per session, the conversation ids."""
    label = f"{dataset.lower()}-{stamping}"
    return label if conversation_ids == "session" else f"{label}-ids-per-{conversation_ids}"


def bench_tenant(*, label: str) -> tuple[Tenant, str]:
    """A new tenant for one run, named by its label and the moment it starts (to the microsecond, which a long
    label once cut off the slug: two runs of one mode in the same hour then collided)."""
    run = timezone.now().strftime("%Y%m%d%H%M%S%f")
    slug = f"bench-http-{label}"[: SLUG_LENGTH - len(run) - 1] + f"-{run}"
    name = f"bench http {label}"[: NAME_LENGTH - len(run) - 1] + f" {run}"
    tenant = tenant_create(name=name, slug=slug)
    return tenant, api_key_create(tenant=tenant, name="bench").plaintext


def ask_all(
    client: EngramClient, dataset: datasets.Dataset, *, phase: Phase, tick: Callable[[], None], as_of: bool = True
) -> None:
    last_at = {conversation.id: conversation.last_at for conversation in dataset.conversations}
    for question in dataset.questions:
        prefix = f"{question.conversation}:"
        answer = client.search(
            contact_id=question.conversation,
            query=question.text,
            top_k=50,
            as_of=last_at[question.conversation].isoformat() if as_of else None,
        )
        phase.latencies_ms.append(answer.milliseconds)
        ranked = datasets.ranked_turns(
            [source.removeprefix(prefix) for source in row["sources"]] for row in answer.body["results"]
        )
        phase.scores.add(question, ranked)
        phase.details.append(datasets.detail(question, ranked))
        tick()


def ask_contexts(
    client: EngramClient, dataset: datasets.Dataset, *, token_budget: int | None, tick: Callable[[], None]
) -> ContextRound:
    """Every question as the `query` of GET /context (`explain=true` for the memories' sources), as a chatbot
    asks before it replies, as of its conversation's last turn (`as_of`, as the searches are asked: a replayed
    contact is in the stage it was in then, not "dormant" for having ended years ago): the stage's budget and
    density as the stack computes them, or a `token_budget` (which opens every type). Recall is over the whole
    context: every line is handed to the model."""
    round_ = ContextRound(token_budget=token_budget)
    stages: dict[str, int] = {}
    last_at = {conversation.id: conversation.last_at for conversation in dataset.conversations}
    for question in dataset.questions:
        prefix = f"{question.conversation}:"
        answer = client.context(
            contact_id=question.conversation,
            query=question.text,
            token_budget=token_budget,
            explain=True,
            as_of=last_at[question.conversation].isoformat(),
        )
        round_.latencies_ms.append(answer.milliseconds)
        memories = answer.body["memories"]
        turns = datasets.ranked_turns([source.removeprefix(prefix) for source in row["sources"]] for row in memories)
        fraction = datasets.recall_at(turns, question.evidence, len(turns))
        # the set's own metric: LoCoMo's R (the share of the evidence), BEAM's any (some evidence turn)
        round_.scores.append((question, fraction if dataset.metric == "R" else float(fraction > 0)))
        round_.lines.append(len(memories))
        round_.tokens.append(int(answer.body["tokens_used"]))
        stage = str(answer.body["state"].get("relationship_stage") or "none")
        stages[stage] = stages.get(stage, 0) + 1
        tick()
    round_.stages = stages
    return round_


# the 6-hourly job summarises half of a contact's sessions past the newest ten at each run (lifecycle/compression.py):
# a LoCoMo contact of 19-32 sessions reaches its steady state after up to five runs, as a day of production does
MAX_PERIODIC_ROUNDS = 8


def settle(*, tenant: Tenant, jobs: tuple[str, ...], on_poll: Callable[[int, int], None] | None = None) -> float:
    """Run now, on the worker, what the background would run later: the deferred consolidation of every
    conversation (normally 5 minutes after its last turn) and, with `periodic`, the 6-hourly job, again until a
    run changes nothing more (no memory written or compressed; MAX_PERIODIC_ROUNDS at most), then, in this
    process, the hourly sync of the tenants' and contacts' own vector indexes (store/vector_indexes.py); then
    wait until the worker's queue has drained. Returns the seconds it took. Until session 38 the job ran once:
    the settled store was one run from its steady state, whose session summaries ranked differently."""
    started = time.monotonic()
    wait_drained(on_poll=on_poll)  # what the ingest queued (context embeddings, …) first
    if "deferred" in jobs:
        for conversation_id in Conversation.objects.filter(tenant=tenant).values_list("pk", flat=True):
            dispatch.conversation_consolidation_queue(conversation_id=conversation_id)
        wait_drained(on_poll=on_poll)
    if "periodic" in jobs:
        state = _consolidation_state(tenant)
        for _ in range(MAX_PERIODIC_ROUNDS):
            dispatch.tenant_consolidation_queue(tenant_id=tenant.pk)
            wait_drained(on_poll=on_poll)
            state, before = _consolidation_state(tenant), state
            if state == before:
                break
        # and the hourly job of the tenants' and contacts' own vector indexes, every build it would get to in a
        # few hours (one per run): an owner past its threshold beside others searches a graph of its own rows
        vector_indexes_sync()
    return time.monotonic() - started


def _consolidation_state(tenant: Tenant) -> tuple[int, int]:
    """How many memories the tenant holds and how many are compressed: a periodic run that changes neither
    has nothing left to do."""
    counts = Memory.objects.filter(tenant=tenant).aggregate(
        memories=Count("id"), compressed=Count("id", filter=Q(is_compressed=True))
    )
    return counts["memories"], counts["compressed"]


def run_http(
    *,
    base_url: str,
    dataset: datasets.Dataset,
    stamping: str,
    batch: int,
    settle_jobs: tuple[str, ...],
    keep: bool,
    conversation_ids: str = "session",
    progress: Callable[[str, int], Callable[[], None]],
    on_poll: Callable[[int, int], None] | None = None,
    reuse: Tenant | None = None,
    contexts: tuple[int | None, ...] = (),
) -> Run:
    """Ingest every conversation into one new tenant, ask every question fresh and settled; delete the
    tenant afterwards unless `keep`. With `reuse` (a tenant a kept run filled), only ask, once ("reused").
    `contexts`: then ask every question as GET /context's query once per token budget given (None: the
    stage's own)."""
    label = run_label(dataset=dataset.name, stamping=stamping, conversation_ids=conversation_ids)
    if reuse is not None:
        tenant, key = reuse, api_key_create(tenant=reuse, name="bench reuse").plaintext
    else:
        tenant, key = bench_tenant(label=label)
    client = EngramClient(base_url, key)
    run = Run(dataset=dataset, stamping=stamping, conversation_ids=conversation_ids)
    try:
        if reuse is not None:
            run.phases["reused"] = Phase()
            ask_all(client, dataset, phase=run.phases["reused"], tick=progress("questions", len(dataset.questions)))
            _ask_contexts(client, dataset, run, contexts, progress)
            return run
        bodies = [
            ingest_bodies(conversation, conversation_ids=conversation_ids) for conversation in dataset.conversations
        ]
        run.turns = sum(len(items) for items in bodies)
        tick = progress(f"{dataset.name} ingest ({stamping} stamps)", run.turns)
        started = time.perf_counter()
        for items in bodies:
            for chunk in batches(items, max_items=batch):
                answer = client.ingest_batch(chunk)
                run.batch_ms.append(answer.milliseconds)
                for _ in chunk:
                    tick()
        run.ingest_seconds = time.perf_counter() - started
        run.ingest_retries = client.retries
        questions = len(dataset.questions)
        run.phases["fresh"] = Phase()
        ask_all(
            client, dataset, phase=run.phases["fresh"], tick=progress(f"{dataset.name} questions, fresh", questions)
        )
        run.settle_seconds = settle(tenant=tenant, jobs=settle_jobs, on_poll=on_poll)
        run.phases["settled"] = Phase()
        ask_all(
            client, dataset, phase=run.phases["settled"], tick=progress(f"{dataset.name} questions, settled", questions)
        )
        _ask_contexts(client, dataset, run, contexts, progress)
    finally:
        client.close()
        if not keep and reuse is None:
            bench_tenant_delete(tenant)
    return run


def _ask_contexts(
    client: EngramClient,
    dataset: datasets.Dataset,
    run: Run,
    budgets: tuple[int | None, ...],
    progress: Callable[[str, int], Callable[[], None]],
) -> None:
    for budget in budgets:
        label = f"{dataset.name} GET /context, " + ("stage's budget" if budget is None else f"token_budget {budget}")
        run.contexts.append(
            ask_contexts(client, dataset, token_budget=budget, tick=progress(label, len(dataset.questions)))
        )
