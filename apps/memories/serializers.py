"""The memory as every entry point shows it: the REST API (apps/memories/apis.py) and the MCP tools
(apps/mcp_server) render the same body from this one serializer."""

from __future__ import annotations

from rest_framework import serializers

from apps.core.fields import StrictCharField
from apps.memories.models import Memory


class MemoryOutputSerializer(serializers.ModelSerializer):
    contact_id = StrictCharField(source="contact.external_id", allow_null=True, default=None)
    sources = serializers.ListField(source="source_message_ids", child=StrictCharField())
    entities = serializers.SerializerMethodField()
    superseded_by = serializers.UUIDField(source="superseded_by_id", allow_null=True)
    outdated_by = serializers.UUIDField(source="outdated_by_id", allow_null=True)
    is_current = serializers.BooleanField()

    class Meta:
        model = Memory
        fields = [
            "id",
            "contact_id",
            "memory_type",
            "content",
            "importance",
            "decay_rate",
            "access_count",
            "accessed_at",
            "occurred_at",
            "valid_from",
            "valid_to",
            "superseded_by",
            "outdated_by",
            "is_current",
            "is_compressed",
            "is_pinned",
            "expires_at",
            "slot",
            "key",
            "sources",
            "source_event_ids",
            "entities",
            "metadata",
            "created_by",
            "created_at",
            "updated_at",
        ]

    def get_entities(self, memory: Memory) -> list[str]:
        return sorted(entity.key for entity in memory.entities.all())
