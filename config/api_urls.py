"""Every /api/v1/ route, one line per operation."""

from django.urls import path

from apps.contacts.apis import (
    ContactDetailApi,
    ContactListCreateApi,
    ContactMoodHistoryApi,
    ContactStateApi,
    TriggerCompleteApi,
    TriggerListApi,
)
from apps.context.apis import BrainContextApi, ContextGetApi
from apps.conversations.apis import ConversationDetailApi, ConversationMessagesApi
from apps.knowledge.apis import DocumentDetailApi, DocumentListCreateApi, KnowledgeSearchApi
from apps.memories.apis import (
    ContactExportApi,
    ContactProfileApi,
    ConversationCloseApi,
    MemoryDetailApi,
    MemoryHistoryApi,
    MemoryListCreateApi,
    MemoryTypesApi,
)
from apps.memories.ingest.apis import EventDetailApi, IngestApi, IngestBatchApi, ObservationApi
from apps.memories.retrieval.apis import MemorySearchApi

urlpatterns = [
    path("contacts", ContactListCreateApi.as_view(), name="contacts"),
    path("contacts/<str:contact_id>", ContactDetailApi.as_view(), name="contact-detail"),
    path("conversations/<str:conversation_id>", ConversationDetailApi.as_view(), name="conversation-detail"),
    path("contacts/<str:contact_id>/state", ContactStateApi.as_view(), name="contact-state"),
    path("contacts/<str:contact_id>/mood-history", ContactMoodHistoryApi.as_view(), name="contact-mood-history"),
    path("triggers", TriggerListApi.as_view(), name="triggers"),
    path("triggers/<uuid:trigger_id>/done", TriggerCompleteApi.as_view(), name="trigger-done"),
    path("contacts/<str:contact_id>/profile", ContactProfileApi.as_view(), name="contact-profile"),
    path("contacts/<str:contact_id>/export", ContactExportApi.as_view(), name="contact-export"),
    path("conversations/<str:conversation_id>/close", ConversationCloseApi.as_view(), name="conversation-close"),
    path(
        "conversations/<str:conversation_id>/messages", ConversationMessagesApi.as_view(), name="conversation-messages"
    ),
    path("ingest", IngestApi.as_view(), name="ingest"),
    path("ingest/batch", IngestBatchApi.as_view(), name="ingest-batch"),
    path("events/<uuid:event_id>", EventDetailApi.as_view(), name="event-detail"),
    path("observations", ObservationApi.as_view(), name="observations"),
    path("memories", MemoryListCreateApi.as_view(), name="memories"),
    path("memories/search", MemorySearchApi.as_view(), name="memory-search"),
    path("memories/types", MemoryTypesApi.as_view(), name="memory-types"),
    path("memories/<uuid:memory_id>", MemoryDetailApi.as_view(), name="memory-detail"),
    path("memories/<uuid:memory_id>/history", MemoryHistoryApi.as_view(), name="memory-history"),
    path("knowledge/documents", DocumentListCreateApi.as_view(), name="knowledge-documents"),
    path("knowledge/search", KnowledgeSearchApi.as_view(), name="knowledge-search"),
    path("context/<str:contact_id>", ContextGetApi.as_view(), name="context"),
    path("brain/context", BrainContextApi.as_view(), name="brain-context"),
    path("knowledge/documents/<uuid:document_id>", DocumentDetailApi.as_view(), name="knowledge-document-detail"),
]
