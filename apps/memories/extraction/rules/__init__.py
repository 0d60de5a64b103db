"""Rules-based inline extraction (contact-intelligence §3, ai-brain-memory §4.2).

One call turns one chat turn into typed facts, preferences, at most one episode and the entities they
mention. Pure: no ORM, no I/O, no LLM; a chat-sized message costs well under a millisecond.

This module is the public API and the one priority order of the rules (``RULES``). Each rule family keeps
its patterns, trigger words and handlers together in its own module; the shared pieces are ``_types``
(what crosses the boundary), ``_text`` (folding, trimming, slugs), ``_clauses``, ``_names`` (proper-name
phrases and the name scan), ``vocabulary`` (kinship, pet and common words), ``_base`` (what a rule is made
of) and ``_engine`` (running the rules, merging entities and memories).

Every rule, the supersession slots and their limits are documented in docs/extraction.md.
"""

from __future__ import annotations

from apps.core.cleaning import clean_text
from apps.memories.extraction.cleaning import export_marks_removed, is_low_content
from apps.memories.extraction.rules import (
    attributes,
    business,
    conversation,
    identity,
    location,
    pets,
    possessions,
    preferences,
    relations,
    work,
)
from apps.memories.extraction.rules._base import _Context, _Found, _Rule
from apps.memories.extraction.rules._engine import _apply_rules, _memories, _merge_entities
from apps.memories.extraction.rules._names import (
    _case_mode,
    _proper_names,
    addressed_names,
    case_uses,
    vocatives_removed,
    written_as_common_word,
)
from apps.memories.extraction.rules._text import slugify
from apps.memories.extraction.rules._types import (
    MAX_EPISODE_CHARS,
    MAX_PREDICATE_CHARS,
    MAX_SCAN_CHARS,
    MEMORY_TYPE_EPISODE,
    MEMORY_TYPE_FACT,
    MEMORY_TYPE_PREFERENCE,
    ROLE_USER,
    SCOPE_CONTACT,
    SCOPE_TENANT,
    SCOPES,
    ExtractedEntity,
    ExtractedMemory,
    Extraction,
)
from apps.memories.extraction.rules.conversation import instruction_condition
from apps.memories.extraction.rules.injection import has_instructions, is_a_fact, is_markup_or_instructions
from apps.memories.extraction.rules.relations import _relative_mentions
from apps.memories.extraction.rules.vocabulary import COMMON_WORDS, SENTENCE_STARTERS

__all__ = [
    "COMMON_WORDS",
    "MAX_EPISODE_CHARS",
    "MAX_PREDICATE_CHARS",
    "MAX_SCAN_CHARS",
    "MEMORY_TYPE_EPISODE",
    "MEMORY_TYPE_FACT",
    "MEMORY_TYPE_PREFERENCE",
    "ROLE_USER",
    "RULES",
    "SCOPES",
    "SCOPE_CONTACT",
    "SCOPE_TENANT",
    "SENTENCE_STARTERS",
    "ExtractedEntity",
    "ExtractedMemory",
    "Extraction",
    "addressed_names",
    "case_uses",
    "clean_text",
    "extract",
    "instruction_condition",
    "is_a_fact",
    "is_low_content",
    "is_markup_or_instructions",
    "slugify",
    "written_as_common_word",
]

# The priority order of every rule. Within a clause a rule is skipped where an earlier rule's trigger words
# already matched, so negations ("I don't like") always win over their positive forms and "I'm a big fan
# of" over "I'm a ...". The two appositive rules are independent of this (``is_independent``). Where two
# rules match at the same place, the earlier one's memories come first.
RULES: tuple[_Rule, ...] = (
    # ---- preferences: what to talk about and how to reply, then likes and dislikes (negations first) ----
    conversation.TALK_AVOID,
    conversation.TALK_INTEREST,
    conversation.INSTRUCTION_AVOID,
    conversation.INSTRUCTION_WANT,
    conversation.LENGTH_LIMIT,
    preferences.NEGATIVE_LIKE,
    preferences.DISLIKE,
    preferences.NOT_A_FAN,
    preferences.RATHER_NOT,
    preferences.FAN_OF,
    preferences.INTO,
    preferences.RATHER,
    preferences.PREFER,
    preferences.LIKE,
    preferences.FAVOURITE,
    preferences.FAVOURITE_REVERSE,
    preferences.HOBBIES,
    preferences.HABIT,
    preferences.WANT_TO,
    # ---- who they are: name, relatives and pets, age, origin ----------------------------------------------
    identity.MY_NAME,
    identity.GOES_BY,
    identity.INTRODUCES_SELF,
    relations.PET_OR_RELATION_NAME,
    relations.RELATIVE_DOES,
    relations.RELATION_APPOSITIVE,
    pets.PET_APPOSITIVE,
    relations.RELATIVE_IS,
    identity.AGE,
    identity.AGE_TURNED,
    identity.AGE_IS,
    location.FROM,
    # ---- what they have and what they are ("I'm not a" before "I'm a") ---------------------------------
    possessions.HAVE_NOT,
    possessions.HAVE,
    identity.IDENTITY_NEGATED,
    identity.STABLE_STATE,
    identity.NATIONALITY,
    identity.IDENTITY,
    # ---- work and study ---------------------------------------------------------------------------------
    work.WORK_NOT,
    work.WORK_AT,
    work.WORKING_AT,
    work.WORK_AS,
    work.WORK_IN,
    work.STUDY_AT,
    work.GOES_TO_SCHOOL,
    # ---- where they live, where the business is ----------------------------------------------------------
    location.LIVE_NOT,
    location.LIVE_IN,
    location.LIVING_IN,
    location.MOVED_TO,
    location.BUSINESS_LOCATED,
    location.BASED_IN,
    location.LOCATED_IN,
    # ---- the business, its numbers, personal attributes --------------------------------------------------
    business.BUSINESS_IS,
    business.OUR_BUSINESS_IS,
    business.WE_SELL,
    attributes.METRIC,
    attributes.ATTRIBUTE,
)


def extract(text: str, *, scope: str = SCOPE_CONTACT, role: str = ROLE_USER) -> Extraction:
    """Facts, preferences, at most one episode and the entities of one turn.

    Facts and preferences come only from the ``user`` role (the end-user for scope ``contact``, the
    business owner for scope ``tenant``); every other role yields only the episode. Low-content turns
    ("lol", "ok", "👍") yield nothing.
    """
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}")
    cleaned = export_marks_removed(clean_text(text)).strip()
    scanned = cleaned[:MAX_SCAN_CHARS]
    # small talk to a name ("Thanks, Gina!", "Hey Sam!", "Wow Caroline, that looks amazing!") is small talk:
    # stored, each such fragment of a messaging app's bursts was one more episode near-duplicates merged into
    # one that named dozens of turns and outranked content (docs/benchmarks.md, Session 33)
    if is_low_content(cleaned) or (len(scanned) < MAX_SCAN_CHARS and is_low_content(vocatives_removed(scanned))):
        return Extraction(cleaned_text=cleaned, is_low_content=True, memories=(), entities=())
    case = _case_mode(scanned)
    context = _Context(scope=scope, case=case, own_name_slugs=set())
    found: list[_Found] = []
    mentions: list[tuple[int, ExtractedEntity]] = []
    # a turn that addresses the model states no fact about the person; markup is no value (injection.py)
    if role == ROLE_USER and not has_instructions(scanned):
        found = [item for item in _apply_rules(scanned, context, RULES) if is_a_fact(item.predicate, item.slot)]
        mentions = _relative_mentions(scanned, case)
    entities = _merge_entities(found, mentions, _proper_names(scanned, case), context.own_name_slugs)
    episode = ExtractedMemory(
        memory_type=MEMORY_TYPE_EPISODE,
        predicate=cleaned[:MAX_EPISODE_CHARS].rstrip(),
        entities=tuple(entities),
    )
    return Extraction(
        cleaned_text=cleaned,
        is_low_content=False,
        memories=(*_memories(found, entities), episode),
        entities=tuple(entities),
    )
