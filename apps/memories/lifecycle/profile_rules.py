"""Pure helpers of the memory processor: JSON normalisation, offline narrative and scaffold.

No ORM imports: the service passes plain rows in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from apps.memories.retrieval import overlap

MAX_WORKING_MEMORY_WORDS = 500


def normalise_json_values(value: Any, *, depth: int = 0) -> Any:
    """LLMs return nested data as stringified JSON ({"Projects": "{\\"a\\": 1}"}): unwrap it, recursively."""
    if depth > 20:
        return value
    if isinstance(value, str):
        text = value.strip()
        if (text.startswith("{") and text.endswith("}")) or (text.startswith("[") and text.endswith("]")):
            try:
                return normalise_json_values(json.loads(text), depth=depth + 1)
            except json.JSONDecodeError:
                return value
        return value
    if isinstance(value, dict):
        return {str(key): normalise_json_values(item, depth=depth + 1) for key, item in value.items()}
    if isinstance(value, list):
        return [normalise_json_values(item, depth=depth + 1) for item in value]
    return value


def cap_words(text: str, limit: int = MAX_WORKING_MEMORY_WORDS) -> str:
    words = text.split()
    return text.strip() if len(words) <= limit else " ".join(words[:limit]) + " …"


def deep_merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        elif isinstance(value, list) and isinstance(merged.get(key), list):
            merged[key] = list(dict.fromkeys([*map(_hashable, merged[key]), *map(_hashable, value)]))
        else:
            merged[key] = value
    return merged


def _hashable(item: Any) -> Any:
    return json.dumps(item, sort_keys=True) if isinstance(item, dict | list) else item


@dataclass(frozen=True)
class MemoryRow:
    memory_type: str
    content: str
    slot: str
    polarity: int
    importance: float


@dataclass(frozen=True)
class EntityRow:
    entity_type: str
    display_name: str
    metadata: dict[str, Any]


@dataclass(frozen=True)
class Observation:
    event_type: str
    content: str
    role: str = "user"


SLOT_KEYS = {"name": "Name", "age": "Age", "workplace": "Work", "school": "School"}


def _scaffold_update_pairs(content: str) -> dict[str, Any]:
    """scaffold_update observations: a JSON object, or "Key: value" lines."""
    parsed = normalise_json_values(content)
    if isinstance(parsed, dict):
        return parsed
    pairs: dict[str, Any] = {}
    for line in content.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and value.strip():
            pairs[key.strip()] = value.strip()
    return pairs


def offline_scaffold(
    *,
    previous: dict[str, Any],
    memories: Sequence[MemoryRow],
    entities: Iterable[EntityRow],
    observations: Sequence[Observation],
) -> dict[str, Any]:
    """A rules-built scaffold: identity slots, location, people, pets, likes/dislikes, facts, projects."""
    scaffold: dict[str, Any] = {}
    facts: list[str] = []
    for memory in memories:
        if memory.memory_type == "fact":
            key = SLOT_KEYS.get(memory.slot) or ("Location" if memory.slot.startswith("location") else None)
            if key:
                scaffold[key] = memory.content
            else:
                facts.append(memory.content)
        elif memory.memory_type == "preference":
            bucket = "Dislikes" if memory.polarity < 0 else "Likes"
            scaffold.setdefault(bucket, []).append(memory.content)
        elif memory.memory_type == "pattern":
            scaffold.setdefault("Patterns", []).append(memory.content)
    if facts:
        scaffold["Facts"] = facts[:20]
    for entity in entities:
        if entity.entity_type == "person" and entity.metadata.get("relation"):
            scaffold.setdefault("People", {})[entity.display_name] = entity.metadata["relation"]
        elif entity.entity_type == "pet":
            scaffold.setdefault("Pets", {})[entity.display_name] = entity.metadata.get("species", "pet")
    for observation in observations:
        if observation.event_type == "project_details":
            scaffold.setdefault("Projects", []).append(observation.content)
        elif observation.event_type == "scaffold_update":
            scaffold = deep_merge(scaffold, _scaffold_update_pairs(observation.content))
    # what the rules know now replaces what they knew; keys only an LLM or an update created are kept
    return deep_merge(previous, scaffold) if previous else scaffold


def offline_working_memory(*, subject: str, memories: Sequence[MemoryRow], observations: Sequence[Observation]) -> str:
    """A narrative from the most important facts and preferences and what was said most recently."""
    who = subject or "The contact"
    facts = [m.content for m in sorted(memories, key=lambda m: -m.importance) if m.memory_type == "fact"][:8]
    likes = [m.content for m in memories if m.memory_type == "preference"][:6]
    patterns = [m.content for m in memories if m.memory_type == "pattern"][:3]
    said = [o.content for o in observations if o.role == "user" and len(o.content.split()) >= 4]
    recent = _unsaid(said, known=[*facts, *likes])
    parts = []
    if facts:
        parts.append(f"What is known about {who}: " + "; ".join(_lower_first(f) for f in facts) + ".")
    if likes:
        parts.append("Preferences: " + "; ".join(_lower_first(p) for p in likes) + ".")
    if patterns:
        parts.append("Patterns: " + "; ".join(patterns) + ".")
    if recent:
        parts.append("Most recently they said: " + " / ".join(_clip(text) for text in recent))
    return cap_words(" ".join(parts)) if parts else ""


def _unsaid(said: Sequence[str], *, known: Sequence[str], keep: int = 3) -> list[str]:
    """The last `keep` of `said` that say something neither a known fact nor a later line already says
    (three turns repeating "I have a dog named Bruno." are one line, and none when it is a known fact)."""
    kept: list[str] = []
    seen = [overlap.content_words(text) for text in known]
    for text in reversed(said):
        words = overlap.content_words(text)
        if any(overlap.says_again(words, earlier) for earlier in seen):
            continue
        kept.append(text)
        seen.append(words)
        if len(kept) == keep:
            break
    return kept[::-1]


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text and not re.match(r"^[A-Z][a-z]+ [A-Z]", text) else text


def _clip(text: str, words: int = 40) -> str:
    return cap_words(text.replace("\n", " "), words)


PROCESSOR_SYSTEM = """You maintain an AI agent's memory of one user. You receive the current working memory \
(a narrative), the current information scaffold (JSON with keys you invent, such as Role, Goals, Projects, \
Preferences, People) and new observations. Return JSON only:
{"updated_scaffold": {...the full scaffold...}, "updated_working_memory": "<narrative, at most 500 words, \
what matters now>", "facts_to_embed": ["<standalone third-person facts worth long-term recall>"]}
Keep what is still true, update what changed (corrections win), drop nothing the user did not retract."""


def processor_prompt(*, working_memory: str, scaffold: dict[str, Any], observations: Sequence[Observation]) -> str:
    bullets = "\n".join(
        f"- [{o.event_type}{'/' + o.role if o.event_type == 'message' else ''}] {o.content}" for o in observations
    )
    return (
        f"Current working memory:\n{working_memory or '(empty)'}\n\n"
        f"Current information scaffold:\n{json.dumps(scaffold, ensure_ascii=False)}\n\n"
        f"New observations:\n{bullets}"
    )


@dataclass(frozen=True)
class ProcessorOutput:
    scaffold: dict[str, Any]
    working_memory: str
    facts_to_embed: list[str]


def parse_processor_output(data: dict[str, Any]) -> ProcessorOutput | None:
    """Validate the LLM's JSON; None when it is unusable (the caller falls back to the rules)."""
    data = normalise_json_values(data)
    scaffold = data.get("updated_scaffold")
    narrative = data.get("updated_working_memory")
    facts = data.get("facts_to_embed", [])
    if not isinstance(scaffold, dict) or not isinstance(narrative, str):
        return None
    if not isinstance(facts, list):
        facts = []
    clean_facts = [str(fact).strip() for fact in facts if str(fact).strip()][:50]
    return ProcessorOutput(scaffold=scaffold, working_memory=cap_words(narrative), facts_to_embed=clean_facts)
