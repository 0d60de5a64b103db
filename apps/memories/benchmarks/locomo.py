"""The LoCoMo dataset (../shared/data/locomo10.json, read in place, never copied), shared by the in-process
diagnostic and the end-to-end benchmark over HTTP.

R@k is LoCoMo's definition: the share of a question's evidence turns among the first k distinct turns
retrieved (returned memories map back to turns through their provenance, their source message ids;
`datasets.py`). The ten conversations are split in two halves by conversation: retrieval is tuned on
TUNE_HALF and reported on REPORT_HALF as well as whole (docs/benchmarks.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from apps.memories.benchmarks import datasets
from apps.memories.benchmarks.datasets import KS, percentiles, ranked_turns, recall_at

__all__ = ["CATEGORIES", "KS", "load", "percentiles", "ranked_turns", "recall_at", "speakers", "turns"]

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
# tuned on the first five conversations, reported on the other five (and on the whole set)
TUNE_HALF = frozenset({"conv-26", "conv-30", "conv-41", "conv-42", "conv-43"})
REPORT_HALF = frozenset({"conv-44", "conv-47", "conv-48", "conv-49", "conv-50"})
SPREAD_SECONDS = 30  # `spread` stamping: the session's time, then one turn every 30 s


def parse_session_date(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' → aware datetime (UTC)."""
    cleaned = re.sub(r"\s+", " ", text.strip())
    for layout in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y"):
        try:
            return datetime.strptime(cleaned, layout).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"unknown LoCoMo date: {text!r}")


def evidence_ids(raw: list[Any]) -> list[str]:
    ids: list[str] = []
    for item in raw:
        ids += [part for part in re.split(r"[;,\s]+", str(item)) if part]
    return ids


def turn_text(turn: dict[str, Any], *, text_key: str = "text") -> str:
    """A turn's text, and a shared photo's caption after it: how a chat client hands an image to a text memory
    (`text_key`: where the set keeps the text; the chats layout's `clean_text`)."""
    text = str(turn.get(text_key) or "").strip()
    caption = turn.get("blip_caption")
    if caption:
        text = f"{text} [shares a photo: {caption}]".strip()
    return text


def sessions(conversation: dict[str, Any]) -> list[tuple[int, datetime, list[dict[str, Any]]]]:
    found = []
    for key, turns in conversation.items():
        match = re.fullmatch(r"session_(\d+)", key)
        if match and isinstance(turns, list):
            number = int(match.group(1))
            found.append((number, parse_session_date(conversation[f"session_{number}_date_time"]), turns))
    return sorted(found)


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    speaker: str
    text: str
    occurred_at: datetime
    shares_media: bool = False


def turns(sample: dict[str, Any], *, stamping: str = "spread") -> list[Turn]:
    """A conversation's turns in order. `stamping`: `session` gives every turn its session's date and time
    (all the dataset has: the turns of a session tie), `spread` adds SPREAD_SECONDS per turn."""
    if stamping not in ("session", "spread"):
        raise ValueError(f"unknown stamping {stamping!r}")
    found: list[Turn] = []
    for number, date, session_turns in sessions(sample["conversation"]):
        for index, turn in enumerate(session_turns):
            text = turn_text(turn)
            if not text:
                continue
            at = date + timedelta(seconds=index * SPREAD_SECONDS) if stamping == "spread" else date
            found.append(Turn(turn["dia_id"], number, turn["speaker"], text, at, bool(turn.get("blip_caption"))))
    return found


def speakers(sample: dict[str, Any]) -> str:
    conversation = sample["conversation"]
    return f"{conversation.get('speaker_a', '')} & {conversation.get('speaker_b', '')}"


def load(data: list[dict[str, Any]], *, stamping: str = "session") -> datasets.Dataset:
    """The parsed JSON as a Dataset: a conversation per sample (its speakers the turns' roles: both "user",
    as a two-person chat is ingested), questions with their evidence dia_ids."""
    conversations = []
    questions = []
    for sample in data:
        sample_id = str(sample["sample_id"])
        conversations.append(
            datasets.Conversation(
                id=sample_id,
                turns=tuple(
                    datasets.Turn(
                        id=turn.dia_id,
                        session=turn.session,
                        speaker=turn.speaker,
                        role="user",
                        text=turn.text,
                        occurred_at=turn.occurred_at,
                        shares_media=turn.shares_media,
                    )
                    for turn in turns(sample, stamping=stamping)
                ),
                display_name=speakers(sample),
            )
        )
        for qa in sample["qa"]:
            questions.append(
                datasets.Question(
                    conversation=sample_id,
                    text=str(qa["question"]),
                    category=CATEGORIES[int(qa["category"])],
                    evidence=tuple(evidence_ids(qa.get("evidence", []))),
                    answer=str(qa.get("answer", qa.get("adversarial_answer", ""))),
                )
            )
    ids = {conversation.id for conversation in conversations}
    return datasets.Dataset(
        name="LoCoMo",
        conversations=tuple(conversations),
        questions=tuple(questions),
        categories=tuple(CATEGORIES.values()),
        headline=tuple(CATEGORIES.values()),
        metric="R",
        splits={"tune half": TUNE_HALF & ids, "report half": REPORT_HALF & ids},
    )
