"""What crosses the boundary of the rules extractor: the extracted entity, memory and extraction, the
memory types, scopes and size limits (docs/extraction.md, "Public API").
"""

from __future__ import annotations

from dataclasses import dataclass, field

MEMORY_TYPE_FACT = "fact"
MEMORY_TYPE_PREFERENCE = "preference"
MEMORY_TYPE_EPISODE = "episode"

SCOPE_CONTACT = "contact"
SCOPE_TENANT = "tenant"
SCOPES = (SCOPE_CONTACT, SCOPE_TENANT)
ROLE_USER = "user"

MAX_PREDICATE_CHARS = 200
MAX_EPISODE_CHARS = 1000
# Rules and the name scan read this much of a turn, which bounds the cost of a pasted document
# (deferred consolidation sees the whole text).
MAX_SCAN_CHARS = 2000


@dataclass(frozen=True)
class ExtractedEntity:
    entity_type: (
        str  # pet | person | workplace | school | location | topic | hobby | product | organization | service | name
    )
    slug: str
    display_name: str
    # Equality compares metadata; the hash leaves it out so the entity stays hashable.
    metadata: dict[str, str] = field(default_factory=dict, hash=False)

    @property
    def key(self) -> str:
        return f"{self.entity_type}:{self.slug}"


@dataclass(frozen=True)
class ExtractedMemory:
    memory_type: str  # "fact" | "preference" | "episode"
    predicate: str  # third person, no subject, lower-case first letter (episodes: the message verbatim)
    entities: tuple[ExtractedEntity, ...] = ()
    slot: str | None = None  # supersession key: a newer memory with the same slot replaces the older one
    is_correction: bool = False
    polarity: int = 0
    # "manager is Ravi" is about the subject's manager: with a subject it reads "Caroline's manager is Ravi".
    is_possessive: bool = False

    def statement(self, subject: str | None = None) -> str:
        if self.memory_type == MEMORY_TYPE_EPISODE:
            return f"{subject}: {self.predicate}" if subject else self.predicate
        if not subject:
            return self.predicate[:1].upper() + self.predicate[1:]
        if self.is_possessive:
            return f"{subject}'s {self.predicate}"
        return f"{subject} {self.predicate}"


@dataclass(frozen=True)
class Extraction:
    cleaned_text: str
    is_low_content: bool
    memories: tuple[ExtractedMemory, ...]  # facts and preferences in message order, then at most one episode
    entities: tuple[ExtractedEntity, ...]

    @property
    def episode(self) -> ExtractedMemory | None:
        last = self.memories[-1] if self.memories else None
        return last if last is not None and last.memory_type == MEMORY_TYPE_EPISODE else None
