"""What a memory is indexed with beside its text and days, searched and not embedded.

A memory's `index_terms` are its days (an episode's: `8 May 2023`, embedded with its text) and, after
INDEX_ONLY_SEPARATOR, words its text implies but does not say: the places it names and what contains them
(extraction/places.py: `in Tampa` → `city Florida state USA America`) and the kinds of what it names
(extraction/kinds.py: `my turtles` → `pet animal`), and the words of the question a reply answers that it
does not say itself ("Is that your third one?" / "Yep! It's about loss…" → `third`). Full-text search reads
all of them; the embedding only the days (apps/core/embeddings.py `memory_text`), so these words change no
vector and no duplicate check.

Pure (no Django).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apps.core.embeddings import INDEX_ONLY_SEPARATOR
from apps.memories.extraction.kinds import kind_terms
from apps.memories.extraction.places import place_terms


def with_index_words(index_terms: str, text: str, *, limit: int, metadata: Mapping[str, Any] | None = None) -> str:
    """`index_terms`' embedded part (an episode's days), then INDEX_ONLY_SEPARATOR and the words `text`
    implies (places first, then kinds), then the words of the question a reply answers (`metadata.asked`:
    extraction/answers.asked_words), as many whole words as fit in `limit` characters:
    '8 May 2023 | city Florida state USA America pet animal third'. A chunk of a message split in more than
    one (`metadata.chunks`: an assistant's long reply, a pasted document) gets none: it names places and
    dishes in passing ("set in Toronto", a recipe list), and its kind words outranked the user's own short
    turn that said what they want ("Any food ideas?" against "remember that I am vegetarian")."""
    metadata = metadata or {}
    if chunks_of(metadata) > 1:
        return index_terms.partition(INDEX_ONLY_SEPARATOR)[0].strip()
    words = list(dict.fromkeys([*place_terms(text), *kind_terms(text), *asked_in(metadata)]))
    return with_index_only(index_terms.partition(INDEX_ONLY_SEPARATOR)[0].strip(), words, limit=limit)


def with_index_only(embedded: str, words: list[str], *, limit: int) -> str:
    """`embedded` followed by as many of `words` as fit in `limit` characters, after INDEX_ONLY_SEPARATOR."""
    kept: list[str] = []
    length = len(embedded) + len(INDEX_ONLY_SEPARATOR) + 2
    for word in words:
        if length + len(word) > limit:
            break
        kept.append(word)
        length += len(word) + 1
    return f"{embedded} {INDEX_ONLY_SEPARATOR} {' '.join(kept)}".strip() if kept else embedded


def index_only_words(index_terms: str) -> list[str]:
    """The words of `index_terms` that are searched and not embedded."""
    return index_terms.partition(INDEX_ONLY_SEPARATOR)[2].split()


def chunks_of(metadata: Mapping[str, Any]) -> int:
    """How many chunks the memory's message was split into (ingest's `metadata.chunks`); 1 for a whole
    message, and for anything else a client may have set the key to."""
    chunks = metadata.get("chunks", 1)
    return chunks if isinstance(chunks, int) and not isinstance(chunks, bool) and chunks > 1 else 1


def asked_in(metadata: Mapping[str, Any]) -> tuple[str, ...]:
    """The words of the question a memory's reply answers, as ingest recorded them (`metadata.asked`); only
    words (a client may have set the key to anything)."""
    asked = metadata.get("asked")
    if not isinstance(asked, list):
        return ()
    return tuple(word for word in asked if isinstance(word, str) and word.isprintable() and len(word) <= 40)
