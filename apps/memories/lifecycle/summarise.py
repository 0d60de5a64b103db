"""Summaries for consolidation: the LLM when one is configured, a deterministic extractive fallback always.

No ORM imports. The fallback keeps names, numbers and dates (they score high on salience) so a
summary stays retrievable by the words the user actually said.
"""

from __future__ import annotations

import logging
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


def keywords(texts: Sequence[str], limit: int = 3) -> list[str]:
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update({word.lower() for word in _WORD.findall(_strip_speaker(text)) if word.lower() not in STOPWORDS})
    return [word for word, _ in counts.most_common(limit)]


def _span(dates: Sequence[datetime]) -> str:
    first, last = min(dates), max(dates)
    if first.date() == last.date():
        return f"on {first:%d %b %Y}"
    return f"between {first:%d %b %Y} and {last:%d %b %Y}"


def pattern_statement_offline(
    *, texts: Sequence[str], dates: Sequence[datetime], entity_name: str | None, subject: str = ""
) -> str:
    who = subject or "The contact"
    topics = keywords(texts)
    detail = f" ({', '.join(topics)})" if topics else ""
    if entity_name:
        return f"{who} frequently talks about {entity_name}{detail}: {len(texts)} mentions {_span(dates)}"
    topic = ", ".join(topics) if topics else "the same theme"
    return f"{who} repeatedly talks about {topic}: {len(texts)} conversations {_span(dates)}"


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
    return pattern_statement_offline(texts=texts, dates=dates, entity_name=entity_name, subject=subject)


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
