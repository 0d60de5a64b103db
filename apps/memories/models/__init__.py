from apps.memories.models.event import ContextEvent
from apps.memories.models.knowledge import KnowledgeChunk, KnowledgeDocument
from apps.memories.models.lifecycle import ConsolidationRun, MemoryProfile, ProfileAudit
from apps.memories.models.memory import Memory, MemoryEntity, MemoryRevision, MemoryType

__all__ = [
    "ConsolidationRun",
    "ContextEvent",
    "KnowledgeChunk",
    "KnowledgeDocument",
    "Memory",
    "MemoryEntity",
    "MemoryProfile",
    "MemoryRevision",
    "MemoryType",
    "ProfileAudit",
]
