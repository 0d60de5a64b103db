import hashlib
import os

import pytest
from django.conf import settings
from django.test import override_settings

from apps.core import tokens
from apps.core.tokens import (
    BPE_FILES,
    TokenizerUnavailable,
    count_tokens,
    count_tokens_batch,
    get_encoding,
    reset_encoding,
    seed_tiktoken_cache,
    truncate_to_tokens,
)

CL100K_CACHE_NAME = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"  # sha1 of the cl100k_base blob URL


@pytest.fixture
def fresh_encoding(monkeypatch):
    """Load the encoding again in this test, and leave a fresh state behind for the next one."""
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)  # restored after the test
    reset_encoding()
    yield
    reset_encoding()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hello world", 2),
        ("Hello, world!", 4),
        ("The quick brown fox jumps over the lazy dog.", 10),
        ("", 0),
        ("Bruno 🐶", 5),
        ("こんにちは世界", 4),
        ("<|endoftext|>", 7),  # special tokens are ordinary text here, never a control token
    ],
    ids=["hello-world", "punctuation", "pangram", "empty", "emoji", "japanese", "special-token-as-text"],
)
def test_count_tokens_cl100k(text, expected):
    assert count_tokens(text) == expected


def test_count_tokens_batch_matches_single_counts():
    texts = ["hello world", "The quick brown fox jumps over the lazy dog.", "", "Bruno 🐶"]

    assert count_tokens_batch(texts) == [2, 10, 0, 5]
    assert count_tokens_batch([]) == []


@pytest.mark.parametrize(
    ("text", "max_tokens", "expected"),
    [
        ("The quick brown fox jumps over the lazy dog.", 4, "The quick brown fox"),
        ("The quick brown fox jumps over the lazy dog.", 10, "The quick brown fox jumps over the lazy dog."),
        ("The quick brown fox jumps over the lazy dog.", 50, "The quick brown fox jumps over the lazy dog."),
        ("hello world", 0, ""),
        ("Bruno 🐶 wags", 3, "Bruno "),  # the cut falls inside the emoji's bytes: the partial character is dropped
        ("Bruno 🐶 wags", 5, "Bruno 🐶"),
    ],
    ids=["cut", "exact-fit", "fits", "zero", "inside-multibyte", "after-multibyte"],
)
def test_truncate_to_tokens(text, max_tokens, expected):
    assert truncate_to_tokens(text, max_tokens) == expected


def test_encoding_is_loaded_once():
    assert get_encoding() is get_encoding()
    assert get_encoding().name == "cl100k_base"


def test_seeds_an_empty_cache_dir_offline(tmp_path, fresh_encoding):
    cache_dir = tmp_path / "tiktoken"
    assert not cache_dir.exists()

    with override_settings(TIKTOKEN_CACHE_DIR=str(cache_dir)):
        assert count_tokens("hello world") == 2

    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(cache_dir)
    assert sorted(path.name for path in cache_dir.iterdir()) == [CL100K_CACHE_NAME]  # no temporary file left
    seeded = (cache_dir / CL100K_CACHE_NAME).read_bytes()
    assert hashlib.sha256(seeded).hexdigest() == BPE_FILES["cl100k_base"].sha256


def test_seeding_replaces_a_corrupt_cache_file(tmp_path):
    corrupt = tmp_path / CL100K_CACHE_NAME
    corrupt.write_bytes(b"not a bpe file")

    path = seed_tiktoken_cache(tmp_path, "cl100k_base")

    assert path == corrupt
    assert hashlib.sha256(path.read_bytes()).hexdigest() == BPE_FILES["cl100k_base"].sha256


def test_seeding_keeps_a_valid_cache_file(tmp_path):
    path = seed_tiktoken_cache(tmp_path, "cl100k_base")
    modified = path.stat().st_mtime_ns

    assert seed_tiktoken_cache(tmp_path, "cl100k_base") == path
    assert path.stat().st_mtime_ns == modified


def test_o200k_base_works_offline(tmp_path, fresh_encoding):
    engram = {**settings.ENGRAM, "TIKTOKEN_ENCODING": "o200k_base"}
    with override_settings(TIKTOKEN_CACHE_DIR=str(tmp_path), ENGRAM=engram):
        assert get_encoding().name == "o200k_base"
        assert count_tokens("hello world") == 2
        assert count_tokens("こんにちは世界") == 2  # cl100k_base: 4


def test_encoding_without_a_bundled_file_is_refused(tmp_path):
    with pytest.raises(TokenizerUnavailable, match="r50k_base"):
        seed_tiktoken_cache(tmp_path, "r50k_base")

    assert list(tmp_path.iterdir()) == []


def test_reset_encoding_forgets_the_loaded_encoding():
    loaded = get_encoding()

    reset_encoding()

    assert tokens._encoding is None
    assert get_encoding() is not loaded
