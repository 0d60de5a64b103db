"""Summaries for consolidation: the LLM when one is configured, a deterministic extractive fallback always.

No ORM imports. The fallback keeps names, numbers and dates (they score high on salience) so a
summary stays retrievable by the words the user actually said.
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from collections.abc import Sequence
from datetime import datetime

from apps.core.llm import LLMUnavailable, llm_complete_json, llm_is_configured
from apps.memories.extraction import salience
from apps.memories.retrieval.overlap import STOPWORDS

logger = logging.getLogger(__name__)

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{2,}")


def _strip_speaker(text: str) -> str:
    # episodes are stored as "Speaker: text"; summaries speak about the content
    return re.sub(r"^[^:\n]{1,40}:\s+", "", text.strip())


def _words(text: str) -> set[str]:
    """A text's content words for a pattern's topics: lower-cased, no function words, no contractions
    ("it's", "i'm": the stop list has their parts, not them)."""
    found = {word.lower().replace("\u2019", "'") for word in _WORD.findall(_strip_speaker(text))}
    return {word for word in found if "'" not in word and word not in STOPWORDS}


def document_frequencies(texts: Sequence[str]) -> Counter[str]:
    """In how many of `texts` each content word occurs: the background a pattern's topics stand out from."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(_words(text))
    return counts


def keywords(
    texts: Sequence[str],
    limit: int = 3,
    *,
    background: Counter[str] | None = None,
    background_size: int = 0,
    exclude: frozenset[str] = frozenset(),
) -> list[str]:
    """The words that say what `texts` are about: each word's count among them, weighted by how rare it is in
    the rest of the `background` (document frequencies over the scope's episodes, `background_size` of them,
    `texts` among them): "music" in 40 of 52 episodes about gigs, not "wow" or "photo", which are in every
    other message of the chat. A word is a topic only when it is more frequent among `texts` than in the rest.
    Without a background, or when `texts` are all of it, the most frequent. Words of `exclude` (the people the
    sentence already names) are left out."""
    counts = Counter({word: count for word, count in document_frequencies(texts).items() if word not in exclude})
    rest_size = background_size - len(texts)  # the background's other episodes (the texts are among them)
    if background is None or rest_size <= 0:
        return [word for word, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:limit]]
    rest = {word: max(0, background.get(word, 0) - count) for word, count in counts.items()}
    weighted = {
        word: count * math.log((rest_size + 1) / (rest[word] + 0.5))
        for word, count in counts.items()
        # said at least twice, and more often here than in the rest of the chat
        if (count >= 2 or len(texts) < 2) and count / len(texts) > rest[word] / rest_size
    }
    return [word for word, _ in sorted(weighted.items(), key=lambda item: (-item[1], item[0]))[:limit]]


def _name_words(name: str) -> frozenset[str]:
    return frozenset(word.lower() for word in re.findall(r"[A-Za-z]+", name))


def _span(dates: Sequence[datetime]) -> str:
    first, last = min(dates), max(dates)
    if first.date() == last.date():
        return f"on {first:%d %b %Y}"
    return f"between {first:%d %b %Y} and {last:%d %b %Y}"


def pattern_statement_offline(
    *,
    texts: Sequence[str],
    dates: Sequence[datetime],
    entity_name: str | None,
    subject: str = "",
    sessions: int = 0,
    background: Counter[str] | None = None,
    background_size: int = 0,
    aliases: frozenset[str] = frozenset(),
) -> str:
    """One sentence for a theme of episodes: who, what about (the theme's entity and its most telling words,
    against the scope's other episodes when `background` is given), how often (mentions, and in how many
    conversations when `sessions` is known), and when. The scope's `aliases` (what its people are also
    called: "cal" for Calvin) are names, never topics."""
    who = subject or "The contact"
    # "Calvin & Dave" talk; "Arjun" talks
    verb = "talk" if re.search(r"\s(&|and)\s", who) else "talks"
    exclude = _name_words(subject) | _name_words(entity_name or "") | aliases
    topics = keywords(texts, background=background, background_size=background_size, exclude=exclude)
    how_often = f"{len(texts)} mentions" + (f" in {sessions} conversations" if sessions > 1 else "")
    detail = f" ({', '.join(topics)})" if topics else ""
    if entity_name:
        return f"{who} frequently {verb} about {entity_name}{detail}: {how_often} {_span(dates)}"
    topic = ", ".join(topics) if topics else "the same theme"
    return f"{who} repeatedly {verb} about {topic}: {how_often} {_span(dates)}"


def session_summary_offline(*, texts: Sequence[str], subject: str = "", max_sentences: int = 3) -> str:
    """2–3 sentences: the most salient sentences of the session, in the order they were said."""
    sentences: list[tuple[int, str]] = []
    for text in texts:
        for sentence in _SENTENCE.split(_strip_speaker(text)):
            sentence = sentence.strip()
            if len(sentence.split()) >= 3:
                sentences.append((len(sentences), sentence[:240]))
    if not sentences:
        joined = " ".join(_strip_speaker(text) for text in texts)
        return joined[:400]
    ranked = sorted(sentences, key=lambda item: (-salience(item[1]), -len(item[1]), item[0]))[:max_sentences]
    chosen = [sentence.rstrip(".!?") + "." for _, sentence in sorted(ranked)]
    prefix = f"{subject} discussed: " if subject else "Discussed: "
    return prefix + " ".join(chosen)


PATTERN_SYSTEM = (
    "You compress a contact's episodes into ONE pattern sentence that will be remembered instead of them. "
    'Be specific, keep names and numbers. JSON only: {"pattern": "<one sentence>"}'
)
SESSION_SYSTEM = (
    "Summarize the following conversation into 2-3 sentences capturing key facts, decisions, and topics "
    "discussed. Be specific and preserve names, numbers, and technical details. Do not include pleasantries. "
    'JSON only: {"summary": "<2-3 sentences>"}'
)


def pattern_statement(
    *,
    texts: Sequence[str],
    dates: Sequence[datetime],
    entity_name: str | None,
    subject: str = "",
    tenant_id: str | None = None,
    sessions: int = 0,
    background: Counter[str] | None = None,
    background_size: int = 0,
    aliases: frozenset[str] = frozenset(),
) -> str:
    if llm_is_configured():
        try:
            episodes = "\n".join(f"- {date:%Y-%m-%d}: {text}" for date, text in zip(dates, texts, strict=True))
            result = llm_complete_json(
                system=PATTERN_SYSTEM,
                user=f"Contact: {subject or 'unknown'}\nEpisodes:\n{episodes}",
                purpose="pattern",
                tenant_id=tenant_id,
                max_tokens=200,
            )
            pattern = str(result.data.get("pattern", "")).strip()
            if pattern:
                return pattern[:500]
        except LLMUnavailable:
            logger.info("LLM unavailable: offline pattern summary")
    return pattern_statement_offline(
        texts=texts,
        dates=dates,
        entity_name=entity_name,
        subject=subject,
        sessions=sessions,
        background=background,
        background_size=background_size,
        aliases=aliases,
    )


def session_summary(*, texts: Sequence[str], subject: str = "", tenant_id: str | None = None) -> str:
    if llm_is_configured():
        try:
            result = llm_complete_json(
                system=SESSION_SYSTEM,
                user="Conversation:\n" + "\n".join(texts),
                purpose="session_summary",
                tenant_id=tenant_id,
                max_tokens=300,
            )
            summary = str(result.data.get("summary", "")).strip()
            if summary:
                return summary[:1200]
        except LLMUnavailable:
            logger.info("LLM unavailable: offline session summary")
    return session_summary_offline(texts=texts, subject=subject)
