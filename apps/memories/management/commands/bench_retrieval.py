"""Retrieval quality on LoCoMo.

`--via-http` is the figure that counts (apps/memories/benchmarks/end_to_end.py): through HTTP against the
stack `make run` starts, every conversation a contact of one shared tenant, asked fresh and settled, with
turns stamped by their session's date (`session`, what LoCoMo gives) and spread 30 s apart (`spread`).

Without it, an in-process diagnostic through the same ingest and search services: each conversation is
ingested as one contact of its own tenant (message ids are the dataset's dia_ids), turns spread 30 s apart;
every question is asked through memory_search; returned memories map back to turns through their provenance.
R@k = share of a question's evidence turns among the first k distinct turns retrieved (LoCoMo's definition).
"""

from __future__ import annotations

import json
import time
from argparse import ArgumentParser
from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from tqdm import tqdm

from apps.contacts.models import Contact
from apps.core.embeddings import get_embedder
from apps.memories.benchmarks import as_in_production
from apps.memories.benchmarks.end_to_end import SETTLE_JOBS, Run, run_locomo_http
from apps.memories.benchmarks.locomo import (
    CATEGORIES,
    KS,
    evidence_ids,
    percentiles,
    ranked_turns,
    recall_at,
    recall_table,
    speakers,
    turns,
)
from apps.memories.benchmarks.stack import dump, embedding_cache_empty, running_stack
from apps.memories.ingest.services import IngestItem, ingest_messages
from apps.memories.retrieval.search import memory_search
from apps.tenants.models import Tenant
from apps.tenants.services import tenant_create, tenant_delete
from config.embedded import VAR_DIR

BATCH = 500


class Command(BaseCommand):
    help = "LoCoMo retrieval benchmark: R@5/10/25 per category through the real ingest and search paths."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--dataset", choices=["locomo"], default="locomo")
        parser.add_argument("--path", default="../shared/data/locomo10.json")
        parser.add_argument("--baseline", choices=["cosine", "none"], default="cosine")
        parser.add_argument("--limit", type=int, default=0, help="only the first N conversations")
        parser.add_argument("--keep", action="store_true", help="keep the benchmark tenants afterwards")
        parser.add_argument("--json", dest="json_out", help="write the figures to this JSON file")
        http = parser.add_argument_group("end to end (the headline figure)")
        http.add_argument(
            "--via-http",
            action="store_true",
            help="through HTTP against a running stack, one shared tenant, fresh and settled",
        )
        http.add_argument(
            "--url", default="", help="the stack to measure (default: start one as `make run` does, then stop it)"
        )
        http.add_argument(
            "--stamping",
            default="session,spread",
            help="comma-separated: session (every turn at its session's date, as LoCoMo gives) and/or spread",
        )
        http.add_argument("--batch", type=int, default=200, help="turns per POST /ingest/batch")
        http.add_argument(
            "--settle",
            default="deferred",
            help="background jobs run before the settled questions: deferred, or deferred,periodic",
        )
        http.add_argument("--details", help="write every question's ranked turns per phase to this JSON file")
        http.add_argument(
            "--keep-cache", action="store_true", help="keep the embedding cache (default: empty it before each run)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["path"])
        if not path.exists():
            raise CommandError(f"{path} not found (the dataset is read from ../shared/data, never copied here)")
        data = json.loads(path.read_text())
        if options["limit"]:
            data = data[: options["limit"]]
        if options["via_http"]:
            self._via_http(data, options)
            return
        run = timezone.now().strftime("%Y%m%d%H%M%S")
        engram: dict[str, dict[int, list[float]]] = {f"R@{k}": defaultdict(list) for k in KS}
        baseline: dict[str, dict[int, list[float]]] = {f"R@{k}": defaultdict(list) for k in KS}
        latencies: list[float] = []
        ingest_seconds = 0.0
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
                        ingest_messages(tenant=tenant, items=items[start : start + BATCH], actor="bench")
                        ingest_seconds += time.perf_counter() - started
                    contact = Contact.objects.get(tenant=tenant, external_id=sample["sample_id"])
                    turn_ids = [item.message_id or "" for item in items]
                    turn_vectors = get_embedder().embed_batch(formatted) if options["baseline"] == "cosine" else None
                    for qa in sample["qa"]:
                        evidence = evidence_ids(qa.get("evidence", []))
                        category = int(qa["category"])
                        began = time.perf_counter()
                        result = memory_search(tenant=tenant, contact=contact, query=str(qa["question"]), top_k=50)
                        latencies.append((time.perf_counter() - began) * 1000)
                        ranked = ranked_turns(item.memory.source_message_ids for item in result.results)
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
                    tenant_delete(tenant=tenant)
        report = self._report(engram, baseline if options["baseline"] == "cosine" else None, latencies)
        report["ingest"] = {
            "turns": turns_total,
            "seconds": round(ingest_seconds, 1),
            "turns_per_second": round(turns_total / ingest_seconds, 1) if ingest_seconds else None,
        }
        self.stdout.write(report["table"])
        self.stdout.write(
            f"ingest: {turns_total} turns in {ingest_seconds:.1f} s ({report['ingest']['turns_per_second']} turns/s); "
            f"search latency p50 {report['latency_ms']['p50']} ms, p95 {report['latency_ms']['p95']} ms"
        )
        if options["json_out"]:
            Path(options["json_out"]).write_text(
                json.dumps({k: v for k, v in report.items() if k != "table"}, indent=2)
            )

    def _items(self, sample: dict[str, Any]) -> tuple[list[IngestItem], list[str], list[str]]:
        items: list[IngestItem] = []
        texts: list[str] = []
        formatted: list[str] = []
        for turn in turns(sample, stamping="spread"):
            items.append(
                IngestItem(
                    contact_id=sample["sample_id"],
                    conversation_id=f"session_{turn.session}",
                    message=turn.text,
                    role="user",
                    message_id=turn.dia_id,
                    speaker=turn.speaker,
                    occurred_at=turn.occurred_at,
                    display_name=speakers(sample),
                )
            )
            texts.append(turn.text)
            formatted.append(f'({turn.occurred_at:%d %B %Y}) {turn.speaker} said, "{turn.text}"')
        return items, texts, formatted

    def _via_http(self, data: list[dict[str, Any]], options: dict[str, Any]) -> None:
        stampings = [item for item in options["stamping"].split(",") if item]
        settle_jobs = tuple(item for item in options["settle"].split(",") if item)
        unknown = {*stampings} - {"session", "spread"} | {*settle_jobs} - set(SETTLE_JOBS)
        if unknown:
            raise CommandError(f"unknown --stamping/--settle value(s): {', '.join(sorted(unknown))}")
        bars: list[tqdm] = []

        def progress(label: str, total: int) -> Any:
            bar = tqdm(total=total, desc=label, unit="it", file=self.stdout, leave=True)
            bars.append(bar)
            return bar.update

        def on_poll(depth: int, busy: int) -> None:
            if bars:
                bars[-1].set_postfix_str(f"settling: queue {depth}, running {busy}")

        runs: list[Run] = []
        with ExitStack() as stack:
            base_url = options["url"] or stack.enter_context(running_stack(log_path=VAR_DIR / "bench" / "stack.log"))
            self.stdout.write(f"measuring {base_url} (server: {'given' if options['url'] else 'started here'})")
            for stamping in stampings:
                if not options["keep_cache"]:
                    self.stdout.write(f"embedding cache emptied ({embedding_cache_empty()} entries)")
                run = run_locomo_http(
                    base_url=base_url,
                    data=data,
                    stamping=stamping,
                    batch=options["batch"],
                    settle_jobs=settle_jobs,
                    keep=options["keep"],
                    progress=progress,
                    on_poll=on_poll,
                )
                for bar in bars:
                    bar.close()
                bars.clear()
                runs.append(run)
                self._print_run(run)
        if options["json_out"]:
            dump(options["json_out"], {"runs": [run.figures() for run in runs], "settle": settle_jobs})
        if options["details"]:
            dump(
                options["details"],
                {run.stamping: {name: phase.details for name, phase in run.phases.items()} for run in runs},
            )

    def _print_run(self, run: Run) -> None:
        figures = run.figures()
        ingest = figures["ingest"]
        self.stdout.write(
            f"\n== stamping: {run.stamping} — {ingest['turns']} turns in {ingest['seconds']} s "
            f"({ingest['turns_per_second']} turns/s; batch p50 {ingest['batch_ms']['p50']} ms), "
            f"settled in {figures['settle_seconds']} s"
        )
        self.stdout.write(recall_table({name: phase.recall for name, phase in run.phases.items()}))
        for name, phase in figures["phases"].items():
            latency = phase["search_ms"]
            self.stdout.write(
                f"{name}: R@10 {phase['recall']['overall']['R@10']:.4f}; search over HTTP "
                f"p50 {latency['p50']} ms, p95 {latency['p95']} ms, p99 {latency['p99']} ms"
            )

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
        latency = percentiles(latencies)
        return {"table": "\n".join(rows), "figures": figures, "latency_ms": latency}
