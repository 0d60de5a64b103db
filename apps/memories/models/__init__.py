from apps.memories.models.event import ContextEvent
from apps.memories.models.lifecycle import ConsolidationRun, MemoryProfile, ProfileAudit
from apps.memories.models.memory import Memory, MemoryEntity, MemoryRevision, MemoryType

__all__ = [
    "ConsolidationRun",
    "ContextEvent",
    "Memory",
    "MemoryEntity",
    "MemoryProfile",
    "MemoryRevision",
    "MemoryType",
    "ProfileAudit",
]
