"""Real two-person chats with questions, in the layout published sets of real multi-week messaging use
(REALTALK's: a JSON file per chat), so a held-out set is measured by the same command, beside the same flat
retrievers, as LoCoMo and BEAM (`bench_retrieval --dataset chats --chats-path FILE_OR_FOLDER`).

A chat file holds:
- `name`: `{"speaker_1": …, "speaker_2": …}` (or LoCoMo's `speaker_a` / `speaker_b`);
- `session_<n>`: the session's messages in order, each with `dia_id`, `speaker`, its text in `clean_text` (or
  `text`), optionally its own `date_time` and a shared image's `blip_caption`;
- `session_<n>_date_time`: the session's time, for messages that carry none;
- `qa`: questions with `question`, `evidence` (dia_ids) and `category` (1 multi-hop, 2 temporal, 3
  commonsense; another number or a name is reported as given).
The sessions may also sit under a `conversation` key, as in LoCoMo. A path is one such file, a JSON list of
them, or a folder of `*.json` files (one chat each, its id the file's name).

Times are the messages' own where the file gives them (a real chat's minutes and hours apart), whatever the
stamping: `spread` only spaces the messages of a session without times of their own, as it does LoCoMo's.
The set is not split: nothing is tuned on it, all of it is reported.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from apps.memories.benchmarks import datasets
from apps.memories.benchmarks.locomo import SPREAD_SECONDS, evidence_ids, parse_session_date, turn_text

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "commonsense"}
_LAYOUTS = ("%d.%m.%Y, %H:%M:%S", "%d.%m.%Y, %H:%M", "%d.%m.%Y %H:%M:%S", "%d.%m.%Y")
_SESSION = re.compile(r"session_(\d+)")


class ChatFileError(ValueError):
    """A chat file that is not in the layout above; the message says where."""


def parse_time(text: str) -> datetime:
    """'29.12.2023, 14:05:09' (day first), ISO 8601, or LoCoMo's '1:56 pm on 8 May, 2023' → aware datetime (UTC
    when the text names no zone)."""
    cleaned = re.sub(r"\s+", " ", str(text).strip())
    for layout in _LAYOUTS:
        try:
            return datetime.strptime(cleaned, layout).replace(tzinfo=UTC)
        except ValueError:
            continue
    try:
        parsed = datetime.fromisoformat(cleaned)
    except ValueError:
        return parse_session_date(cleaned)  # raises ValueError naming the text
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def category_name(raw: Any) -> str:
    if isinstance(raw, str) and not raw.strip().isdigit():
        return raw.strip()
    number = int(raw)
    return CATEGORIES.get(number, f"category {number}")


def _text(message: dict[str, Any]) -> str:
    return turn_text(message, text_key="clean_text" if message.get("clean_text") else "text")


def _speakers(chat: dict[str, Any], body: dict[str, Any]) -> str:
    named = chat.get("name")
    names: dict[str, Any] = named if isinstance(named, dict) else body
    first = names.get("speaker_1") or names.get("speaker_a") or ""
    second = names.get("speaker_2") or names.get("speaker_b") or ""
    return f"{first} & {second}"


def _body(chat: dict[str, Any]) -> dict[str, Any]:
    """Where the sessions are: under `conversation` (LoCoMo's layout) when it holds them, else the chat itself."""
    wrapped = chat.get("conversation")
    if isinstance(wrapped, dict) and any(_SESSION.fullmatch(key) for key in wrapped):
        return wrapped
    return chat


def chat_turns(chat: dict[str, Any], *, chat_id: str, stamping: str = "session") -> list[datasets.Turn]:
    """The chat's messages in session order, each at its own time (else its session's, spread if asked)."""
    if stamping not in ("session", "spread"):
        raise ValueError(f"unknown stamping {stamping!r}")
    body = _body(chat)
    numbered = sorted(
        (int(match.group(1)), messages)
        for key, messages in body.items()
        if (match := _SESSION.fullmatch(key)) and isinstance(messages, list)
    )
    if not numbered:
        raise ChatFileError(f"{chat_id}: no session_<n> lists of messages")
    found: list[datasets.Turn] = []
    for number, messages in numbered:
        session_time = body.get(f"session_{number}_date_time")
        start = parse_time(session_time) if session_time else None
        for index, message in enumerate(messages):
            text = _text(message)
            if not text:
                continue
            if "dia_id" not in message or "speaker" not in message:
                raise ChatFileError(f"{chat_id}: a message of session_{number} has no dia_id or speaker")
            if message.get("date_time"):
                at = parse_time(message["date_time"])
            elif start is not None:
                at = start + timedelta(seconds=index * SPREAD_SECONDS) if stamping == "spread" else start
            else:
                raise ChatFileError(f"{chat_id}: {message['dia_id']} has no date_time and its session none either")
            found.append(
                datasets.Turn(
                    id=str(message["dia_id"]),
                    session=number,
                    speaker=str(message["speaker"]),
                    role="user",
                    text=text,
                    occurred_at=at,
                    shares_media=bool(message.get("blip_caption")),
                )
            )
    return found


def _chats(path: Path) -> list[tuple[str, dict[str, Any]]]:
    if path.is_dir():
        files = sorted(path.glob("*.json"))
        if not files:
            raise ChatFileError(f"{path}: no *.json chat files in this folder")
        return [chat for file in files for chat in _chats(file)]
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ChatFileError(f"{path}: not JSON ({error})") from error
    if isinstance(data, dict):
        return [(str(data.get("sample_id") or path.stem), data)]
    if isinstance(data, list) and all(isinstance(item, dict) for item in data):
        return [(str(item.get("sample_id") or f"{path.stem}-{index + 1}"), item) for index, item in enumerate(data)]
    raise ChatFileError(f"{path}: a chat file holds one chat object or a list of them")


def load(path: str | Path, *, stamping: str = "session") -> datasets.Dataset:
    conversations = []
    questions = []
    categories: dict[str, None] = dict.fromkeys(CATEGORIES.values())
    seen: set[str] = set()
    for chat_id, chat in _chats(Path(path)):
        if chat_id in seen:
            raise ChatFileError(f"two chats are called {chat_id!r}")
        seen.add(chat_id)
        turns = chat_turns(chat, chat_id=chat_id, stamping=stamping)
        conversations.append(
            datasets.Conversation(id=chat_id, turns=tuple(turns), display_name=_speakers(chat, _body(chat)))
        )
        for qa in chat.get("qa", []):
            if not isinstance(qa, dict) or not str(qa.get("question") or "").strip():
                raise ChatFileError(f"{chat_id}: a qa item has no question")
            category = category_name(qa["category"]) if "category" in qa else "uncategorised"
            categories.setdefault(category)
            questions.append(
                datasets.Question(
                    conversation=chat_id,
                    text=str(qa["question"]),
                    category=category,
                    evidence=tuple(evidence_ids(qa.get("evidence", []))),
                )
            )
    asked = {question.category for question in questions}
    order = tuple(category for category in categories if category in asked)
    return datasets.Dataset(
        name="Chats",
        conversations=tuple(conversations),
        questions=tuple(questions),
        categories=order,
        headline=order,
        metric="R",
    )
