import hashlib
import unicodedata
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import redis
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

from apps.core.embeddings import (
    CachedEmbedder,
    EmbedderUnavailable,
    LocalOnnxEmbedder,
    OpenAIEmbedder,
    SentenceTransformersEmbedder,
    cache_scope,
    content_hash,
    embed_one,
    get_embedder,
    reset_embedder,
)
from tests.fake_openai import fake_embedding, fake_openai_fixture  # noqa: F401 - the fake_openai fixture


class CountingEmbedder:
    """A real embedder (the local model) that records every batch it is asked to embed."""

    def __init__(self, name: str = "all-MiniLM-L6-v2") -> None:
        self.inner = LocalOnnxEmbedder()
        self.name = name
        self.dimensions = self.inner.dimensions
        self.calls: list[list[str]] = []

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return self.inner.embed_batch(texts)


@pytest.fixture(scope="module")
def local():
    return LocalOnnxEmbedder()


@pytest.fixture
def fresh_embedder():
    reset_embedder()
    yield
    reset_embedder()


def engram_settings(**changes):
    return override_settings(ENGRAM={**settings.ENGRAM, **changes})


# --- local ONNX model ----------------------------------------------------------------------------


def test_local_vectors_are_384_d_unit_float32(local):
    vectors = local.embed_batch(["I have a dog named Bruno", "The stock market fell today", ""])

    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_local_vectors_capture_meaning(local):
    dog, same_dog, stocks = local.embed_batch(
        ["I have a dog named Bruno", "My dog is called Bruno", "The stock market fell today"]
    )

    assert float(dog @ same_dog) > 0.8
    assert float(dog @ same_dog) > float(dog @ stocks) + 0.5


def test_batch_equals_one_by_one(local):
    # lengths vary and there are more texts than one sub-batch, so sorting and padding are exercised
    texts = [f"Sentence {index}: " + "the dog Bruno runs in the park " * (index % 7) for index in range(40)]

    batched = local.embed_batch(texts)
    one_by_one = np.vstack([embed_one(local, text) for text in texts])

    np.testing.assert_allclose(batched, one_by_one, atol=1e-5)


def test_text_is_truncated_at_256_tokens(local):
    long_text = "Bruno likes long walks by the river. " * 60  # far over 256 tokens

    base, with_tail = local.embed_batch([long_text, long_text + " The stock market fell today."])

    np.testing.assert_array_equal(base, with_tail)


def test_empty_batch(local):
    assert local.embed_batch([]).shape == (0, 384)


# --- Redis cache -----------------------------------------------------------------------------------


def test_cache_hit_returns_the_same_vector_without_calling_the_model():
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner)

    first = cached.embed_batch(["I have a dog named Bruno"])
    second = cached.embed_batch(["I have a dog named Bruno"])

    assert inner.calls == [["I have a dog named Bruno"]]
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(first, LocalOnnxEmbedder().embed_batch(["I have a dog named Bruno"]), atol=1e-6)


def test_cache_computes_only_misses_in_one_call_and_dedupes():
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner)
    cached.embed_batch(["alpha"])

    vectors = cached.embed_batch(["beta", "alpha", "gamma", "beta"])

    assert inner.calls == [["alpha"], ["beta", "gamma"]]
    assert vectors.shape == (4, 384)
    np.testing.assert_array_equal(vectors[0], vectors[3])
    np.testing.assert_allclose(vectors, LocalOnnxEmbedder().embed_batch(["beta", "alpha", "gamma", "beta"]), atol=1e-6)


def test_cache_stores_float32_bytes_with_ttl():
    cached = CachedEmbedder(CountingEmbedder(), ttl_seconds=600)

    vector = cached.embed_batch(["Bruno"])[0]

    client = redis.Redis.from_url(settings.REDIS_URL)
    key = cached.cache_key("Bruno")
    expected_digest = hashlib.sha256(b"all-MiniLM-L6-v2\0Bruno").hexdigest()
    assert key.endswith(expected_digest)
    assert client.get(key) == vector.astype(np.float32).tobytes()
    assert 0 < client.ttl(key) <= 600


def test_cache_is_per_scope_and_a_batch_spanning_scopes_embeds_each_text_once():
    """Tenants share no cache entries (a hit would tell one tenant what another embedded), and an ingest
    batch that spans contacts still makes one model call per distinct text."""
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner)
    ann, bob = cache_scope(tenant_id="t1", contact_id="ann"), cache_scope(tenant_id="t2", contact_id=None)

    cached.embed_batch(["Bruno"], scopes=ann)
    cached.embed_batch(["Bruno"], scopes=ann)
    cached.embed_batch(["Bruno"], scopes=bob)
    vectors = cached.embed_batch(["Luna", "Luna", "Bruno"], scopes=[ann, bob, bob])

    assert inner.calls == [["Bruno"], ["Bruno"], ["Luna"]]
    np.testing.assert_array_equal(vectors[0], vectors[1])
    client = redis.Redis.from_url(settings.REDIS_URL)
    assert client.exists(cached.cache_key("Luna", ann)) and client.exists(cached.cache_key("Luna", bob))
    assert cached.cache_key("Luna", ann).startswith("engram:embedding:t1:ann:")
    assert cached.cache_key("Luna", bob).startswith("engram:embedding:t2:tenant:")


def test_cache_is_per_model_name():
    first_model, second_model = CountingEmbedder("model-a"), CountingEmbedder("model-b")

    CachedEmbedder(first_model).embed_batch(["Bruno"])
    CachedEmbedder(second_model).embed_batch(["Bruno"])

    assert first_model.calls == [["Bruno"]]
    assert second_model.calls == [["Bruno"]]


def test_redis_down_still_computes():
    inner = CountingEmbedder()
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):
        cached = CachedEmbedder(inner)
        first = cached.embed_batch(["I have a dog named Bruno", "I have a dog named Bruno"])
        second = cached.embed_batch(["I have a dog named Bruno"])

    assert inner.calls == [["I have a dog named Bruno"], ["I have a dog named Bruno"]]
    np.testing.assert_allclose(first[0], second[0], atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)


# --- the process embedder --------------------------------------------------------------------------


def test_get_embedder_is_a_cached_local_singleton(fresh_embedder):
    with engram_settings(EMBEDDING_GRAPH="package"):  # the default, whatever the environment says
        embedder = get_embedder()

    assert isinstance(embedder, CachedEmbedder)
    assert isinstance(embedder.inner, LocalOnnxEmbedder)
    assert (embedder.name, embedder.dimensions) == ("all-MiniLM-L6-v2", 384)
    assert get_embedder() is embedder
    reset_embedder()
    assert get_embedder() is not embedder


def test_unknown_embedder_setting_is_refused(fresh_embedder):
    with engram_settings(EMBEDDER="word2vec"), pytest.raises(ImproperlyConfigured, match="word2vec"):
        get_embedder()


def test_sentence_transformers_missing_package_is_a_clear_error(fresh_embedder):
    with pytest.raises(EmbedderUnavailable, match="pip install sentence-transformers"):
        SentenceTransformersEmbedder("all-MiniLM-L6-v2")
    with engram_settings(EMBEDDER="sentence-transformers"), pytest.raises(EmbedderUnavailable):
        get_embedder()


# --- OpenAI-compatible endpoint --------------------------------------------------------------------


def test_openai_embedder_against_fake_server(fake_openai):
    embedder = OpenAIEmbedder(model="text-embedding-3-small", base_url=fake_openai.base_url + "/v1", api_key="test")

    vectors = embedder.embed_batch(["I have a dog named Bruno", "The stock market fell today"])

    assert vectors.shape == (2, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(vectors[0], fake_embedding("I have a dog named Bruno", 384), atol=1e-6)
    np.testing.assert_allclose(vectors[1], fake_embedding("The stock market fell today", 384), atol=1e-6)
    [request] = fake_openai.embedding_requests
    assert request.body["model"] == "text-embedding-3-small"
    assert request.body["dimensions"] == 384
    assert request.body["input"] == ["I have a dog named Bruno", "The stock market fell today"]
    assert request.headers["authorization"] == "Bearer test"


def test_openai_embedder_sends_at_most_256_inputs_per_request(fake_openai):
    embedder = OpenAIEmbedder(model="text-embedding-3-small", base_url=fake_openai.base_url + "/v1", api_key="test")
    texts = [f"memory number {index}" for index in range(300)]

    vectors = embedder.embed_batch(texts)

    assert vectors.shape == (300, 384)
    assert [len(request.body["input"]) for request in fake_openai.embedding_requests] == [256, 44]
    np.testing.assert_allclose(vectors[299], fake_embedding("memory number 299", 384), atol=1e-6)


def test_openai_embedder_from_settings(fake_openai, fresh_embedder):
    with engram_settings(EMBEDDER="openai", EMBEDDING_BASE_URL=fake_openai.base_url + "/v1", EMBEDDING_API_KEY="k"):
        embedder = get_embedder()
        vector = embed_one(embedder, "Bruno")

    assert embedder.name == "text-embedding-3-small"  # the local model's name is not sent to OpenAI
    np.testing.assert_allclose(vector, fake_embedding("Bruno", 384), atol=1e-6)
    assert fake_openai.embedding_requests[0].body["model"] == "text-embedding-3-small"


def test_openai_embedder_server_down_is_unavailable():
    embedder = OpenAIEmbedder(base_url="http://127.0.0.1:1/v1", api_key="test", timeout=1, max_retries=0)

    with pytest.raises(EmbedderUnavailable, match="text-embedding-3-small"):
        embedder.embed_batch(["Bruno"])


# --- exact duplicates --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("I have a dog named Bruno.", "i have a dog named bruno"),
        ("I have a dog named Bruno!!!", "I have a dog named Bruno"),
        ("I have a dog\n\tnamed   Bruno", "I have a dog named Bruno"),
        ("  I have a dog named Bruno ?! ", "I have a dog named Bruno"),
        (unicodedata.normalize("NFD", "Café Olé"), unicodedata.normalize("NFC", "café olé")),
    ],
    ids=["case-and-full-stop", "exclamations", "whitespace", "padding-and-mixed-punctuation", "nfc"],
)
def test_content_hash_equal_after_normalisation(first, second):
    assert content_hash(first) == content_hash(second)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("I have a dog named Bruno", "I have a cat named Bruno"),
        ("e.g. Bruno", "eg Bruno"),  # only trailing punctuation is dropped
        ("Bruno, my dog", "Bruno my dog"),
    ],
    ids=["different-words", "inner-full-stops", "inner-comma"],
)
def test_content_hash_differs_for_different_text(first, second):
    assert content_hash(first) != content_hash(second)


def test_content_hash_is_sha256_of_the_normalised_text():
    assert content_hash("  Hello,   World!  ") == hashlib.sha256(b"hello, world").hexdigest()


def test_a_batch_split_over_callers_gives_the_vectors_of_one_caller():
    """Sub-batches run on one thread per caller (ENGRAM_EMBEDDING_CALLERS): the same vectors, in order."""
    texts = [f"Turn {index}: " + "we walked the dog Bruno along the river " * (index % 5) for index in range(70)]
    alone = LocalOnnxEmbedder(batch_size=8, callers=1).embed_batch(texts)
    shared = LocalOnnxEmbedder(batch_size=8, callers=3).embed_batch(texts)

    np.testing.assert_array_equal(shared, alone)


@pytest.mark.django_db
def test_vectors_are_stored_as_float16_and_read_back_from_their_binary_form(tenant):
    """vector_text's 9 digits round-trip every float32 (what is sent); the column is halfvec, so what is stored
    is each float's nearest float16, and vector_send(embedding::vector) bytes decode to exactly those."""
    from django.db import connection

    from apps.core.vectors import vector_from_send, vector_text
    from tests.factories import MemoryFactory

    rng = np.random.default_rng(7)
    vector = rng.normal(size=384).astype(np.float32)
    vector /= np.linalg.norm(vector)  # embeddings are unit vectors: every component within float16's range
    vector[:4] = [1e-6, -0.999, 0.1, 1 / 3]  # subnormal in float16, near -1, and decimals neither holds exactly
    memory = MemoryFactory(tenant=tenant, embedding=vector)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT vector_send(embedding::vector), embedding::text, pg_column_size(embedding) "
            "FROM memories_memory WHERE id = %s",
            [memory.pk],
        )
        sent, text, size = cursor.fetchone()
    stored = vector.astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(vector_from_send(sent), stored)
    np.testing.assert_array_equal(np.asarray(text[1:-1].split(","), dtype=np.float32), stored)
    assert size == 8 + 2 * 384  # 2 bytes a dimension after 8 of header (a vector column: 8 + 4 * 384 = 1,544)
    np.testing.assert_array_equal(np.asarray(vector_text(vector)[1:-1].split(","), dtype=np.float32), vector)


@pytest.fixture
def tampered_model(tmp_path, monkeypatch):
    """A copy of the installed model with one byte changed, where the local embedder loads its files from."""
    from apps.core import embeddings

    model_path, tokenizer_path = embeddings._model_files()
    copy = tmp_path / "model.onnx"
    data = bytearray(Path(model_path).read_bytes())
    data[len(data) // 2] ^= 0x01
    copy.write_bytes(bytes(data))
    monkeypatch.setattr(embeddings, "_model_files", lambda: (str(copy), tokenizer_path))
    monkeypatch.setattr(embeddings, "_onnx_runtimes", {})  # loaded again, from the tampered copy
    return copy


def test_the_installed_model_files_have_the_expected_sha256():
    from apps.core import embeddings

    model_path, tokenizer_path = embeddings._model_files()
    assert hashlib.sha256(Path(model_path).read_bytes()).hexdigest() == embeddings.MODEL_SHA256
    assert hashlib.sha256(Path(tokenizer_path).read_bytes()).hexdigest() == embeddings.TOKENIZER_SHA256


@pytest.mark.django_db
def test_a_model_file_with_another_sha256_is_refused_at_load_with_a_clear_error(tampered_model, api):
    from apps.core.embeddings import MODEL_SHA256, ModelFileMismatch

    with pytest.raises(ModelFileMismatch) as refused:
        LocalOnnxEmbedder().embed_batch(["hello"])
    reason = str(refused.value)
    assert str(tampered_model) in reason and f"expected {MODEL_SHA256}" in reason
    assert hashlib.sha256(tampered_model.read_bytes()).hexdigest() in reason

    reset_embedder()
    try:
        search = api.post("/api/v1/memories/search", {"query": "a question never asked 51ab"}, format="json")
        assert search.status_code == 503 and search.json()["error"]["code"] == "embedder_unavailable"
        assert str(tampered_model) not in search.content.decode()
    finally:
        reset_embedder()


# --- the int8 graph (ENGRAM_EMBEDDING_GRAPH=int8) ------------------------------------------------------------


@pytest.fixture
def model_dir(tmp_path, monkeypatch):
    """A model directory of this test's own, so the int8 graph is derived here from the package's file."""
    from apps.core import embeddings

    monkeypatch.setattr(embeddings, "_onnx_runtimes", {})
    with engram_settings(MODEL_DIR=str(tmp_path / "models")):
        yield tmp_path / "models"


@pytest.fixture
def on_any_cpu(model_dir, monkeypatch):
    """The int8 graph loaded whatever this CPU's integer kernels give: the tests that use this are about what holds
    on every CPU (its derivation, its pinned file, one text per run, the thresholds' scale). Whether this CPU may
    run it is the load check's, tested on its own below: an AVX2-only CPU refuses it ("ok" at 0.968, session 52)."""
    from apps.core import embeddings

    monkeypatch.setattr(embeddings, "MIN_AGREEMENT", 0.0)
    return model_dir


def test_the_int8_graph_is_derived_once_and_embeds_as_the_package_s_graph_does(on_any_cpu):
    model_dir = on_any_cpu
    texts = ["What did Caroline research?", "I went to the LGBTQ support group yesterday; it was so powerful.", "ok"]
    int8, package = LocalOnnxEmbedder(graph="int8"), LocalOnnxEmbedder(graph="package")
    assert int8.name == "all-MiniLM-L6-v2+int8" and package.name == "all-MiniLM-L6-v2"  # stored vectors tell them apart
    vectors = int8.embed_batch(texts)
    (derived,) = model_dir.iterdir()  # derived from the package's verified file, nothing else left there
    from apps.core.embeddings import INT8_SHA256

    assert hashlib.sha256(derived.read_bytes()).hexdigest() == INT8_SHA256
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    agreement = (vectors * package.embed_batch(texts)).sum(axis=1)
    # the same model, integer products: close to, not equal to, the float ones (least: "ok", 0.982 with VNNI
    # instructions, 0.968 with AVX2 alone)
    assert agreement.min() > 0.96
    assert agreement.max() < 0.99999
    # and it ranks as the model does: the paraphrase above the unrelated text
    query, close, far = int8.embed_batch(["my dog's name", "I have a dog named Bruno", "the invoice is overdue"])
    assert query @ close > query @ far + 0.2


def test_the_int8_graph_gives_a_text_the_same_vector_alone_and_beside_others(on_any_cpu):
    """Its products quantize their whole input with one scale: in a batch, a text's vector would depend on the
    other texts and their padding. It embeds one text per run, so a cached vector is the text's own."""
    texts = ["ok", "I went to the LGBTQ support group yesterday; it was so powerful.", "What did Caroline research?"]
    int8 = LocalOnnxEmbedder(graph="int8", batch_size=8, callers=2)
    assert int8.batch_size == 1
    together = int8.embed_batch(texts * 3)
    for position, text in enumerate(texts):
        np.testing.assert_array_equal(together[position], int8.embed_batch([text])[0])
        np.testing.assert_array_equal(together[position + 3], together[position])


def test_a_derived_int8_graph_with_another_sha256_is_refused_and_derived_again_next_time(on_any_cpu):
    from apps.core import embeddings

    model_dir = on_any_cpu
    LocalOnnxEmbedder(graph="int8").embed_batch(["hello"])
    (derived,) = model_dir.iterdir()
    data = bytearray(derived.read_bytes())
    data[len(data) // 2] ^= 0x01
    derived.write_bytes(bytes(data))
    embeddings._onnx_runtimes.clear()
    refusal = f"{derived} has sha256 .*, expected {embeddings.INT8_SHA256}"
    with pytest.raises(embeddings.ModelFileMismatch, match=refusal):
        LocalOnnxEmbedder(graph="int8").embed_batch(["hello"])
    assert not derived.exists()  # removed: the next load derives it again
    assert LocalOnnxEmbedder(graph="int8").embed_batch(["hello"]).shape == (1, 384)
    assert hashlib.sha256(derived.read_bytes()).hexdigest() == embeddings.INT8_SHA256


def test_an_unknown_graph_is_a_configuration_error(fresh_embedder):
    with engram_settings(EMBEDDING_GRAPH="fp16"), pytest.raises(ImproperlyConfigured, match="'package', 'int8'"):
        get_embedder()
    # and every manage.py command (runstack, migrate, check) stops on it at start, naming the variable
    with engram_settings(EMBEDDING_GRAPH="fp16"), pytest.raises(SystemCheckError, match=r"engram\.E020.*'fp16'"):
        call_command("check")
    call_command("check")  # the default passes


def test_a_threshold_set_on_the_package_graph_is_read_on_the_configured_graph_s_scale():
    from apps.core.embeddings import cosine_threshold

    with engram_settings(EMBEDDING_GRAPH="package"):
        assert cosine_threshold(0.92) == 0.92
    with engram_settings(EMBEDDING_GRAPH="int8"):
        assert cosine_threshold(0.92) == pytest.approx(0.915)
        assert cosine_threshold(0.55) == pytest.approx(0.545)
    with engram_settings(EMBEDDER="openai", EMBEDDING_GRAPH="int8"):
        assert cosine_threshold(0.92) == 0.92  # another backend's scale is not the local graphs'


@pytest.mark.django_db
@pytest.mark.parametrize("graph", ["package", "int8"])
def test_either_graph_merges_a_pair_the_package_graph_puts_just_above_the_merge_threshold(
    graph, on_any_cpu, fresh_embedder, tenant
):
    """The int8 graph scores the same pair ~0.005 lower: 0.924 on the package graph, 0.919 on the int8 graph for
    these two, which a merge threshold left at 0.92 kept apart on the int8 graph."""
    from apps.memories.lifecycle.deferred import near_duplicates_merge
    from apps.memories.models import Memory
    from tests.factories import ContactFactory, MemoryFactory

    with engram_settings(EMBEDDING_GRAPH=graph):
        reset_embedder()
        contact = ContactFactory(tenant=tenant)
        pair = [
            MemoryFactory(tenant=tenant, contact=contact, memory_type="preference", content=text)
            for text in ("Prefers tea over coffee", "Prefers tea over coffee since college")
        ]
        assert near_duplicates_merge(tenant=tenant, contact=contact) == 1
    assert Memory.objects.filter(pk__in=[memory.pk for memory in pair], valid_to__isnull=False).count() == 1


def test_the_int8_graph_is_checked_against_the_package_graph_on_this_cpu_when_it_loads(model_dir, monkeypatch):
    """What this CPU's integer kernels give decides: a CPU whose vectors agree with the package graph's loads it
    (AVX-512 VNNI: 0.982 at least); one whose vectors do not is refused with the figure (AVX2 alone: 0.968)."""
    from apps.core import embeddings

    required = embeddings.MIN_AGREEMENT
    with monkeypatch.context() as unchecked:
        unchecked.setattr(embeddings, "MIN_AGREEMENT", 0.0)
        agreement = embeddings.graph_agreement(LocalOnnxEmbedder(graph="int8").load())
    assert 0.9 < agreement < 0.9999  # measured on this CPU: close to the float vectors, never equal to them
    embeddings._onnx_runtimes.clear()
    if agreement >= required:
        assert embeddings.graph_agreement(LocalOnnxEmbedder(graph="int8").load()) == pytest.approx(agreement)
    else:
        with pytest.raises(embeddings.GraphDisagrees, match=rf"on this CPU its vectors lie at cosine {agreement:.3f}"):
            LocalOnnxEmbedder(graph="int8").load()


@pytest.mark.django_db
def test_an_int8_graph_whose_vectors_disagree_on_this_cpu_is_refused_with_a_clear_error(model_dir, monkeypatch, api):
    """A CPU whose integer kernels give other vectors (stood for by an agreement no graph reaches): the embedder
    refuses the graph, naming the variable and the way out, and the API answers 503 instead of storing vectors
    unlike every other."""
    from apps.core import embeddings

    monkeypatch.setattr(embeddings, "MIN_AGREEMENT", 0.99999)
    with pytest.raises(embeddings.GraphDisagrees, match=r"ENGRAM_EMBEDDING_GRAPH = 'int8': on this CPU .* cosine 0\.9"):
        LocalOnnxEmbedder(graph="int8").embed_batch(["hello"])
    assert "int8" not in {graph for _, graph in embeddings._onnx_runtimes}  # not kept: asked again next time
    with engram_settings(EMBEDDING_GRAPH="int8"):
        reset_embedder()
        try:
            search = api.post("/api/v1/memories/search", {"query": "a question never asked 51cd"}, format="json")
            assert search.status_code == 503 and search.json()["error"]["code"] == "embedder_unavailable"
        finally:
            reset_embedder()
