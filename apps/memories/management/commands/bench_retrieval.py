"""Retrieval quality on the development sets (LoCoMo and BEAM), beside flat retrievers over the raw turns.

`--via-http` is the figure that counts (apps/memories/benchmarks/end_to_end.py): through HTTP against the
stack `make run` starts, every conversation a contact of one shared tenant per set, asked fresh and settled.
Beside it, in the same run, the flat retrievers (apps/memories/benchmarks/flat.py: cosine with the same
embedder, BM25, and their z-score hybrid) over the same turns and questions, and Engram's lead over the
hybrid. LoCoMo is reported whole and by half: retrieval is tuned on the first five conversations ("tune
half") and judged on the other five ("report half") and on BEAM, a set of another domain.

Without `--via-http`, an in-process diagnostic through the same ingest and search services: each
conversation is ingested as one contact of its own tenant, every question is asked through memory_search.
"""

from __future__ import annotations

import json
import time
from argparse import ArgumentParser
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError
from django.db import connection
from django.utils import timezone
from tqdm import tqdm

from apps.contacts.models import Contact
from apps.core.commands import DatabaseCommand
from apps.core.embeddings import get_embedder
from apps.memories.benchmarks import as_in_production, beam, chats, datasets, flat, locomo
from apps.memories.benchmarks.end_to_end import CONVERSATION_IDS, SETTLE_JOBS, Run, ingest_items, run_http
from apps.memories.benchmarks.stack import dump, embedding_cache_empty, running_stack
from apps.memories.ingest.services import ingest_messages
from apps.memories.retrieval.search import memory_search
from apps.tenants.models import Tenant
from apps.tenants.services import tenant_create, tenant_delete
from config.embedded import VAR_DIR

BATCH = 500
DATASETS = ("locomo", "beam", "chats")


def lexeme_counts(texts: list[str]) -> list[Counter[str]]:
    """Each text's lexemes with their counts, from PostgreSQL's `english` parser (what Engram indexes with)."""
    counts: list[Counter[str]] = [Counter() for _ in texts]
    if not texts:
        return counts
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT t.i, v.lexeme, coalesce(array_length(v.positions, 1), 1) "
            "FROM unnest(%s::text[]) WITH ORDINALITY AS t(txt, i), unnest(to_tsvector('english', t.txt)) v",
            [texts],
        )
        for index, lexeme, count in cursor.fetchall():
            counts[int(index) - 1][lexeme] += int(count)
    return counts


def flat_scores(dataset: datasets.Dataset) -> dict[str, datasets.Scores]:
    """The flat retrievers' scores for every question of the set."""
    embedder = get_embedder()
    indexes = flat.build_indexes(
        dataset,
        embed=lambda texts: embedder.embed_batch(texts),
        lexemes_of=lexeme_counts,
        cache_dir=VAR_DIR / "bench" / "flat",
        embedder_name=str(settings.ENGRAM.get("EMBEDDER", "")),
    )
    questions = list(dataset.questions)
    vectors: Any = embedder.embed_batch([question.text for question in questions]) if questions else []
    query_lexemes = lexeme_counts([question.text for question in questions])
    scores = {name: datasets.Scores() for name in flat.RETRIEVERS}
    for question, vector, lexemes in zip(questions, vectors, query_lexemes, strict=True):
        rankings = indexes[question.conversation].rankings(vector=vector, lexemes=list(lexemes))
        for name, ranked in rankings.items():
            scores[name].add(question, ranked)
    return scores


def context_budgets(value: str) -> tuple[int | None, ...]:
    """`--context stage,2000` → (None, 2000)."""
    budgets: list[int | None] = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        if item == "stage":
            budgets.append(None)
        elif item.isdigit() and int(item) > 0:
            budgets.append(int(item))
        else:
            raise CommandError(f"--context takes 'stage' and/or positive token budgets, not {item!r}")
    return tuple(budgets)


class Command(DatabaseCommand):
    help = "Retrieval quality (LoCoMo, BEAM) through the real ingest and search paths, beside flat retrievers."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--dataset",
            default="locomo,beam",
            help="comma-separated: locomo, beam (default: both) and/or chats (a held-out set of real chats: "
            "--chats-path)",
        )
        parser.add_argument("--path", default="../shared/data/locomo10.json", help="LoCoMo's JSON file")
        parser.add_argument("--beam-path", default="../shared/data/beam-100k", help="BEAM's folder")
        parser.add_argument(
            "--chats-path",
            default="",
            help="for --dataset chats: a chat file in REALTALK's layout, a JSON list of them or a folder of them "
            "(apps/memories/benchmarks/chats.py)",
        )
        parser.add_argument("--limit", type=int, default=0, help="only the first N conversations of each set")
        parser.add_argument(
            "--bursts",
            action="store_true",
            help="send each turn of several sentences as up to 3 consecutive messages of its speaker, as a messaging "
            "app's users do (a retrieved part counts as its turn; datasets.as_bursts)",
        )
        parser.add_argument(
            "--export",
            action="store_true",
            help="send the set as a messaging app's chat export reads: a shared photo is a message of its own, "
            "'<Media omitted>' from the same speaker after the turn (datasets.as_export)",
        )
        parser.add_argument("--no-baselines", action="store_true", help="skip the flat retrievers")
        parser.add_argument("--keep", action="store_true", help="keep the benchmark tenants afterwards")
        parser.add_argument("--json", dest="json_out", help="write the figures to this JSON file")
        http = parser.add_argument_group("end to end (the headline figure)")
        http.add_argument(
            "--via-http",
            action="store_true",
            help="through HTTP against a running stack, one shared tenant per set, fresh and settled",
        )
        http.add_argument(
            "--url", default="", help="the stack to measure (default: start one as `make run` does, then stop it)"
        )
        http.add_argument(
            "--stamping",
            default="session",
            help="comma-separated: session (every turn at its session's date, as the sets give) and/or spread "
            "(chats: a message with a time of its own keeps it either way)",
        )
        http.add_argument(
            "--conversation-ids",
            default="session",
            choices=CONVERSATION_IDS,
            help="session: a conversation id per session of the set (default); chat: one conversation id per chat, "
            "as a client keeping one thread per end-user sends it",
        )
        http.add_argument("--batch", type=int, default=200, help="turns per POST /ingest/batch")
        http.add_argument(
            "--settle",
            default="deferred,periodic",
            help="background jobs run before the settled questions: deferred,periodic (all of them: the deferred "
            "consolidation of every conversation, then the 6-hourly job), or deferred alone",
        )
        http.add_argument(
            "--reuse",
            default="",
            help="ask again, without ingesting, the tenants a --keep run filled: locomo=SLUG,beam=SLUG; without "
            "--via-http they are asked in process (no stack: an A/B of retrieval code on a fixed store)",
        )
        http.add_argument(
            "--context",
            default="",
            help="then ask every question as GET /context's query, once per budget given: stage (the stage's own "
            "budget and density, as the stack computes them) and/or a token_budget (opens every type), e.g. "
            "stage,2000; scored by the evidence among the whole context's memories",
        )
        http.add_argument("--details", help="write every question's ranked turns per phase to this JSON file")
        http.add_argument(
            "--keep-cache", action="store_true", help="keep the embedding cache (default: empty it before each run)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        names = [name for name in options["dataset"].split(",") if name]
        unknown = set(names) - set(DATASETS)
        if unknown or not names:
            raise CommandError(f"--dataset takes {', '.join(DATASETS)}, not {options['dataset']!r}")
        if "chats" in names and not options["chats_path"]:
            raise CommandError("--dataset chats needs --chats-path (a chat file or a folder of them)")
        stampings = [item for item in options["stamping"].split(",") if item]
        settle_jobs = tuple(item for item in options["settle"].split(",") if item)
        if {*stampings} - {"session", "spread"} or {*settle_jobs} - set(SETTLE_JOBS):
            raise CommandError("unknown --stamping/--settle value(s)")
        reuse = dict(item.split("=", 1) for item in options["reuse"].split(",") if "=" in item)
        if context_budgets(options["context"]) and not options["via_http"]:
            raise CommandError("--context asks GET /context as a client does: it needs --via-http")
        if not options["via_http"] and not reuse:
            stampings = ["spread"]  # the diagnostic's one stamping (a reused tenant's is the one it was filled with)
        report: dict[str, Any] = {"runs": [], "baselines": {}}
        runs: list[Run] = []
        asked: dict[str, list[dict[str, Any]]] = {}  # the in-process questions' --details lines, per dataset
        with ExitStack() as stack:
            base_url = ""
            if options["via_http"]:
                base_url = options["url"] or stack.enter_context(
                    running_stack(log_path=VAR_DIR / "bench" / "stack.log")
                )
                self.stdout.write(f"measuring {base_url} (server: {'given' if options['url'] else 'started here'})")
            for name in names:
                for stamping in stampings:
                    dataset = self._load(name, options, stamping=stamping)
                    baselines = {} if options["no_baselines"] else flat_scores(dataset)
                    if options["via_http"]:
                        run = self._via_http(dataset, options, base_url, stamping, settle_jobs, reuse.get(name))
                        columns = {phase: value.scores for phase, value in run.phases.items()}
                        runs.append(run)
                        report["runs"].append(run.figures())
                    elif reuse.get(name):
                        engram, asked[f"{dataset.name} {stamping}"] = self._in_process_reused(
                            dataset, reuse[name], report
                        )
                        columns = {"engram": engram}
                    else:
                        engram, asked[f"{dataset.name} {stamping}"] = self._in_process(dataset, options, report)
                        columns = {"engram": engram}
                    report["baselines"][f"{dataset.name} {stamping}"] = {
                        retriever: scores.figures(dataset) for retriever, scores in baselines.items()
                    }
                    self._print(dataset, stamping, columns, baselines, runs[-1] if options["via_http"] else None)
                    # written after every dataset: a run of an hour keeps what it measured if a later part fails
                    self._dump(options, report, runs, settle_jobs, asked)

    def _dump(
        self,
        options: dict[str, Any],
        report: dict[str, Any],
        runs: list[Run],
        settle_jobs: tuple[str, ...],
        asked: dict[str, list[dict[str, Any]]],
    ) -> None:
        if options["json_out"]:
            dump(options["json_out"], report | {"settle": settle_jobs})
        if options["details"]:
            dump(
                options["details"],
                {
                    f"{run.dataset.name} {run.stamping}": {name: phase.details for name, phase in run.phases.items()}
                    for run in runs
                }
                | {key: {"in_process": details} for key, details in asked.items()},
            )

    def _load(self, name: str, options: dict[str, Any], *, stamping: str) -> datasets.Dataset:
        if name == "locomo":
            path = Path(options["path"])
            if not path.exists():
                raise CommandError(f"{path} not found (the dataset is read from ../shared/data, never copied here)")
            dataset = locomo.load(json.loads(path.read_text()), stamping=stamping)
        elif name == "chats":
            path = Path(options["chats_path"])
            if not path.exists():
                raise CommandError(f"{path} not found")
            try:
                dataset = chats.load(path, stamping=stamping)
            except ValueError as error:  # chats.ChatFileError, or a time in no known layout
                raise CommandError(f"{path}: {error}") from error
        else:
            path = Path(options["beam_path"])
            if not path.is_dir():
                raise CommandError(f"{path} not found (the dataset is read from ../shared/data, never copied here)")
            dataset = beam.load(path, stamping=stamping, max_chars=settings.ENGRAM["MAX_MESSAGE_CHARS"])
        if options["limit"]:
            dataset = dataset.subset([conversation.id for conversation in dataset.conversations[: options["limit"]]])
        if options["export"]:
            dataset = datasets.as_export(dataset)
        return datasets.as_bursts(dataset) if options["bursts"] else dataset

    def _via_http(
        self,
        dataset: datasets.Dataset,
        options: dict[str, Any],
        base_url: str,
        stamping: str,
        settle_jobs: tuple[str, ...],
        reuse_slug: str | None,
    ) -> Run:
        bars: list[tqdm] = []

        def progress(label: str, total: int) -> Any:
            bar = tqdm(total=total, desc=label, unit="it", file=self.stdout, leave=True)
            bars.append(bar)
            return bar.update

        def on_poll(depth: int, busy: int) -> None:
            if bars:
                bars[-1].set_postfix_str(f"settling: queue {depth}, running {busy}")

        reuse = None
        if reuse_slug:
            reuse = Tenant.objects.filter(slug=reuse_slug).first()
            if reuse is None:
                raise CommandError(f"no tenant {reuse_slug!r} to reuse")
        elif not options["keep_cache"]:
            self.stdout.write(f"embedding cache emptied ({embedding_cache_empty()} entries)")
        run = run_http(
            base_url=base_url,
            dataset=dataset,
            stamping=stamping,
            batch=options["batch"],
            settle_jobs=settle_jobs,
            keep=options["keep"],
            conversation_ids=options["conversation_ids"],
            progress=progress,
            on_poll=on_poll,
            reuse=reuse,
            contexts=context_budgets(options["context"]),
        )
        for bar in bars:
            bar.close()
        return run

    def _in_process(
        self, dataset: datasets.Dataset, options: dict[str, Any], report: dict[str, Any]
    ) -> tuple[datasets.Scores, list[dict[str, Any]]]:
        run = timezone.now().strftime("%Y%m%d%H%M%S")
        asked: list[dict[str, Any]] = []
        scores = datasets.Scores()
        latencies: list[float] = []
        ingest_seconds = 0.0
        tenants: list[Tenant] = []
        questions = datasets.by_conversation(dataset.questions)
        try:
            with as_in_production():  # ingest and search as production runs them
                for conversation in tqdm(dataset.conversations, desc="conversations", unit="conv", file=self.stdout):
                    label = f"{dataset.name.lower()}-{conversation.id}"
                    tenant = tenant_create(name=f"bench {label} {run}", slug=f"bench-{label}-{run}"[:50])
                    tenants.append(tenant)
                    items = ingest_items(conversation)
                    for start in range(0, len(items), BATCH):
                        started = time.perf_counter()
                        ingest_messages(tenant=tenant, items=items[start : start + BATCH], actor="bench")
                        ingest_seconds += time.perf_counter() - started
                    contact = Contact.objects.get(tenant=tenant, external_id=conversation.id)
                    self._ask(
                        tenant, contact, conversation, questions.get(conversation.id, []), scores, latencies, asked
                    )
        finally:
            if not options["keep"]:
                for tenant in tenants:
                    tenant_delete(tenant=tenant)
        turns = sum(len(conversation.turns) for conversation in dataset.conversations)
        report.setdefault("in_process", {})[dataset.name] = {
            "recall": scores.figures(dataset),
            "search_ms": datasets.percentiles(latencies),
            "ingest": {
                "turns": turns,
                "seconds": round(ingest_seconds, 1),
                "turns_per_second": round(turns / ingest_seconds, 1) if ingest_seconds else None,
            },
        }
        latency = datasets.percentiles(latencies)
        self.stdout.write(
            f"{dataset.name} in process: {turns} turns ingested in {ingest_seconds:.1f} s; "
            f"search latency p50 {latency['p50']} ms, p95 {latency['p95']} ms"
        )
        return scores, asked

    @staticmethod
    def _ask(
        tenant: Tenant,
        contact: Contact,
        conversation: datasets.Conversation,
        questions: list[datasets.Question],
        scores: datasets.Scores,
        latencies: list[float],
        asked: list[dict[str, Any]],
    ) -> None:
        """Each question as `POST /memories/search` asks it in the HTTP run (top 50, as of the conversation's
        last turn), its memories mapped back to the conversation's turns (`asked`: each one's `--details` line)."""
        prefix = f"{conversation.id}:"
        for question in questions:
            began = time.perf_counter()
            result = memory_search(
                tenant=tenant, contact=contact, query=question.text, top_k=50, reference_time=conversation.last_at
            )
            latencies.append((time.perf_counter() - began) * 1000)
            ranked = datasets.ranked_turns(
                [source.removeprefix(prefix) for source in item.memory.source_message_ids] for item in result.results
            )
            scores.add(question, ranked)
            asked.append(datasets.detail(question, ranked))

    def _in_process_reused(
        self, dataset: datasets.Dataset, slug: str, report: dict[str, Any]
    ) -> tuple[datasets.Scores, list[dict[str, Any]]]:
        """The questions asked in process of a tenant a `--via-http --keep` run filled (one contact per
        conversation): no ingest, no stack. On session 24's settled tenants this gave the HTTP run's settled R@10
        to the fourth decimal (LoCoMo 0.8275, BEAM 0.7352): a fixed store on which two versions of the retrieval
        code compare in minutes (docs/benchmarks.md, "Session 25")."""
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            raise CommandError(f"no tenant {slug!r} to reuse")
        contacts = {contact.external_id: contact for contact in Contact.objects.filter(tenant=tenant)}
        missing = [conversation.id for conversation in dataset.conversations if conversation.id not in contacts]
        if missing:
            raise CommandError(
                f"tenant {slug!r} holds no contact for {', '.join(missing[:3])}"
                f"{' …' if len(missing) > 3 else ''}: reuse a tenant a --via-http --keep run of {dataset.name} filled"
            )
        asked: list[dict[str, Any]] = []
        scores = datasets.Scores()
        latencies: list[float] = []
        questions = datasets.by_conversation(dataset.questions)
        with as_in_production():
            for conversation in tqdm(dataset.conversations, desc="conversations", unit="conv", file=self.stdout):
                self._ask(
                    tenant,
                    contacts[conversation.id],
                    conversation,
                    questions.get(conversation.id, []),
                    scores,
                    latencies,
                    asked,
                )
        latency = datasets.percentiles(latencies)
        report.setdefault("in_process", {})[dataset.name] = {
            "recall": scores.figures(dataset),
            "search_ms": latency,
            "reused": slug,
        }
        self.stdout.write(
            f"{dataset.name} in process, tenant {slug} as kept: search latency p50 {latency['p50']} ms, "
            f"p95 {latency['p95']} ms"
        )
        return scores, asked

    def _print(
        self,
        dataset: datasets.Dataset,
        stamping: str,
        columns: dict[str, datasets.Scores],
        baselines: dict[str, datasets.Scores],
        run: Run | None,
    ) -> None:
        if run is not None:
            figures = run.figures()
            ingest = figures["ingest"]
            self.stdout.write(
                f"\n== {dataset.name}, stamping {stamping}, conversation ids per {run.conversation_ids}: "
                f"{ingest['turns']} turns in {ingest['seconds']} s "
                f"({ingest['turns_per_second']} turns/s; batch p50 {ingest['batch_ms']['p50']} ms; "
                f"{ingest['retries']} batches resent), "
                f"settled in {figures['settle_seconds']} s"
            )
        engram = list(columns)
        table_columns = {**columns, **baselines}
        for k in datasets.KS:
            self.stdout.write(
                datasets.comparison_table(
                    dataset, table_columns, k=k, lead_over="hybrid" if "hybrid" in baselines else "", leads=engram
                )
            )
        if baselines:
            self.stdout.write(
                "(cosine, bm25, hybrid: flat retrievers over the raw turns, same embedder, same questions, same run)"
            )
        if run is not None:
            for name, phase in run.phases.items():
                latency = datasets.percentiles(phase.latencies_ms)
                self.stdout.write(
                    f"{dataset.name} {name}: {dataset.metric}@10 {phase.scores.mean(f'{dataset.metric}@10')}; "
                    f"search over HTTP p50 {latency['p50']} ms, p95 {latency['p95']} ms, p99 {latency['p99']} ms"
                )
            for round_ in run.contexts:
                self._print_context(dataset, round_)

    def _print_context(self, dataset: datasets.Dataset, round_: Any) -> None:
        figures = round_.figures(dataset)
        latency = figures["context_ms"]
        self.stdout.write(
            f"{dataset.name} GET /context ({round_.label}): evidence recall of the whole context "
            f"{figures['recall']['all']['overall']}; {figures['lines_mean']} lines, {figures['tokens_mean']} tokens a "
            f"context; stages {figures['stages']}; p50 {latency['p50']} ms, p95 {latency['p95']} ms"
        )
        for group, rows in figures["recall"].items():
            cells = ", ".join(f"{name} {value}" for name, value in rows.items() if value is not None)
            self.stdout.write(f"  [{group}] {cells}")
