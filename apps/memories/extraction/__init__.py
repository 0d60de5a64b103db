"""Inline, rules-based memory extraction: pure functions, no ORM, no I/O, no LLM.

See docs/extraction.md for every rule, the supersession slots and their limits.
"""

from apps.core.cleaning import clean_text
from apps.memories.extraction.cleaning import is_low_content
from apps.memories.extraction.rules import (
    MEMORY_TYPE_EPISODE,
    MEMORY_TYPE_FACT,
    MEMORY_TYPE_PREFERENCE,
    SCOPE_CONTACT,
    SCOPE_TENANT,
    ExtractedEntity,
    ExtractedMemory,
    Extraction,
    extract,
    slugify,
)
from apps.memories.extraction.salience import salience

__all__ = [
    "MEMORY_TYPE_EPISODE",
    "MEMORY_TYPE_FACT",
    "MEMORY_TYPE_PREFERENCE",
    "SCOPE_CONTACT",
    "SCOPE_TENANT",
    "ExtractedEntity",
    "ExtractedMemory",
    "Extraction",
    "clean_text",
    "extract",
    "is_low_content",
    "salience",
    "slugify",
]
