"""The two benchmark commands the README names run end to end on small data (their figures are benchmarks,
not asserted here: only that they measure what they say, through the real paths)."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import CommandError, call_command

from apps.core.embeddings import CachedEmbedder, get_embedder
from apps.memories.benchmarks import hnsw_bloat_note
from apps.memories.benchmarks.corpus import queries
from apps.memories.models import Memory, MemoryEntity
from apps.tenants.models import Tenant
from tests.chat_sets import CHAT

TINY_LOCOMO = [
    {
        "sample_id": "tiny-1",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a grey kitten called Pebble from the shelter"},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "Congrats! I started training for the Lisbon marathon"},
            ],
            "session_2_date_time": "10:00 am on 20 June, 2023",
            "session_2": [
                {"speaker": "Ana", "dia_id": "D2:1", "text": "Pebble knocked my sourdough starter off the shelf"},
                {
                    "speaker": "Ben",
                    "dia_id": "D2:2",
                    "text": "My knee hurts after the long run",
                    "blip_caption": "a photo of running shoes",
                },
            ],
        },
        "qa": [
            {"question": "What is the name of Ana's kitten?", "answer": "Pebble", "evidence": ["D1:1"], "category": 4},
            {
                "question": "Which marathon is Ben training for?",
                "answer": "Lisbon",
                "evidence": ["D1:2"],
                "category": 4,
            },
            {
                "question": "What did Pebble do?",
                "answer": "knocked the starter off",
                "evidence": ["D2:1; D1:1"],
                "category": 1,
            },
        ],
    }
]


def _tiny_beam(root):
    """A BEAM-shaped folder: one chat of two dated batches, two probing questions (one without evidence)."""
    chat = root / "1"
    (chat / "probing_questions").mkdir(parents=True)
    turns = [
        [
            {"role": "user", "id": 0, "time_anchor": "March-15-2024", "content": "My sprint ends on March 29 ->-> 1,1"},
            {"role": "assistant", "id": 1, "content": "Great, let us plan the sprint backlog around that date."},
        ],
        [
            {
                "role": "user",
                "id": 2,
                "time_anchor": "April-05-2024",
                "content": "The dashboard API now answers in 250ms",
            },
            {"role": "assistant", "id": 3, "content": "Caching made a big difference then."},
        ],
    ]
    (chat / "chat.json").write_text(
        json.dumps([{"batch_number": 1, "turns": [turns[0]]}, {"batch_number": 2, "turns": [turns[1]]}])
    )
    (chat / "probing_questions" / "probing_questions.json").write_text(
        json.dumps(
            {
                "information_extraction": [{"question": "When does my sprint end?", "source_chat_ids": [0]}],
                "knowledge_update": [{"question": "How fast is the dashboard API?", "source_chat_ids": {"u": [2]}}],
                "abstention": [{"question": "What is my cat called?"}],
            }
        )
    )
    return root


@pytest.mark.django_db
def test_bench_retrieval_ingests_asks_and_maps_memories_back_to_turns(tmp_path):
    dataset = tmp_path / "tiny.json"
    dataset.write_text(json.dumps(TINY_LOCOMO))
    beam = _tiny_beam(tmp_path / "beam")
    figures = tmp_path / "figures.json"
    out = io.StringIO()
    call_command(
        "bench_retrieval", "--path", str(dataset), "--beam-path", str(beam), "--json", str(figures), stdout=out
    )
    report = json.loads(figures.read_text())
    locomo = report["in_process"]["LoCoMo"]
    assert locomo["ingest"]["turns"] == 4
    # four turns, each remembered: every evidence turn is among the first 25 (and 5) distinct turns returned
    assert locomo["recall"]["all"]["overall"]["R@25"] == 1.0
    assert locomo["recall"]["all"]["single-hop"]["R@5"] == 1.0
    beam_figures = report["in_process"]["BEAM"]
    assert beam_figures["ingest"]["turns"] == 4
    # the abstention question has no evidence: not a retrieval question
    assert beam_figures["recall"]["all"]["overall"]["n"] == 2
    assert beam_figures["recall"]["all"]["overall"]["any@5"] == 1.0
    # the flat retrievers over the same turns, in the same run
    for name in ("LoCoMo spread", "BEAM spread"):
        assert set(report["baselines"][name]) == {"cosine", "bm25", "hybrid"}
    assert report["baselines"]["BEAM spread"]["hybrid"]["all"]["overall"]["any@25"] == 1.0
    printed = out.getvalue()
    assert "search latency p50" in printed
    assert "engram-hybrid" in printed
    assert not Tenant.objects.filter(slug__startswith="bench-").exists()  # removed without --keep
    assert not Memory.objects.exists()


@pytest.mark.django_db
def test_bench_retrieval_measures_a_held_out_set_of_real_chats_beside_the_flat_retrievers(tmp_path):
    folder = tmp_path / "chats"
    folder.mkdir()
    (folder / "Chat_1_Emi_Elise.json").write_text(json.dumps(CHAT))
    figures = tmp_path / "figures.json"
    out = io.StringIO()
    call_command(
        "bench_retrieval", "--dataset", "chats", "--chats-path", str(folder), "--json", str(figures), stdout=out
    )
    report = json.loads(figures.read_text())
    measured = report["in_process"]["Chats"]
    assert measured["ingest"]["turns"] == 4  # the message without text is no turn
    assert measured["recall"]["all"]["overall"]["n"] == 4
    assert measured["recall"]["all"]["overall"]["R@5"] == 1.0  # four turns: every evidence turn is among them
    assert set(measured["recall"]["all"]) == {"overall", "headline", "multi-hop", "temporal", "commonsense", "visual"}
    assert set(report["baselines"]["Chats spread"]) == {"cosine", "bm25", "hybrid"}
    assert "engram-hybrid" in out.getvalue()
    assert not Tenant.objects.filter(slug__startswith="bench-").exists()
    # what is wrong is said, not a traceback
    with pytest.raises(CommandError, match="needs --chats-path"):
        call_command("bench_retrieval", "--dataset", "chats")
    (folder / "Chat_2.json").write_text(json.dumps({"qa": []}))
    with pytest.raises(CommandError, match="Chat_2: no session_<n> lists"):
        call_command("bench_retrieval", "--dataset", "chats", "--chats-path", str(folder))
    with pytest.raises(CommandError, match="not found"):
        call_command("bench_retrieval", "--dataset", "chats", "--chats-path", str(tmp_path / "nowhere"))


@pytest.mark.django_db
def test_bench_retrieval_reuse_in_process_asks_a_kept_tenant_without_ingesting(tmp_path, tenant, other_tenant):
    from apps.memories.benchmarks import as_in_production, locomo
    from apps.memories.benchmarks.end_to_end import ingest_items
    from apps.memories.ingest.services import ingest_messages

    dataset = tmp_path / "tiny.json"
    dataset.write_text(json.dumps(TINY_LOCOMO))
    # a store as a kept run leaves it: the conversation's contact, its turns' ids prefixed by the conversation's
    with as_in_production():
        for conversation in locomo.load(TINY_LOCOMO, stamping="session").conversations:
            ingest_messages(tenant=tenant, items=ingest_items(conversation), actor="bench")
    memories = Memory.objects.filter(tenant=tenant).count()
    figures = tmp_path / "figures.json"
    out = io.StringIO()
    call_command(
        "bench_retrieval",
        "--dataset",
        "locomo",
        "--path",
        str(dataset),
        "--reuse",
        f"locomo={tenant.slug}",
        "--json",
        str(figures),
        "--details",
        str(tmp_path / "details.json"),
        stdout=out,
    )
    report = json.loads(figures.read_text())["in_process"]["LoCoMo"]
    assert report["reused"] == tenant.slug
    # every question's ranked turns, as the HTTP run writes them (it wrote `{}` in process until session 26)
    details = json.loads((tmp_path / "details.json").read_text())["LoCoMo session"]["in_process"]
    assert [line["question"] for line in details] == [question["question"] for question in TINY_LOCOMO[0]["qa"]]
    assert all(set(line["evidence"]) <= set(line["ranked"]) for line in details)
    assert report["recall"]["all"]["overall"]["R@25"] == 1.0
    assert "ingest" not in report  # nothing was ingested: the store is asked as it is
    assert Memory.objects.filter(tenant=tenant).count() == memories
    assert not Tenant.objects.filter(slug__startswith="bench-").exists()
    assert f"tenant {tenant.slug} as kept" in out.getvalue()
    # a tenant that holds no such conversation, or none at all, is refused with what to do, not a traceback
    reuse = ["bench_retrieval", "--dataset", "locomo", "--path", str(dataset), "--no-baselines", "--reuse"]
    with pytest.raises(CommandError, match="holds no contact for tiny-1"):
        call_command(*reuse, f"locomo={other_tenant.slug}")
    with pytest.raises(CommandError, match="no tenant 'nobody-here' to reuse"):
        call_command(*reuse, "locomo=nobody-here")


@pytest.mark.django_db
def test_bench_retrieval_context_round_needs_http_and_says_what_it_takes():
    with pytest.raises(CommandError, match="it needs --via-http"):
        call_command("bench_retrieval", "--context", "stage")
    with pytest.raises(CommandError, match="not 'deep'"):
        call_command("bench_retrieval", "--via-http", "--context", "stage,deep")


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)  # the live server and the worker see what the test writes
def test_bench_retrieval_via_http_asks_fresh_and_settled_through_a_live_server_and_worker(
    tmp_path, live_server, celery_worker_process
):
    from apps.memories.models import ConsolidationRun

    dataset = tmp_path / "tiny.json"
    dataset.write_text(json.dumps(TINY_LOCOMO))
    figures = tmp_path / "figures.json"
    out = io.StringIO()
    call_command(
        "bench_retrieval",
        "--via-http",
        "--url",
        live_server.url,
        "--dataset",
        "locomo",
        "--path",
        str(dataset),
        "--stamping",
        "session,spread",
        "--keep",
        "--context",
        "stage,500",
        "--json",
        str(figures),
        stdout=out,
    )
    report = json.loads(figures.read_text())
    assert [run["stamping"] for run in report["runs"]] == ["session", "spread"]
    for run in report["runs"]:
        assert run["ingest"]["turns"] == 4
        assert set(run["phases"]) == {"fresh", "settled"}
        for phase in run["phases"].values():
            assert phase["recall"]["all"]["overall"]["R@25"] == 1.0
            assert phase["search_ms"]["p50"] > 0
        # then every question as GET /context's query: the stage as the stack computed it, and a budget of 500
        # tokens (every type): the whole context of four turns holds the evidence
        stage, opened = run["contexts"]
        assert (stage["token_budget"], opened["token_budget"]) == (None, 500)
        assert sum(stage["stages"].values()) == sum(opened["stages"].values()) == len(TINY_LOCOMO[0]["qa"])
        assert opened["recall"]["all"]["overall"] == 1.0 and opened["lines_mean"] > 0
        assert opened["context_ms"]["p50"] > 0
    assert set(report["baselines"]["LoCoMo session"]) == {"cosine", "bm25", "hybrid"}
    tenants = Tenant.objects.filter(slug__startswith="bench-http-")
    assert tenants.count() == 2  # one shared tenant per stamping, kept with --keep
    for tenant in tenants:
        # all turns in one tenant, the dataset's ids prefixed by the conversation's
        assert sorted(tenant.messages.values_list("external_id", flat=True)) == [
            "tiny-1:D1:1",
            "tiny-1:D1:2",
            "tiny-1:D2:1",
            "tiny-1:D2:2",
        ]
        # settled: the deferred consolidation of both conversations ran on the worker
        runs = ConsolidationRun.objects.filter(tenant=tenant, kind=ConsolidationRun.KIND_DEFERRED, status="done")
        assert runs.count() >= 2
    assert "LoCoMo settled: R@10" in out.getvalue()
    assert "fresh-hybrid" in out.getvalue()
    assert "LoCoMo GET /context (token_budget 500): evidence recall of the whole context 1.0" in out.getvalue()


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_bench_load_writes_and_reads_through_a_live_server_and_reports_the_queue(
    tmp_path, live_server, celery_worker_process, settings
):
    from apps.core.embeddings import CACHE_KEY_PREFIX
    from apps.core.redis import get_redis

    settings.ENGRAM = {**settings.ENGRAM, "SERVER_TIMING": True}  # what bench_load's own stack turns on

    get_redis().set(f"{CACHE_KEY_PREFIX}stale", "x")
    dataset = tmp_path / "tiny.json"
    dataset.write_text(json.dumps(TINY_LOCOMO))
    figures = tmp_path / "load.json"
    out = io.StringIO()
    call_command(
        "bench_load",
        "--url",
        live_server.url,
        "--path",
        str(dataset),
        "--seconds",
        "4",
        "--batch",
        "2",
        "--json",
        str(figures),
        stdout=out,
    )
    report = json.loads(figures.read_text())
    assert report["ingested"] >= 4 and report["ingested"] % 2 == 0  # whole batches of the dataset's turns
    assert report["errors"] == {}
    assert report["reads"]["context"]["n"] > 0 and report["reads"]["search"]["n"] > 0
    assert report["queue_depth"] and report["drain_seconds"] >= 0
    assert not get_redis().exists(f"{CACHE_KEY_PREFIX}stale")  # the embedding cache was emptied first
    assert not Tenant.objects.filter(slug__startswith="bench-http-load").exists()  # removed without --keep
    assert "msg/s" in out.getvalue()
    # the embedder alone, before and after, and the ingest rate against it
    assert [run["turns_per_second"] > 0 for run in report["bound"]["runs"]] == [True, True]
    # the command divides by the bound before rounding it (to 0.1): the printed figures give the ratio within 1%
    expected = report["ingest_messages_per_second"] / report["bound"]["turns_per_second"]
    assert report["ratio"] == pytest.approx(expected, rel=0.01, abs=0.001)
    assert report["per_message_ms"]["embedding"] > 0 and report["per_message_ms"]["sql"] > 0
    # and the processor time of both sides, so more work tells from waiting for a core
    assert report["per_message_cpu_ms"]["embedding"] > 0
    assert all(run["best_cpu_ms_per_turn"] > 0 for run in report["bound"]["runs"])
    assert report["reads_cpu"]["search"]["cpu_ms_per_read"] > 0 and report["reads_cpu"]["context"]["web_cores"] > 0
    # where a served read's time went: the view's phases (the front's wait and pool time only behind the front)
    assert report["reads_phases_ms"]["search"]["sql"][0] > 0 and report["reads_parts_ms"]["context"]["view"]["p95"] > 0
    assert "ratio" in out.getvalue() and "per ingested message" in out.getvalue()


@pytest.mark.django_db(transaction=True)  # the command VACUUMs, which cannot run inside a transaction
def test_bench_latency_grows_a_tenant_and_measures_both_endpoints(settings):
    # the hosts `make bench` runs with (base.py's default), not the test runner's extra "testserver": every
    # in-process request, the check before the timing included, goes out as production would take it
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]"]
    out = io.StringIO()
    call_command("bench_latency", "--sizes", "40,80", "--requests", "3", "--pool", "20", stdout=out)
    lines = [line for line in out.getvalue().splitlines() if "memories | GET /context" in line]
    assert len(lines) == 2 * 2  # one line per size as measured, again in the summary
    assert lines[0].startswith("     40 memories") and lines[1].startswith("     80 memories")
    assert "POST /memories/search" in lines[0]
    assert out.getvalue().count("machine reference (one query embedded back to back, uncached): p50 ") == 2
    assert re.search(r"p50 \d+\.\d\d ms before, \d+\.\d\d ms after", out.getvalue())
    assert not Tenant.objects.filter(slug__startswith="bench-latency").exists()


@pytest.mark.django_db(transaction=True)
def test_bench_latency_floor_times_the_parts_every_context_pays():
    """--floor: the web tier (GET /contacts/{id}), the query's embedding and the vector index alone, each with
    its p50 / p95, and the sum of the medians, which is what it says it is; beside it, outside the sum, the
    embedding with the caches cold (what a request pays)."""
    out = io.StringIO()
    call_command("bench_latency", "--sizes", "60", "--requests", "5", "--pool", "20", "--floor", stdout=out)
    lines = [line for line in out.getvalue().splitlines() if line.startswith("floor of GET /context")]
    assert len(lines) == 2  # as measured, again in the summary
    parts, _, beside = lines[0].partition(" | beside it: ")
    medians = [float(value) for value in re.findall(r"p50 (\d+\.\d) / p95 \d+\.\d ms", parts)]
    assert len(medians) == 3 and all(value > 0 for value in medians)
    for part in ("GET /contacts/{id}", "query embedding", "vector index alone"):
        assert part in parts
    assert re.fullmatch(r"query embedding, caches cold p50 \d+\.\d / p95 \d+\.\d ms", beside)
    total = float(re.search(r"sum of the medians (\d+\.\d) ms", parts).group(1))  # type: ignore[union-attr]
    assert abs(total - sum(medians)) <= 0.15  # each median printed rounded to 0.1
    assert not Tenant.objects.filter(slug__startswith="bench-latency").exists()


@pytest.mark.django_db(transaction=True)
def test_bench_latency_via_http_asks_a_live_server(live_server):
    """--via-http: the same measurement through a real socket (the command checks every answer is a 200)."""
    out = io.StringIO()
    call_command(
        "bench_latency",
        "--sizes",
        "40",
        "--requests",
        "3",
        "--pool",
        "20",
        "--via-http",
        "--url",
        live_server.url,
        stdout=out,
    )
    assert f"asking {live_server.url} over HTTP" in out.getvalue()
    assert "     40 memories | GET /context" in out.getvalue()
    assert not Tenant.objects.filter(slug__startswith="bench-latency").exists()


@pytest.mark.django_db(transaction=True)
def test_bench_latency_rows_look_ingested_and_every_measured_query_is_embedded(monkeypatch):
    """The synthetic rows carry what ingest gives real ones (episode context words, entity links), and no
    measured request reads its query vector from the embedding cache."""
    embedder = get_embedder()
    assert isinstance(embedder, CachedEmbedder)
    computed: list[str] = []
    inner_embed = embedder.inner.embed_batch

    def counting(texts):  # type: ignore[no-untyped-def]
        computed.extend(texts)
        return inner_embed(texts)

    monkeypatch.setattr(embedder.inner, "embed_batch", counting)
    call_command("bench_latency", "--sizes", "60", "--requests", "4", "--pool", "20", "--keep", stdout=io.StringIO())
    tenant = Tenant.objects.get(slug__startswith="bench-latency")
    episodes = Memory.objects.filter(tenant=tenant, memory_type="episode")
    assert episodes.exists() and not episodes.filter(context_vector__isnull=True).exists()
    linked = MemoryEntity.objects.filter(memory__tenant=tenant)
    assert linked.exists()
    for link in linked.select_related("memory", "entity")[:20]:
        assert link.entity.display_name in link.memory.content
        assert link.entity.contact_id == link.memory.contact_id  # one entity per scope
    asked = queries(4 + 10)[10:]  # after the 10 warm-up queries
    for query in asked:  # each measured query embedded in its request, by both endpoints
        assert computed.count(query) >= 2, query
    tenant.delete()


@pytest.mark.django_db
def test_hnsw_bloat_note_compares_the_index_with_its_live_rows():
    """An HNSW index larger than its embedded rows can fill is reported; the index of live rows is not."""
    assert hnsw_bloat_note() is None  # an empty table's index is far below the 50 MB slack
    note = hnsw_bloat_note(slack_bytes=0)  # no rows: any index page is more than they need
    assert note is not None and "for 0 embedded memories" in note and "VACUUM FULL" in note
