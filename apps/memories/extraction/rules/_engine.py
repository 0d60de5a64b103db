"""Running the rules over the clauses of a turn in their priority order, then merging what they found
into distinct entities and deduplicated memories (docs/extraction.md, "Pipeline" steps 4 and 6).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from apps.memories.extraction.rules._base import _Context, _entity, _Found, _Rule
from apps.memories.extraction.rules._clauses import _HEDGE, _clauses
from apps.memories.extraction.rules._text import _CLAUSE_WORD
from apps.memories.extraction.rules._types import ExtractedEntity, ExtractedMemory


def _object_start(match: re.Match[str]) -> int:
    if "x" in match.re.groupindex and match.start("x") >= 0:
        return match.start("x")
    return match.end()


def _apply_rules(text: str, context: _Context, rules: Sequence[_Rule]) -> list[_Found]:
    """What ``rules`` (in priority order) find in each clause of ``text``, in message order."""
    ranked: list[tuple[int, int, _Found]] = []
    for clause in _clauses(text):
        consumed: list[tuple[int, int]] = []
        words = set(_CLAUSE_WORD.findall(clause.folded.lower()))
        for order, rule in enumerate(rules):
            if rule.triggers is not None and rule.triggers.isdisjoint(words):
                continue
            if rule.scope is not None and rule.scope != context.scope:
                continue
            if clause.is_question and not rule.allow_question:
                continue
            is_independent = rule.is_independent
            position = 0
            while position <= len(clause.folded):
                match = rule.pattern.search(clause.folded, position)
                if match is None:
                    break
                trigger = (match.start(), _object_start(match))
                position = max(trigger[1], match.start() + 1)
                if not is_independent and any(trigger[0] < end and start < trigger[1] for start, end in consumed):
                    continue
                if rule.check_hedge and _HEDGE.search(clause.lead_in + " " + clause.folded[: match.start()]):
                    continue
                produced = rule.handle(match, clause, context)
                if not produced:
                    continue
                if not is_independent:
                    consumed.append(trigger)
                for item in produced:
                    item.is_correction = item.is_correction or clause.is_correction
                    item.position = clause.offset + match.start()
                    ranked.append((item.position, order, item))
    ranked.sort(key=lambda entry: (entry[0], entry[1]))
    return [item for _position, _order, item in ranked]


def _is_within(slug: str, other: str) -> bool:
    return f"-{slug}-" in f"-{other}-"


def _merge_entities(
    found: list[_Found],
    mentions: list[tuple[int, ExtractedEntity]],
    names: list[tuple[int, str]],
    own_name_slugs: set[str],
) -> list[ExtractedEntity]:
    """Distinct entities in message order; a typed entity wins over a bare name with the same words."""
    typed: list[tuple[int, ExtractedEntity]] = [(item.position, entity) for item in found for entity in item.entities]
    named_relations = {
        entity.metadata.get("relation") for _position, entity in typed if entity.entity_type == "person"
    } - {None}
    typed.extend(
        (position, entity) for position, entity in mentions if entity.metadata.get("relation") not in named_relations
    )
    typed.sort(key=lambda entry: entry[0])
    by_key: dict[str, tuple[int, ExtractedEntity]] = {}
    for position, entity in typed:
        by_key.setdefault(entity.key, (position, entity))
    typed_slugs = [entity.slug for _position, entity in by_key.values()]
    for position, display in names:
        name = _entity("name", display)
        if name is None or name.slug in own_name_slugs or name.key in by_key:
            continue
        if any(_is_within(name.slug, slug) for slug in typed_slugs):
            continue
        by_key[name.key] = (position, name)
    return [entity for _position, entity in sorted(by_key.values(), key=lambda entry: entry[0])]


def _mentions(text: str, words: str) -> bool:
    """``words`` occur in ``text`` as whole words (both already lower-case)."""
    start = text.find(words)
    while start >= 0:
        end = start + len(words)
        if (start == 0 or not text[start - 1].isalnum()) and (end == len(text) or not text[end].isalnum()):
            return True
        start = text.find(words, start + 1)
    return False


def _memories(found: list[_Found], entities: list[ExtractedEntity]) -> list[ExtractedMemory]:
    canonical = {entity.key: entity for entity in entities}
    lower_names = [(entity, entity.display_name.lower()) for entity in entities]
    memories: list[ExtractedMemory] = []
    index_by_key: dict[tuple[str, str], int] = {}
    for item in found:
        if not item.predicate:
            continue  # an entity-only match
        key = (item.memory_type, item.predicate.lower())
        if key in index_by_key:
            earlier = memories[index_by_key[key]]
            if item.is_correction and not earlier.is_correction:
                memories[index_by_key[key]] = ExtractedMemory(**{**earlier.__dict__, "is_correction": True})
            continue
        linked: dict[str, ExtractedEntity] = {}
        for entity in item.entities:
            linked.setdefault(entity.key, canonical.get(entity.key, entity))
        predicate = item.predicate.lower()
        for entity, display_name in lower_names:
            if _mentions(predicate, display_name):
                linked.setdefault(entity.key, entity)
        index_by_key[key] = len(memories)
        memories.append(
            ExtractedMemory(
                memory_type=item.memory_type,
                predicate=item.predicate,
                entities=tuple(linked.values()),
                slot=item.slot,
                is_correction=item.is_correction,
                polarity=item.polarity,
                is_possessive=item.is_possessive,
            )
        )
    return memories
