"""Throughput and latency under load, through HTTP against the stack as `make run` starts it.

N writers replay LoCoMo conversations through `POST /ingest/batch` (each writer its own conversations, each
a contact of one shared tenant) while M readers ask the dataset's questions with `GET /context` and
`POST /memories/search`, for a fixed time. Prints the ingest rate, the read latency while the writes run
(p50/p95/p99 per endpoint), errors, the worker's queue depth over time, and how long after the writes stop
the queue is empty. The embedding cache is emptied first (`--keep-cache` keeps it): the turns are the same
on every run, and cached embeddings would measure the cache, not the ingest.
"""

from __future__ import annotations

import itertools
import json
import random
import threading
import time
from argparse import ArgumentParser
from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError
from django.utils import timezone

from apps.conversations.models import Message
from apps.core.commands import DatabaseCommand
from apps.core.tenancy import tenant_scope
from apps.memories.benchmarks import locomo
from apps.memories.benchmarks.bound import Bound, embedder_bound, sample_texts
from apps.memories.benchmarks.end_to_end import bench_tenant
from apps.memories.benchmarks.stack import (
    EngramClient,
    HttpError,
    bench_tenant_delete,
    dump,
    embedding_cache_empty,
    queue_depth,
    running_stack,
    wait_drained,
)
from apps.memories.ingest.services import created_memory_ids
from apps.memories.models import Memory
from apps.tenants.models import Tenant
from config.embedded import VAR_DIR


def _items(sample: dict[str, Any], contact_id: str) -> list[dict[str, Any]]:
    """The dataset's turns as ingest bodies, under ids of their own (so nothing is a duplicate of a run before)."""
    return [
        {
            "contact_id": contact_id,
            "conversation_id": f"{contact_id}:session_{turn.session}",
            "message": turn.text,
            "role": "user",
            "message_id": f"{contact_id}:{turn.dia_id}",
            "speaker": turn.speaker,
            "occurred_at": turn.occurred_at.isoformat(),
        }
        for turn in locomo.turns(sample, stamping="spread")
    ]


def accepted_kept(tenant: Tenant, *, message_ids: list[str], memory_ids: list[str]) -> dict[str, int]:
    """How many of the messages answered 2xx are in the ledger, and of the memories those answers created
    are still rows (a merge or supersession keeps the row), counted once the worker's queue has drained."""
    with tenant_scope(tenant.pk):
        messages = Message.objects.filter(tenant=tenant, external_id__in=message_ids).count()
        memories = Memory.objects.filter(tenant=tenant, pk__in=memory_ids).count()
    return {
        "messages_accepted": len(set(message_ids)),
        "messages_kept": messages,
        "memories_created": len(set(memory_ids)),
        "memories_kept": memories,
    }


FRONT_PREFIX = "front-"  # the front's phases in Server-Timing (config/front.py), beside the view's
READ_PARTS = {"admission wait": "front-wait", "pool": "front-pool", "view": "total"}

PHASES = ("parse", "ledger", "state", "extraction", "embedding", "write", "sql", "redis", "enqueue", "other")


def _per_message(load: _Load) -> dict[str, float]:
    """Milliseconds per ingested message in each phase of the server's time, and outside it."""
    if not load.profiled_messages:
        return {}
    count = load.profiled_messages
    phases = {name: load.phase_ms.get(name, 0.0) for name in PHASES} | {
        name: value for name, value in load.phase_ms.items() if name not in PHASES and name != "total"
    }
    cells = {name: round(value / count, 2) for name, value in phases.items()}
    cells["server"] = round(load.phase_ms.get("total", 0.0) / count, 2)
    cells["outside"] = round(max(0.0, load.client_ms - load.phase_ms.get("total", 0.0)) / count, 2)
    cells["client"] = round(load.client_ms / count, 2)
    return cells


def _per_message_cpu(load: _Load) -> dict[str, float]:
    """Processor milliseconds per ingested message in each phase (the web worker's process, its threads
    included): beside `_per_message`, a phase's wall time well above its CPU time waited for a core."""
    if not load.profiled_messages:
        return {}
    return {name: round(value / load.profiled_messages, 2) for name, value in sorted(load.cpu_ms.items())}


class _Load:
    """What the threads share: the stop flag, the figures, and the conversations already started."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.ingested = 0
        self.batch_ms: list[float] = []
        self.read_ms: dict[str, list[float]] = defaultdict(list)
        self.errors: dict[str, int] = defaultdict(int)
        self.error_samples: list[str] = []
        self.started_contacts: dict[str, str] = {}  # contact id → the dataset's sample id
        self.phase_ms: dict[str, float] = defaultdict(float)  # the ingest answers' Server-Timing, summed
        self.cpu_ms: dict[str, float] = defaultdict(float)  # and the processor time it reports, summed
        self.profiled_messages = 0  # messages of the answers that carried one
        self.client_ms = 0.0  # those answers' time as the client measured it
        self.shed: dict[str, int] = defaultdict(int)  # 429/503 with Retry-After, per endpoint
        self.shed_wait_ms: dict[str, list[float]] = defaultdict(list)  # how long each refusal took to come
        self.answer_ms: dict[str, list[float]] = defaultdict(list)  # first attempt → served, refusals included
        # the served reads' processor time in the web worker, and their SQL's wall time (PostgreSQL's CPU is
        # another process's): what the reads take from the cores the writers share
        self.read_cpu_ms: dict[str, list[float]] = defaultdict(list)
        self.read_sql_ms: dict[str, list[float]] = defaultdict(list)
        # where a served read's time went, {endpoint: {part: [ms]}}: the front's wait for a read slot, the pool's
        # answer as the front timed it, the view inside it (the front's parts only when it adds them)
        self.read_parts_ms: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        # the view's phases summed over the served reads, {endpoint: {phase: ms}}: wall, and processor time
        self.read_phase_ms: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.read_phase_cpu_ms: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.accepted_ids: list[str] = []  # message ids of the batches answered 2xx
        self.created_ids: list[str] = []  # memory ids those answers say were created

    def refused(self, kind: str, exc: HttpError) -> float | None:
        """A refusal with Retry-After (the server shed the request): counted, and the seconds to wait before
        sending it again. None when it is an error instead (any other status, or no Retry-After)."""
        if exc.status not in (429, 503) or not exc.retry_after:
            return None
        try:
            seconds = float(exc.retry_after)
        except ValueError:
            return None
        with self.lock:
            self.shed[kind] += 1
            self.shed_wait_ms[kind].append(exc.milliseconds)
        return seconds

    def error(self, kind: str, exc: Exception) -> None:
        with self.lock:
            self.errors[kind] += 1
            if len(self.error_samples) < 5:
                self.error_samples.append(f"{kind}: {exc}"[:300])


class Command(DatabaseCommand):
    help = "Load test through HTTP: N writers (POST /ingest/batch) and M readers (GET /context, search)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--path", default="../shared/data/locomo10.json")
        parser.add_argument("--url", default="", help="the stack to load (default: start one as `make run` does)")
        parser.add_argument("--writers", type=int, default=1)
        parser.add_argument("--readers", type=int, default=1)
        parser.add_argument("--seconds", type=float, default=60.0, help="how long the writers write")
        parser.add_argument("--batch", type=int, default=100, help="turns per POST /ingest/batch")
        parser.add_argument(
            "--ingest-rate",
            type=float,
            default=0.0,
            help="messages/s all writers together aim at (0: as fast as they can)",
        )
        parser.add_argument("--keep-cache", action="store_true", help="keep the embedding cache (default: empty it)")
        parser.add_argument(
            "--warmup", type=int, default=0, help="conversations ingested before the timed run (data for the readers)"
        )
        parser.add_argument("--keep", action="store_true", help="keep the benchmark tenant afterwards")
        parser.add_argument("--json", dest="json_out", help="write the figures to this JSON file")
        parser.add_argument(
            "--no-bound", action="store_true", help="skip measuring the embedder alone (no ratio printed)"
        )
        parser.add_argument(
            "--overload",
            action="store_true",
            help="the overload shape (issue 29): 10 writers (batches of 20), 40 readers, 300 s, 2 conversations "
            "first; sets those options, the bound is not measured",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["overload"]:
            options |= {"writers": 10, "readers": 40, "seconds": 300.0, "batch": 20, "warmup": 2, "no_bound": True}
        path = Path(options["path"])
        if not path.exists():
            raise CommandError(f"{path} not found (the dataset is read from ../shared/data, never copied here)")
        if options["writers"] < 0 or options["readers"] < 0 or options["writers"] + options["readers"] == 0:
            raise CommandError("--writers and --readers must be ≥ 0, and not both 0")
        data = json.loads(path.read_text())
        if not options["keep_cache"]:
            self.stdout.write(f"embedding cache emptied ({embedding_cache_empty()} entries)")
        with ExitStack() as stack:
            base_url = options["url"] or stack.enter_context(
                running_stack(log_path=VAR_DIR / "bench" / "load.log", extra_env={"ENGRAM_SERVER_TIMING": "1"})
            )
            self.stdout.write(f"loading {base_url} (server: {'given' if options['url'] else 'started here'})")
            bounds = [] if options["no_bound"] else [self._bound(data, "before")]
            figures = self._run(base_url, data, options)
            if bounds:
                bounds.append(self._bound(data, "after"))
        figures |= self._ratio(figures, bounds)
        self._print(figures)
        if options["json_out"]:
            dump(options["json_out"], figures)

    def _bound(self, data: list[dict[str, Any]], when: str) -> Bound:
        """The configured embedder alone on a fixed sample of turns, with the stack idle (its queue drained)."""
        wait_drained()
        bound = embedder_bound(sample_texts(data))
        self.stdout.write(
            f"bound ({when} the load): {bound.embedder} alone embeds {bound.turns_per_second:.1f} turns/s "
            f"({bound.best.label}; {bound.texts} LoCoMo turns; {bound.best.cpu_ms_per_turn:.2f} ms of processor time "
            "per turn)"
        )
        return bound

    @staticmethod
    def _ratio(figures: dict[str, Any], bounds: list[Bound]) -> dict[str, Any]:
        if not bounds:
            return {"bound": None, "ratio": None}
        turns_per_second = sum(bound.turns_per_second for bound in bounds) / len(bounds)
        rate = figures["ingest_messages_per_second"] or 0.0
        return {
            "bound": {
                "turns_per_second": round(turns_per_second, 1),
                "runs": [bound.figures() for bound in bounds],
            },
            "ratio": round(rate / turns_per_second, 3) if turns_per_second else None,
        }

    def _run(self, base_url: str, data: list[dict[str, Any]], options: dict[str, Any]) -> dict[str, Any]:
        tenant, key = bench_tenant(label="load")
        run = timezone.now().strftime("%H%M%S")
        load = _Load()
        writers, readers = options["writers"], options["readers"]
        per_writer_rate = options["ingest_rate"] / writers if options["ingest_rate"] and writers else 0.0
        shares = [data[index::writers] for index in range(writers)] if writers else []
        questions = {str(sample["sample_id"]): [str(qa["question"]) for qa in sample["qa"]] for sample in data}
        depth_samples: list[tuple[float, int]] = []
        threads = [
            threading.Thread(
                target=self._writer,
                args=(base_url, key, share, run, options["batch"], per_writer_rate, load),
                daemon=True,
            )
            for share in shares
        ] + [
            threading.Thread(target=self._reader, args=(base_url, key, questions, seed, load), daemon=True)
            for seed in range(readers)
        ]
        if options["warmup"]:
            warm = EngramClient(base_url, key)
            for sample in data[: options["warmup"]]:
                contact_id = f"{sample['sample_id']}-warm{run}"
                items = _items(sample, contact_id)
                for first in range(0, len(items), 200):
                    warm.ingest_batch(items[first : first + 200])
                load.started_contacts[contact_id] = str(sample["sample_id"])
            warm.close()
        wait_drained()  # what an earlier run (or the warm-up) left queued would run during this one
        started = time.monotonic()
        for thread in threads:
            thread.start()
        try:
            while time.monotonic() - started < options["seconds"]:
                depth_samples.append((round(time.monotonic() - started, 1), queue_depth()))
                self.stdout.write(
                    f"\r{time.monotonic() - started:5.0f} s  ingested {load.ingested:6d}  "
                    f"reads {sum(len(v) for v in load.read_ms.values()):6d}  errors {sum(load.errors.values())}  "
                    f"queue {depth_samples[-1][1]:5d}",
                    ending="",
                )
                self.stdout.flush()
                time.sleep(1.0)
            load.stop.set()
            for thread in threads:
                thread.join(timeout=600)
            writing_seconds = time.monotonic() - started
            self.stdout.write("\nwrites stopped; waiting for the worker's queue to drain…")
            drain_seconds = wait_drained(
                poll=0.2,
                on_poll=lambda depth, busy: depth_samples.append((round(time.monotonic() - started, 1), depth)),
            )
            kept = accepted_kept(tenant, message_ids=load.accepted_ids, memory_ids=load.created_ids)
        finally:
            if not options["keep"]:
                bench_tenant_delete(tenant)
        return {
            "writers": writers,
            "readers": readers,
            "batch": options["batch"],
            "ingest_rate_target": options["ingest_rate"] or None,
            "seconds": round(writing_seconds, 1),
            "ingested": load.ingested,
            "ingest_messages_per_second": round(load.ingested / writing_seconds, 1) if writing_seconds else None,
            "batch_ms": locomo.percentiles(load.batch_ms),
            "per_message_ms": _per_message(load),
            "per_message_cpu_ms": _per_message_cpu(load),
            "reads_cpu": {
                endpoint: {
                    "cpu_ms_per_read": round(sum(values) / len(values), 2),
                    "sql_ms_per_read": round(sum(load.read_sql_ms[endpoint]) / len(values), 2),
                    "web_cores": round(sum(values) / 1000 / writing_seconds, 2) if writing_seconds else None,
                }
                for endpoint, values in load.read_cpu_ms.items()
                if values
            },
            "reads": {
                endpoint: locomo.percentiles(values) | {"n": len(values)} for endpoint, values in load.read_ms.items()
            },
            "reads_parts_ms": {
                endpoint: {part: locomo.percentiles(values) for part, values in parts.items()}
                for endpoint, parts in load.read_parts_ms.items()
            },
            "reads_phases_ms": {
                endpoint: {
                    name: [
                        round(milliseconds / len(load.read_cpu_ms[endpoint]), 2),
                        round(load.read_phase_cpu_ms[endpoint].get(name, 0.0) / len(load.read_cpu_ms[endpoint]), 2),
                    ]
                    for name, milliseconds in sorted(phases.items())
                }
                for endpoint, phases in load.read_phase_ms.items()
                if load.read_cpu_ms[endpoint]
            },
            "answered_ms": {
                endpoint: locomo.percentiles(values) | {"n": len(values)} for endpoint, values in load.answer_ms.items()
            },
            "shed": dict(load.shed),
            "shed_answer_ms": {endpoint: locomo.percentiles(values) for endpoint, values in load.shed_wait_ms.items()},
            "accepted": kept,
            "errors": dict(load.errors),
            "error_samples": load.error_samples,
            "queue_depth": depth_samples,
            "queue_max": max((depth for _, depth in depth_samples), default=0),
            "drain_seconds": round(drain_seconds, 1),
        }

    @staticmethod
    def _writer(
        base_url: str, key: str, share: list[dict[str, Any]], run: str, batch: int, rate: float, load: _Load
    ) -> None:
        client = EngramClient(base_url, key)
        started, sent = time.monotonic(), 0
        try:
            for sample in itertools.cycle(share):
                sample_id = str(sample["sample_id"])
                contact_id = f"{sample_id}-{run}"
                items = _items(sample, contact_id)
                run = f"{run}x"  # a second pass over the same conversation is a new contact
                for first in range(0, len(items), batch):
                    if load.stop.is_set():
                        return
                    chunk = items[first : first + batch]
                    answer = None
                    while answer is None and not load.stop.is_set():
                        try:
                            answer = client.ingest_batch(chunk, attempts=1)  # refusals handled here
                        except HttpError as exc:
                            wait = load.refused("ingest", exc)
                            if wait is None:
                                load.error("ingest", exc)
                                break
                            load.stop.wait(wait)  # then the same batch again (its message ids make it safe)
                        except OSError as exc:
                            load.error("ingest", exc)
                            break
                    if answer is None:
                        continue
                    with load.lock:
                        load.accepted_ids.extend(item["message_id"] for item in chunk)
                        load.created_ids.extend(created_memory_ids(row["memories"] for row in answer.body["results"]))
                        load.ingested += len(chunk)
                        load.batch_ms.append(answer.milliseconds)
                        if answer.server_timing:
                            load.profiled_messages += len(chunk)
                            load.client_ms += answer.milliseconds
                            for name, milliseconds in answer.server_timing.items():
                                if not name.startswith(FRONT_PREFIX):  # the front's, not the view's
                                    load.phase_ms[name] += milliseconds
                            for name, milliseconds in answer.server_cpu.items():
                                load.cpu_ms[name] += milliseconds
                        load.started_contacts[contact_id] = sample_id
                    sent += len(chunk)
                    if rate:
                        ahead = sent / rate - (time.monotonic() - started)
                        if ahead > 0:
                            load.stop.wait(ahead)
        finally:
            client.close()

    @staticmethod
    def _reader(base_url: str, key: str, questions: dict[str, list[str]], seed: int, load: _Load) -> None:
        client = EngramClient(base_url, key)
        rng = random.Random(seed)
        # each sample's questions in a shuffled cycle: a question comes back only after all the others
        # (a repeated query's embedding is cached, which would flatter the read latency)
        queues = {sample_id: rng.sample(items, len(items)) for sample_id, items in questions.items()}
        cursors = dict.fromkeys(questions, 0)
        try:
            while not load.stop.is_set():
                with load.lock:
                    contacts = list(load.started_contacts.items())
                if not contacts:
                    load.stop.wait(0.2)
                    continue
                contact_id, sample_id = rng.choice(contacts)
                question = queues[sample_id][cursors[sample_id] % len(queues[sample_id])]
                cursors[sample_id] += 1
                for endpoint in ("context", "search"):
                    first_sent = time.monotonic()
                    while not load.stop.is_set():
                        try:
                            if endpoint == "context":
                                answer = client.context(contact_id=contact_id, query=question)
                            else:
                                answer = client.search(contact_id=contact_id, query=question, top_k=10)
                        except HttpError as exc:
                            wait = load.refused(endpoint, exc)
                            if wait is None:
                                load.error(endpoint, exc)
                                break
                            load.stop.wait(wait)  # the same question again after Retry-After
                            continue
                        except OSError as exc:
                            load.error(endpoint, exc)
                            break
                        with load.lock:
                            load.read_ms[endpoint].append(answer.milliseconds)
                            if answer.server_cpu:
                                load.read_cpu_ms[endpoint].append(answer.server_cpu.get("total", 0.0))
                                load.read_sql_ms[endpoint].append(answer.server_timing.get("sql", 0.0))
                            for name, milliseconds in answer.server_timing.items():
                                load.read_phase_ms[endpoint][name] += milliseconds
                            for name, milliseconds in answer.server_cpu.items():
                                load.read_phase_cpu_ms[endpoint][name] += milliseconds
                            for part, name in READ_PARTS.items():
                                if name in answer.server_timing:
                                    load.read_parts_ms[endpoint][part].append(answer.server_timing[name])
                            load.answer_ms[endpoint].append((time.monotonic() - first_sent) * 1000)
                        break
        finally:
            client.close()

    def _print(self, figures: dict[str, Any]) -> None:
        self.stdout.write(
            f"\n{figures['writers']} writers (batches of {figures['batch']}), {figures['readers']} readers, "
            f"{figures['seconds']} s: ingested {figures['ingested']} messages = "
            f"{figures['ingest_messages_per_second']} msg/s (batch p50 {figures['batch_ms']['p50']} ms, "
            f"p95 {figures['batch_ms']['p95']} ms)"
        )
        if figures.get("ratio") is not None:
            bound = figures["bound"]
            best = " / ".join(f"{run['turns_per_second']} ({run['best']})" for run in bound["runs"])
            self.stdout.write(
                f"ingest {figures['ingest_messages_per_second']} msg/s   bound {bound['turns_per_second']} turns/s "
                f"(before / after: {best})   ratio {figures['ratio']}"
            )
        profile = figures["per_message_ms"]
        if profile:
            self.stdout.write(
                "per ingested message (ms, server's Server-Timing; 'outside' = the client's time not in the view: "
                "HTTP, auth, rendering, waiting for a worker): "
                + ", ".join(f"{name} {value}" for name, value in profile.items())
            )
        if figures.get("per_message_cpu_ms"):
            self.stdout.write(
                "  of which processor time (ms per message, the web worker's process): "
                + ", ".join(f"{name} {value}" for name, value in figures["per_message_cpu_ms"].items())
            )
        for endpoint, cells in figures.get("reads_cpu", {}).items():
            self.stdout.write(
                f"  {endpoint:<8} web worker's processor time {cells['cpu_ms_per_read']} ms per read (SQL wall "
                f"{cells['sql_ms_per_read']} ms, PostgreSQL's CPU not in it): {cells['web_cores']} of a core"
            )
        for endpoint, cells in figures["reads"].items():
            self.stdout.write(
                f"  {endpoint:<8} n {cells['n']:6d}  "
                f"p50 {cells['p50']} ms  p95 {cells['p95']} ms  p99 {cells['p99']} ms"
            )
        for endpoint, parts in figures.get("reads_parts_ms", {}).items():
            self.stdout.write(
                f"  {endpoint:<8} served, where the time went (p50 / p95 ms): "
                + ", ".join(f"{part} {cells['p50']} / {cells['p95']}" for part, cells in parts.items())
            )
        for endpoint, phases in figures.get("reads_phases_ms", {}).items():
            self.stdout.write(
                f"  {endpoint:<8} per served read (ms, wall / the web worker's processor time): "
                + ", ".join(f"{name} {wall} / {cpu}" for name, (wall, cpu) in phases.items())
            )
        for endpoint, cells in figures["answered_ms"].items():
            if figures["shed"].get(endpoint):
                self.stdout.write(
                    f"  {endpoint:<8} refused {figures['shed'][endpoint]} times (503/429 with Retry-After, answered "
                    f"in p95 {figures['shed_answer_ms'][endpoint]['p95']} ms); first attempt → served, waits "
                    f"included: p50 {cells['p50']} ms  p95 {cells['p95']} ms"
                )
        if figures["shed"].get("ingest"):
            self.stdout.write(
                f"  ingest   refused {figures['shed']['ingest']} times (503/429 with Retry-After, answered in p95 "
                f"{figures['shed_answer_ms']['ingest']['p95']} ms), each batch sent again after Retry-After"
            )
        kept = figures["accepted"]
        self.stdout.write(
            f"accepted and kept: {kept['messages_kept']} of {kept['messages_accepted']} messages answered 2xx are in "
            f"the ledger, {kept['memories_kept']} of {kept['memories_created']} memories they created are stored"
        )
        self.stdout.write(f"errors: {figures['errors'] or 0} {figures['error_samples'] or ''}")
        depths = figures["queue_depth"]
        sampled = depths[:: max(1, len(depths) // 12)]
        self.stdout.write("queue depth (s: depth): " + ", ".join(f"{at:.0f}: {depth}" for at, depth in sampled))
        self.stdout.write(
            f"queue max {figures['queue_max']}; empty {figures['drain_seconds']} s after the writes stopped"
        )
