"""Retrieval quality on LoCoMo, through the real ingest and search paths.

Each conversation is ingested as one contact (its own tenant, so message ids can be the dataset's dia_ids),
with real session dates as occurred_at and speaker names kept (after each ingest batch, the context
embeddings a worker would compute are computed in-process); every question is asked through
memory_search; returned memories map back to turns through their provenance (source message ids).
R@k = share of a question's evidence turns among the first k distinct turns retrieved (LoCoMo's definition).
"""

from __future__ import annotations

import json
import re
import statistics
import time
from argparse import ArgumentParser
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from tqdm import tqdm

from apps.contacts.models import Contact
from apps.memories.benchmarks import as_in_production
from apps.memories.embeddings import get_embedder
from apps.memories.retrieval import memory_search
from apps.memories.services.ingest import IngestItem, created_memory_ids, ingest_messages
from apps.memories.services.writing import memories_context_embed
from apps.tenants.models import Tenant
from apps.tenants.services import tenant_create

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
KS = (5, 10, 25)
BATCH = 500


def parse_session_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' → aware datetime (UTC)."""
    cleaned = re.sub(r"\s+", " ", text.strip())
    for layout in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y"):
        try:
            return datetime.strptime(cleaned, layout).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"unknown LoCoMo date: {text!r}")


def evidence_ids(raw: list[Any]) -> list[str]:
    ids: list[str] = []
    for item in raw:
        ids += [part for part in re.split(r"[;,\s]+", str(item)) if part]
    return ids


def turn_text(turn: dict[str, Any]) -> str:
    text = str(turn.get("text", "")).strip()
    caption = turn.get("blip_caption")
    if caption:
        # how a chat client hands an image to a text memory: its caption
        text = f"{text} [shares a photo: {caption}]".strip()
    return text


def sessions(conversation: dict[str, Any]) -> list[tuple[int, datetime, list[dict[str, Any]]]]:
    found = []
    for key, turns in conversation.items():
        match = re.fullmatch(r"session_(\d+)", key)
        if match and isinstance(turns, list):
            number = int(match.group(1))
            found.append((number, parse_session_date(conversation[f"session_{number}_date_time"]), turns))
    return sorted(found)


def recall_at(ranked_turns: list[str], evidence: list[str], k: int) -> float:
    if not evidence:
        return 1.0
    top = set(ranked_turns[:k])
    return sum(1 for item in evidence if item in top) / len(evidence)


class Command(BaseCommand):
    help = "LoCoMo retrieval benchmark: R@5/10/25 per category through the real ingest and search paths."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--dataset", choices=["locomo"], default="locomo")
        parser.add_argument("--path", default="../shared/data/locomo10.json")
        parser.add_argument("--baseline", choices=["cosine", "none"], default="cosine")
        parser.add_argument("--limit", type=int, default=0, help="only the first N conversations")
        parser.add_argument("--keep", action="store_true", help="keep the benchmark tenants afterwards")
        parser.add_argument("--json", dest="json_out", help="write the figures to this JSON file")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["path"])
        if not path.exists():
            raise CommandError(f"{path} not found (the dataset is read from ../shared/data, never copied here)")
        data = json.loads(path.read_text())
        if options["limit"]:
            data = data[: options["limit"]]
        run = timezone.now().strftime("%Y%m%d%H%M%S")
        engram: dict[str, dict[int, list[float]]] = {f"R@{k}": defaultdict(list) for k in KS}
        baseline: dict[str, dict[int, list[float]]] = {f"R@{k}": defaultdict(list) for k in KS}
        latencies: list[float] = []
        ingest_seconds = worker_seconds = 0.0
        turns_total = 0
        tenants: list[Tenant] = []
        try:
            with as_in_production():  # ingest and search as production runs them
                for sample in tqdm(data, desc="conversations", unit="conv", file=self.stdout):
                    tenant = tenant_create(
                        name=f"bench locomo {sample['sample_id']} {run}", slug=f"bench-{sample['sample_id']}-{run}"
                    )
                    tenants.append(tenant)
                    items, _, formatted = self._items(sample)
                    turns_total += len(items)
                    for start in range(0, len(items), BATCH):
                        started = time.perf_counter()
                        outcomes = ingest_messages(tenant=tenant, items=items[start : start + BATCH], actor="bench")
                        ingest_seconds += time.perf_counter() - started
                        # what the worker does after each ingest request (context_embed_task), done here
                        # so that every question is asked of the memories as production has them
                        started = time.perf_counter()
                        memories_context_embed(memory_ids=created_memory_ids(outcome.memories for outcome in outcomes))
                        worker_seconds += time.perf_counter() - started
                    contact = Contact.objects.get(tenant=tenant, external_id=sample["sample_id"])
                    turn_ids = [item.message_id or "" for item in items]
                    turn_vectors = get_embedder().embed_batch(formatted) if options["baseline"] == "cosine" else None
                    for qa in sample["qa"]:
                        evidence = evidence_ids(qa.get("evidence", []))
                        category = int(qa["category"])
                        began = time.perf_counter()
                        result = memory_search(tenant=tenant, contact=contact, query=str(qa["question"]), top_k=50)
                        latencies.append((time.perf_counter() - began) * 1000)
                        ranked = self._ranked_turns(result.results)
                        for k in KS:
                            engram[f"R@{k}"][category].append(recall_at(ranked, evidence, k))
                        if turn_vectors is not None:
                            query_vector = get_embedder().embed_batch([str(qa["question"])])[0]
                            order = np.argsort(-(turn_vectors @ query_vector))[:50]
                            ranked_baseline = [turn_ids[index] for index in order]
                            for k in KS:
                                baseline[f"R@{k}"][category].append(recall_at(ranked_baseline, evidence, k))
        finally:
            if not options["keep"]:
                for tenant in tenants:
                    tenant.delete()
        report = self._report(engram, baseline if options["baseline"] == "cosine" else None, latencies)
        report["ingest"] = {
            "turns": turns_total,
            "seconds": round(ingest_seconds, 1),
            "turns_per_second": round(turns_total / ingest_seconds, 1) if ingest_seconds else None,
            "context_embedding_seconds": round(worker_seconds, 1),
        }
        self.stdout.write(report["table"])
        self.stdout.write(
            f"ingest: {turns_total} turns in {ingest_seconds:.1f} s ({report['ingest']['turns_per_second']} turns/s), "
            f"then context embeddings (the worker's part) {worker_seconds:.1f} s; "
            f"search latency p50 {report['latency_ms']['p50']} ms, p95 {report['latency_ms']['p95']} ms"
        )
        if options["json_out"]:
            Path(options["json_out"]).write_text(
                json.dumps({k: v for k, v in report.items() if k != "table"}, indent=2)
            )

    def _items(self, sample: dict[str, Any]) -> tuple[list[IngestItem], list[str], list[str]]:
        conversation = sample["conversation"]
        items: list[IngestItem] = []
        texts: list[str] = []
        formatted: list[str] = []
        for number, date, turns in sessions(conversation):
            for index, turn in enumerate(turns):
                text = turn_text(turn)
                if not text:
                    continue
                items.append(
                    IngestItem(
                        contact_id=sample["sample_id"],
                        conversation_id=f"session_{number}",
                        message=text,
                        role="user",
                        message_id=turn["dia_id"],
                        speaker=turn["speaker"],
                        occurred_at=date + timedelta(seconds=index * 30),
                        display_name=f"{conversation.get('speaker_a', '')} & {conversation.get('speaker_b', '')}",
                    )
                )
                texts.append(text)
                formatted.append(f'({date:%d %B %Y}) {turn["speaker"]} said, "{text}"')
        return items, texts, formatted

    @staticmethod
    def _ranked_turns(results: list[Any]) -> list[str]:
        ranked: list[str] = []
        seen: set[str] = set()
        for item in results:
            for message_id in item.memory.source_message_ids:
                if message_id not in seen:
                    seen.add(message_id)
                    ranked.append(message_id)
        return ranked

    @staticmethod
    def _report(
        engram: dict[str, dict[int, list[float]]],
        baseline: dict[str, dict[int, list[float]]] | None,
        latencies: list[float],
    ) -> dict[str, Any]:
        def mean(values: list[float]) -> float:
            return round(sum(values) / len(values), 3) if values else 0.0

        rows = ["category          n     " + "  ".join(f"{'R@' + str(k):>13}" for k in KS)]
        figures: dict[str, Any] = {"engram": {}, "baseline_cosine": {}}
        for category, name in [*CATEGORIES.items(), (0, "overall")]:
            cells = []
            for k in KS:
                key = f"R@{k}"
                values = [v for c, vs in engram[key].items() for v in vs] if category == 0 else engram[key][category]
                cell = f"{mean(values):.3f}"
                figures["engram"].setdefault(name, {})[key] = mean(values)
                if baseline is not None:
                    base_values = (
                        [v for c, vs in baseline[key].items() for v in vs] if category == 0 else baseline[key][category]
                    )
                    figures["baseline_cosine"].setdefault(name, {})[key] = mean(base_values)
                    cell += f" ({mean(base_values):.3f})"
                cells.append(f"{cell:>13}")
            count = (
                len([v for vs in engram["R@5"].values() for v in vs]) if category == 0 else len(engram["R@5"][category])
            )
            rows.append(f"{name:<16} {count:>4}     " + "  ".join(cells))
        if baseline is not None:
            rows.append("(in brackets: plain cosine over raw turns, same embedder, same run)")
        latency = {
            "p50": round(statistics.median(latencies), 1) if latencies else None,
            "p95": round(float(np.percentile(latencies, 95)), 1) if latencies else None,
        }
        return {"table": "\n".join(rows), "figures": figures, "latency_ms": latency}
