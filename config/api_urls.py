"""Every /api/v1/ route, one line per operation."""

from django.urls import path

from apps.contacts.apis import ContactDetailApi, ContactListCreateApi
from apps.conversations.apis import ConversationDetailApi, ConversationMessagesApi

urlpatterns = [
    path("contacts", ContactListCreateApi.as_view(), name="contacts"),
    path("contacts/<str:contact_id>", ContactDetailApi.as_view(), name="contact-detail"),
    path("conversations/<str:conversation_id>", ConversationDetailApi.as_view(), name="conversation-detail"),
    path(
        "conversations/<str:conversation_id>/messages", ConversationMessagesApi.as_view(), name="conversation-messages"
    ),
]
