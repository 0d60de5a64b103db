"""BEAM, 100K split (../shared/data/beam-100k, read in place, never copied): the second retrieval development
set, of another domain than LoCoMo — 20 long user↔assistant project chats (coding, maths, planning) over
dated sessions, 400 probing questions in 10 types with message-level evidence (its README).

Read as a Dataset (`datasets.py`): a conversation per chat, a session per batch, every message a turn (role
user or assistant, no speaker name); questions with evidence only (the abstention type has none, so it is not
a retrieval question). The metric is recall_any@k, headline over five types.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from apps.memories.benchmarks import datasets

TYPES = {
    "information_extraction": "extraction",
    "knowledge_update": "knowledge update",
    "multi_session_reasoning": "multi-session",
    "temporal_reasoning": "temporal",
    "contradiction_resolution": "contradiction",
    "instruction_following": "instruction",
    "preference_following": "preference",
    "event_ordering": "event ordering",
    "summarization": "summarization",
}
HEADLINE = ("extraction", "knowledge update", "multi-session", "temporal", "contradiction")
SPREAD_SECONDS = 30
# the dataset's own annotation at the end of user messages ("… ->-> 1,1"): not chat text
_MARKER = re.compile(r"\s*->->\s*\d+(?:\s*,\s*\d+)*\s*$")
_ANCHOR_LAYOUTS = ("%B-%d-%Y", "%b-%d-%Y")


def _anchor(text: str) -> datetime:
    for layout in _ANCHOR_LAYOUTS:
        try:
            return datetime.strptime(text.strip(), layout).replace(hour=12, tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"unknown BEAM time anchor: {text!r}")


def _flat(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _flat(item)
    elif isinstance(value, list):
        for item in value:
            yield from _flat(item)
    elif value is not None:
        yield value


def chat_turns(chat: list[dict[str, Any]], *, stamping: str, max_chars: int) -> list[datasets.Turn]:
    """A chat's messages in order; a batch is a session dated by its first time anchor (the batch before's
    date + 1 day when it has none). Messages longer than `max_chars` (the API's limit: 2 of 5,732) are cut."""
    if stamping not in ("session", "spread"):
        raise ValueError(f"unknown stamping {stamping!r}")
    found: list[datasets.Turn] = []
    previous: datetime | None = None
    for batch in sorted(chat, key=lambda item: int(item["batch_number"])):
        messages = [message for group in batch["turns"] for message in group]
        anchors = [message["time_anchor"] for message in messages if message.get("time_anchor")]
        if anchors:
            date = _anchor(anchors[0])
        elif batch.get("time_anchor"):
            date = _anchor(str(batch["time_anchor"]))
        else:
            date = (previous or datetime(2024, 1, 1, 12, tzinfo=UTC)) + timedelta(days=1)
        previous = date
        for index, message in enumerate(messages):
            text = _MARKER.sub("", str(message["content"])).strip()[:max_chars]
            if not text:
                continue
            at = date + timedelta(seconds=index * SPREAD_SECONDS) if stamping == "spread" else date
            found.append(
                datasets.Turn(
                    id=str(message["id"]),
                    session=int(batch["batch_number"]),
                    speaker="",
                    role=str(message["role"]),
                    text=text,
                    occurred_at=at,
                )
            )
    return found


def load(path: str | Path, *, stamping: str = "session", max_chars: int = 32_000) -> datasets.Dataset:
    root = Path(path)
    folders = sorted(
        (item for item in root.iterdir() if item.is_dir() and item.name.isdigit()), key=lambda p: int(p.name)
    )
    conversations = []
    questions = []
    for folder in folders:
        chat_id = f"beam-{folder.name}"
        turns = chat_turns(json.loads((folder / "chat.json").read_text()), stamping=stamping, max_chars=max_chars)
        conversations.append(datasets.Conversation(id=chat_id, turns=tuple(turns), display_name=f"BEAM {folder.name}"))
        known = {turn.id for turn in turns}
        probing = json.loads((folder / "probing_questions" / "probing_questions.json").read_text())
        for kind, items in probing.items():
            category = TYPES.get(kind)
            if category is None:
                continue  # abstention: no evidence to retrieve
            for item in items:
                evidence = tuple(dict.fromkeys(str(value) for value in _flat(item.get("source_chat_ids"))))
                evidence = tuple(value for value in evidence if value in known)
                if not evidence:
                    continue
                questions.append(
                    datasets.Question(
                        conversation=chat_id, text=str(item["question"]), category=category, evidence=evidence
                    )
                )
    return datasets.Dataset(
        name="BEAM",
        conversations=tuple(conversations),
        questions=tuple(questions),
        categories=tuple(TYPES.values()),
        headline=HEADLINE,
        metric="any",
    )
