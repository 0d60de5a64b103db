from django.urls import path

from apps.inspector import views

app_name = "inspector"

urlpatterns = [
    path("", views.contact_list, name="home"),
    path("contacts/", views.contact_list, name="contacts"),
    path("contacts/<str:contact_id>/", views.contact_detail, name="contact"),
    path("contacts/<str:contact_id>/context/", views.context_preview, name="context_preview"),
    path("contacts/<str:contact_id>/export.json", views.contact_export_json, name="contact_export"),
    path("memories/<str:memory_id>/", views.memory_detail, name="memory"),
    path("memories/<str:memory_id>/edit/", views.memory_edit_view, name="memory_edit"),
    path("memories/<str:memory_id>/pin/", views.memory_pin_view, name="memory_pin"),
    path("memories/<str:memory_id>/correct/", views.memory_correct_view, name="memory_correct"),
    path("memories/<str:memory_id>/delete/", views.memory_delete_view, name="memory_delete"),
    path("conversations/<str:conversation_id>/", views.conversation_detail, name="conversation"),
    path("brain/", views.brain, name="brain"),
    path("brain/search/", views.knowledge_search_view, name="knowledge_search"),
    path("brain/documents/", views.document_upload, name="document_upload"),
    path("brain/documents/<str:document_id>/", views.document_detail, name="document"),
    path("brain/documents/<str:document_id>/delete/", views.document_delete_view, name="document_delete"),
    path("tenant/", views.tenant_switch, name="tenant_switch"),
]
