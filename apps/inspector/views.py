"""The memory inspector: thin views that parse input, call one selector or service and render.

Every view is wrapped by `inspector_view`, which resolves `request.tenant` from the signed-in user; every
object is then looked up *within* that tenant, so another tenant's id is a 404 page.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from apps.contacts.personal_data import contact_export
from apps.context.services import context_payload
from apps.core.exceptions import ApplicationError
from apps.inspector import selectors
from apps.inspector.forms import (
    ContactFilterForm,
    ContextPreviewForm,
    DocumentUploadForm,
    KnowledgeSearchForm,
    MemoryCorrectForm,
    MemoryEditForm,
)
from apps.inspector.permissions import InspectorRequest, forbidden, inspector_view
from apps.knowledge.search import knowledge_search
from apps.knowledge.services import document_create, document_delete
from apps.memories import scoring
from apps.memories.models import Memory
from apps.memories.store.editing import memory_correct, memory_delete, memory_edit

CONTACTS_PER_PAGE = 25
BRAIN_MEMORIES_PER_PAGE = 25


def _partial(request: InspectorRequest) -> bool:
    """An htmx request that swaps part of the page (not a boosted navigation, nor htmx restoring a page from
    history after a cache miss: both want the full page)."""
    return bool(request.htmx) and not request.htmx.boosted and not request.htmx.history_restore_request


def _memory_home(memory: Memory) -> str:
    if memory.contact_id is None:
        return reverse("inspector:brain")
    return reverse("inspector:contact", args=[memory.contact_id])


# --- tenant switch (operators) ------------------------------------------------------------------


@require_POST
@inspector_view()
def tenant_switch(request: InspectorRequest) -> HttpResponse:
    if not request.access.can_switch_tenant:
        return forbidden(request, "Only operators can switch tenants.")
    tenant = selectors.tenant_for_switch(tenant_id=request.POST.get("tenant_id", ""))
    request.session[selectors.SESSION_TENANT_KEY] = str(tenant.pk)
    messages.info(request, f"Now inspecting {tenant.name}.")
    return redirect("inspector:contacts")


# --- contacts -----------------------------------------------------------------------------------


@require_GET
@inspector_view()
def contact_list(request: InspectorRequest) -> HttpResponse:
    form = ContactFilterForm(request.GET)
    filters = form.filters()
    contacts = selectors.contact_rows(
        tenant=request.tenant,
        search=filters["search"],
        stage=filters["stage"],
        mood=filters["mood"],
        churn=filters["churn"],
        seen=filters["seen"],
    )
    page = Paginator(contacts, CONTACTS_PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "form": form,
        "page": page,
        "query_string": query.urlencode(),
        "is_filtered": any(filters.values()),
        "stats": selectors.stats_for_tenant(tenant=request.tenant),
    }
    template = "inspector/partials/contact_rows.html" if _partial(request) else "inspector/contacts.html"
    return render(request, template, context)


@require_GET
@inspector_view()
def contact_detail(request: InspectorRequest, contact_id: str) -> HttpResponse:
    tenant = request.tenant
    contact = selectors.contact_for_inspector(tenant=tenant, contact_id=contact_id)
    context = {
        "contact": contact,
        "state": selectors.contact_state_or_default(contact=contact),
        "profile": selectors.profile_get(tenant=tenant, contact=contact),
        "groups": selectors.memories_grouped(tenant=tenant, contact=contact),
        "past": selectors.memories_past(tenant=tenant, contact=contact),
        "entity_tree": selectors.entity_tree(tenant=tenant, contact=contact),
        "count_chart": selectors.memory_count_chart(tenant=tenant, contact=contact),
        "mood_chart": selectors.mood_timeline_chart(tenant=tenant, contact=contact),
        "conversations": selectors.contact_conversations(tenant=tenant, contact=contact),
        "preview_form": ContextPreviewForm(),
    }
    return render(request, "inspector/contact.html", context)


@require_GET
@inspector_view()
def contact_export_json(request: InspectorRequest, contact_id: str) -> HttpResponse:
    contact = selectors.contact_for_inspector(tenant=request.tenant, contact_id=contact_id)
    response = JsonResponse(contact_export(tenant=request.tenant, contact=contact), json_dumps_params={"indent": 2})
    response["Content-Disposition"] = f'attachment; filename="contact-{contact.pk}.json"'
    return response


@require_GET
@inspector_view()
def context_preview(request: InspectorRequest, contact_id: str) -> HttpResponse:
    """Exactly the body GET /api/v1/context/{contact_id}?explain=true returns, and why each memory is in it."""
    tenant = request.tenant
    contact = selectors.contact_for_inspector(tenant=tenant, contact_id=contact_id)
    params = request.GET.copy()
    if "query" not in params and "q" in params:  # links made before the preview took the API's names
        params["query"] = params.pop("q")[-1]
    form = ContextPreviewForm(params or None)
    context: dict[str, Any] = {"contact": contact, "form": form, "body": None}
    if form.is_bound and form.is_valid():
        body = context_payload(
            tenant=tenant,
            contact=contact,
            query=form.cleaned_data["query"] or "",
            conversation=None,
            token_budget=form.cleaned_data["token_budget"],
            explain=True,
            record_access=False,
            as_of=form.cleaned_data["as_of"],
        )
        source_ids = [source for row in body["memories"] for source in row.get("sources", [])]
        rows = [{**row, "breakdown": selectors.score_breakdown(tenant=tenant, row=row)} for row in body["memories"]]
        context.update(
            body=body,
            body_json=json.dumps(body, indent=2, ensure_ascii=False, default=str),
            rows=rows,
            token_budget=form.cleaned_data["token_budget"],
            as_of=form.cleaned_data["as_of"],
            ranker_versions=sorted({row["breakdown"].version for row in rows}),
            outdated_factor=scoring.OUTDATED_FACTOR,
            source_messages=selectors.messages_by_external_id(tenant=tenant, external_ids=source_ids),
            budget_percent=min(100, round(100 * body["tokens_used"] / body["memory_budget"]))
            if body["memory_budget"]
            else 0,
        )
    template = "inspector/partials/context_result.html" if _partial(request) else "inspector/context_preview.html"
    return render(request, template, context)


# --- memories -----------------------------------------------------------------------------------


def _memory_page(
    request: InspectorRequest,
    memory: Memory,
    *,
    edit_form: MemoryEditForm | None = None,
    correct_form: MemoryCorrectForm | None = None,
) -> HttpResponse:
    tenant = request.tenant
    context = {
        "memory": memory,
        "sources": selectors.memory_sources(tenant=tenant, memory=memory),
        "revisions": selectors.memory_revisions(tenant=tenant, memory=memory),
        "supersedes": selectors.memories_superseded_by(tenant=tenant, memory=memory),
        "edit_form": edit_form or MemoryEditForm(initial={"content": memory.content, "importance": memory.importance}),
        "correct_form": correct_form or MemoryCorrectForm(initial={"content": memory.content}, auto_id="correct_%s"),
        "home_url": _memory_home(memory),
    }
    return render(request, "inspector/memory.html", context)


@require_GET
@inspector_view()
def memory_detail(request: InspectorRequest, memory_id: str) -> HttpResponse:
    return _memory_page(request, selectors.memory_for_inspector(tenant=request.tenant, memory_id=memory_id))


@require_POST
@inspector_view(write=True)
def memory_edit_view(request: InspectorRequest, memory_id: str) -> HttpResponse:
    memory = selectors.memory_for_inspector(tenant=request.tenant, memory_id=memory_id)
    form = MemoryEditForm(request.POST)
    if not form.is_valid():
        return _memory_page(request, memory, edit_form=form)
    changes = form.changes(memory)
    if not changes:
        messages.info(request, "Nothing changed.")
        return redirect("inspector:memory", memory_id=memory.pk)
    try:
        memory_edit(memory=memory, actor=request.access.actor, **changes)
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, "Memory updated.")
    return redirect("inspector:memory", memory_id=memory.pk)


@require_POST
@inspector_view(write=True)
def memory_pin_view(request: InspectorRequest, memory_id: str) -> HttpResponse:
    memory = selectors.memory_for_inspector(tenant=request.tenant, memory_id=memory_id)
    is_pinned = request.POST.get("is_pinned") == "true"
    try:
        memory_edit(memory=memory, actor=request.access.actor, is_pinned=is_pinned)
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, "Pinned: it will not decay." if is_pinned else "Unpinned.")
    return redirect("inspector:memory", memory_id=memory.pk)


@require_POST
@inspector_view(write=True)
def memory_correct_view(request: InspectorRequest, memory_id: str) -> HttpResponse:
    memory = selectors.memory_for_inspector(tenant=request.tenant, memory_id=memory_id)
    form = MemoryCorrectForm(request.POST, auto_id="correct_%s")
    if not form.is_valid():
        return _memory_page(request, memory, correct_form=form)
    try:
        change = memory_correct(memory=memory, content=form.cleaned_data["content"], actor=request.access.actor)
    except ApplicationError as error:
        messages.error(request, error.message)
        return redirect("inspector:memory", memory_id=memory.pk)
    if change.memory.pk == memory.pk:
        messages.info(request, "That is what this memory already says.")
    else:
        messages.success(request, "Corrected: the new memory supersedes the old one, which is kept in history.")
    return redirect("inspector:memory", memory_id=change.memory.pk)


@require_http_methods(["GET", "POST"])
@inspector_view(write=True)
def memory_delete_view(request: InspectorRequest, memory_id: str) -> HttpResponse:
    """GET asks for confirmation; POST deletes (soft: out of context at once, kept in history)."""
    memory = selectors.memory_for_inspector(tenant=request.tenant, memory_id=memory_id)
    if request.method == "GET":
        return render(request, "inspector/memory_confirm_delete.html", {"memory": memory})
    memory_delete(memory=memory, actor=request.access.actor, note="deleted in the inspector")
    messages.success(request, f"Deleted “{memory.content[:80]}”. It no longer reaches the AI.")
    return redirect(_memory_home(memory))


# --- conversations --------------------------------------------------------------------------------


@require_GET
@inspector_view()
def conversation_detail(request: InspectorRequest, conversation_id: str) -> HttpResponse:
    tenant = request.tenant
    conversation = selectors.conversation_for_inspector(tenant=tenant, conversation_id=conversation_id)
    highlight = request.GET.get("message", "")
    page_number: Any = request.GET.get("page")
    if highlight and not page_number:
        page_number = selectors.message_page_number(tenant=tenant, conversation=conversation, external_id=highlight)
    messages_page = Paginator(
        selectors.conversation_messages(tenant=tenant, conversation=conversation), selectors.CONVERSATION_PAGE
    ).get_page(page_number)
    return render(
        request,
        "inspector/conversation.html",
        {"conversation": conversation, "page": messages_page, "highlight": highlight},
    )


# --- the tenant brain ---------------------------------------------------------------------------------


@require_GET
@inspector_view()
def brain(request: InspectorRequest) -> HttpResponse:
    tenant = request.tenant
    query = request.GET.get("q", "")[:200]
    memories = selectors.brain_memories(tenant=tenant, query=query)
    page = Paginator(memories, BRAIN_MEMORIES_PER_PAGE).get_page(request.GET.get("page"))
    return render(
        request,
        "inspector/brain.html",
        {
            "q": query,
            "page": page,
            "documents": selectors.knowledge_documents(tenant=tenant),
            "upload_form": DocumentUploadForm(),
            "search_form": KnowledgeSearchForm(),
            "count_chart": selectors.memory_count_chart(tenant=tenant, contact=None),
        },
    )


@require_GET
@inspector_view()
def knowledge_search_view(request: InspectorRequest) -> HttpResponse:
    form = KnowledgeSearchForm(request.GET)
    hits = []
    if form.is_valid():
        hits = knowledge_search(
            tenant=request.tenant, query=form.cleaned_data["q"], top_k=form.cleaned_data["top_k"] or 5
        )
    context = {"search_form": form, "hits": hits, "searched": form.is_valid()}
    template = "inspector/partials/knowledge_results.html" if _partial(request) else "inspector/knowledge_search.html"
    return render(request, template, context)


@require_POST
@inspector_view(write=True)
def document_upload(request: InspectorRequest) -> HttpResponse:
    form = DocumentUploadForm(request.POST, request.FILES)
    if form.is_valid():
        try:
            document = document_create(
                tenant=request.tenant,
                title=form.cleaned_data["title"],
                content=form.cleaned_data["content"],
                content_type=form.cleaned_data["content_type"],
                actor=request.access.actor,
            )
        except ApplicationError as error:
            messages.error(request, error.message)
        else:
            if document.status == document.Status.FAILED:
                messages.error(request, f"“{document.title}”: {document.status_message}")
            else:
                messages.success(request, f"Added “{document.title}”: the worker chunks and embeds it (Processing).")
    else:
        problems = form.errors.get("__all__") or [f"{name}: {errors[0]}" for name, errors in form.errors.items()]
        for problem in problems:
            messages.error(request, str(problem))
    return redirect(reverse("inspector:brain") + "#documents")


@require_GET
@inspector_view()
def document_detail(request: InspectorRequest, document_id: str) -> HttpResponse:
    document = selectors.knowledge_document_get(tenant=request.tenant, document_id=document_id)
    return render(request, "inspector/document.html", {"document": document, "chunks": document.chunks.all()})


@require_http_methods(["GET", "POST"])
@inspector_view(write=True)
def document_delete_view(request: InspectorRequest, document_id: str) -> HttpResponse:
    document = selectors.knowledge_document_get(tenant=request.tenant, document_id=document_id)
    if request.method == "GET":
        return render(request, "inspector/document_confirm_delete.html", {"document": document})
    title = document.title
    document_delete(document=document)
    messages.success(request, f"Deleted “{title}” from the knowledge base.")
    return redirect(reverse("inspector:brain") + "#documents")
