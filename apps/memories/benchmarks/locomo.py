"""The LoCoMo dataset (../shared/data/locomo10.json, read in place, never copied) and its recall metric,
shared by the in-process diagnostic and the end-to-end benchmark over HTTP.

R@k is LoCoMo's definition: the share of a question's evidence turns among the first k distinct turns
retrieved (returned memories map back to turns through their provenance, their source message ids).
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
KS = (5, 10, 25)
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


def turn_text(turn: dict[str, Any]) -> str:
    text = str(turn.get("text", "")).strip()
    caption = turn.get("blip_caption")
    if caption:
        # how a chat client hands an image to a text memory: its caption
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
            found.append(Turn(turn["dia_id"], number, turn["speaker"], text, at))
    return found


def speakers(sample: dict[str, Any]) -> str:
    conversation = sample["conversation"]
    return f"{conversation.get('speaker_a', '')} & {conversation.get('speaker_b', '')}"


def recall_at(ranked_turns: Sequence[str], evidence: Sequence[str], k: int) -> float:
    if not evidence:
        return 1.0
    top = set(ranked_turns[:k])
    return sum(1 for item in evidence if item in top) / len(evidence)


def ranked_turns(sources_per_result: Iterable[Sequence[str]]) -> list[str]:
    """Results in rank order, each with its source message ids → the distinct turns in the order met."""
    ranked: list[str] = []
    seen: set[str] = set()
    for sources in sources_per_result:
        for message_id in sources:
            if message_id not in seen:
                seen.add(message_id)
                ranked.append(message_id)
    return ranked


@dataclass
class Recall:
    """R@k per category, filled question by question."""

    values: dict[str, dict[int, list[float]]] = field(default_factory=lambda: {f"R@{k}": defaultdict(list) for k in KS})

    def add(self, *, category: int, ranked: Sequence[str], evidence: Sequence[str]) -> None:
        for k in KS:
            self.values[f"R@{k}"][category].append(recall_at(ranked, evidence, k))

    def mean(self, key: str, category: int | None = None) -> float:
        cells = self.values[key]
        values = [v for vs in cells.values() for v in vs] if category is None else cells[category]
        return round(sum(values) / len(values), 4) if values else 0.0

    def count(self, category: int | None = None) -> int:
        cells = self.values["R@5"]
        return sum(len(vs) for vs in cells.values()) if category is None else len(cells[category])

    def figures(self) -> dict[str, dict[str, float]]:
        rows = [*CATEGORIES.items(), (None, "overall")]
        return {name: {f"R@{k}": self.mean(f"R@{k}", category) for k in KS} for category, name in rows}


def recall_table(columns: dict[str, Recall], *, k: int | None = None) -> str:
    """One row per category; a column per measured condition (all of R@5/10/25, or only R@k)."""
    ks = (k,) if k else KS
    header = "category          n   " + "".join(f"{name + ' R@' + str(kk):>22}" for name in columns for kk in ks)
    rows = [header]
    any_recall = next(iter(columns.values()))
    for category, name in [*CATEGORIES.items(), (None, "overall")]:
        cells = "".join(f"{recall.mean(f'R@{kk}', category):>22.3f}" for recall in columns.values() for kk in ks)
        rows.append(f"{name:<16} {any_recall.count(category):>4}  {cells}")
    return "\n".join(rows)


def percentiles(latencies_ms: Sequence[float]) -> dict[str, float | None]:
    if not latencies_ms:
        return {"p50": None, "p95": None, "p99": None}
    return {
        "p50": round(statistics.median(latencies_ms), 1),
        "p95": round(float(np.percentile(latencies_ms, 95)), 1),
        "p99": round(float(np.percentile(latencies_ms, 99)), 1),
    }
