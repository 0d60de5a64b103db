"""Read models of the inspector. Every function takes the tenant first and filters by it first, so an id
from another tenant is simply "not found"."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from apps.contacts.models import Contact, ContactState, InteractionLog
from apps.contacts.selectors import contact_list
from apps.conversations.models import Conversation, Message
from apps.core.exceptions import NotFound
from apps.entities.models import Entity
from apps.entities.selectors import entity_list
from apps.inspector import breakdown, charts
from apps.knowledge.models import KnowledgeDocument
from apps.memories import scoring
from apps.memories.models import Memory, MemoryEntity, MemoryProfile, MemoryRevision
from apps.memories.retrieval import ranker as ranking
from apps.memories.retrieval.search import weights_for
from apps.memories.selectors import memory_history, memory_list
from apps.memories.store.revisions import revision_changes
from apps.tenants.models import Membership, Tenant

SESSION_TENANT_KEY = "inspector_tenant_id"


# --- who may see what ---------------------------------------------------------------------------


@dataclass(frozen=True)
class InspectorAccess:
    """The tenant a signed-in user inspects, and what they may do there."""

    tenant: Tenant
    actor: str  # written into MemoryRevision.actor: user:<username>
    can_write: bool  # owners, and operators with tenants.edit_all_tenants; viewers only read
    can_switch_tenant: bool  # operators with tenants.inspect_all_tenants (superusers have it)


def _parse_uuid(value: Any) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (TypeError, ValueError):
        return None


def _uuid_or_404(value: Any, what: str) -> uuid.UUID:
    """Ids come from URLs: a malformed one is as "not found" as an unknown one."""
    parsed = _parse_uuid(value)
    if parsed is None:
        raise NotFound(f"{what} not found.")
    return parsed


def _has_permission(user: AbstractBaseUser | AnonymousUser, permission: str) -> bool:
    has_perm = getattr(user, "has_perm", None)  # PermissionsMixin users (superusers have every permission)
    return bool(has_perm and has_perm(permission))


def inspector_access_resolve(
    *, user: AbstractBaseUser | AnonymousUser, selected_tenant_id: str | None
) -> InspectorAccess | None:
    """A tenant owner or viewer gets their Membership's tenant (never another, whatever the session says).
    An operator — a user with the `tenants.inspect_all_tenants` permission (superusers have every
    permission) — gets the tenant picked in the switcher, else their own membership's, else the first one,
    and may change it only with `tenants.edit_all_tenants` (or as its owner). Being staff alone (the admin
    site) gives no access to other tenants' memory."""
    if not user.is_authenticated:
        return None
    actor = f"user:{user.get_username()}"
    membership = Membership.objects.select_related("tenant").filter(user_id=user.pk).first()
    if _has_permission(user, "tenants.inspect_all_tenants"):
        selected_pk = _parse_uuid(selected_tenant_id) if selected_tenant_id else None
        tenant = Tenant.objects.filter(pk=selected_pk).first() if selected_pk else None
        if tenant is None:
            tenant = membership.tenant if membership else Tenant.objects.order_by("name").first()
        if tenant is None:
            return None
        owns = membership is not None and membership.tenant_id == tenant.pk and membership.role == Membership.ROLE_OWNER
        can_write = _has_permission(user, "tenants.edit_all_tenants") or owns
        return InspectorAccess(tenant=tenant, actor=actor, can_write=can_write, can_switch_tenant=True)
    if membership is None or not membership.tenant.is_active:
        return None
    return InspectorAccess(
        tenant=membership.tenant,
        actor=actor,
        can_write=membership.role == Membership.ROLE_OWNER,
        can_switch_tenant=False,
    )


def tenant_choices() -> QuerySet[Tenant]:
    """Tenants an operator can switch to."""
    return Tenant.objects.order_by("name")


def tenant_for_switch(*, tenant_id: str) -> Tenant:
    tenant = Tenant.objects.filter(pk=_uuid_or_404(tenant_id, "Tenant")).first()
    if tenant is None:
        raise NotFound("Tenant not found.")
    return tenant


# --- contacts -----------------------------------------------------------------------------------

CHURN_BUCKETS: dict[str, tuple[float, float | None]] = {"low": (0.0, 0.3), "medium": (0.3, 0.6), "high": (0.6, None)}
SEEN_WINDOWS: dict[str, timedelta] = {"24h": timedelta(hours=24), "7d": timedelta(days=7), "30d": timedelta(days=30)}
SEEN_OLDER = "older"
SEEN_NEVER = "never"
DEFAULT_STAGE = "new"
DEFAULT_MOOD = "neutral"


def _current_memory_q(prefix: str = "") -> Q:
    return Q(
        **{
            f"{prefix}valid_to__isnull": True,
            f"{prefix}deleted_at__isnull": True,
            f"{prefix}is_compressed": False,
        }
    )


def contact_rows(
    *,
    tenant: Tenant,
    search: str = "",
    stage: str = "",
    mood: str = "",
    churn: str = "",
    seen: str = "",
    now: datetime | None = None,
) -> QuerySet[Contact]:
    """The contacts list: search by id or name, filter by stage, mood, churn risk bucket and last seen.
    A contact with no state yet counts as stage "new", mood "neutral", churn 0."""
    now = now or timezone.now()
    contacts = (
        contact_list(tenant=tenant, search=search.strip())
        .select_related("state")
        .annotate(memory_count=Count("memories", filter=_current_memory_q("memories__")))
    )
    if stage:
        stage_q = Q(state__relationship_stage=stage)
        contacts = contacts.filter(stage_q | Q(state__isnull=True) if stage == DEFAULT_STAGE else stage_q)
    if mood:
        mood_q = Q(state__mood=mood)
        contacts = contacts.filter(mood_q | Q(state__isnull=True) if mood == DEFAULT_MOOD else mood_q)
    if churn in CHURN_BUCKETS:
        low, high = CHURN_BUCKETS[churn]
        churn_q = Q(state__churn_risk__gte=low)
        if high is not None:
            churn_q &= Q(state__churn_risk__lt=high)
        contacts = contacts.filter(churn_q | Q(state__isnull=True) if low == 0.0 else churn_q)
    if seen in SEEN_WINDOWS:
        contacts = contacts.filter(last_seen_at__gte=now - SEEN_WINDOWS[seen])
    elif seen == SEEN_OLDER:
        contacts = contacts.filter(last_seen_at__lt=now - SEEN_WINDOWS["30d"])
    elif seen == SEEN_NEVER:
        contacts = contacts.filter(last_seen_at__isnull=True)
    return contacts


def contact_for_inspector(*, tenant: Tenant, contact_id: Any) -> Contact:
    contact = (
        Contact.objects.select_related("state").filter(tenant=tenant, pk=_uuid_or_404(contact_id, "Contact")).first()
    )
    if contact is None:
        raise NotFound("Contact not found.")
    return contact


def contact_state_or_default(*, contact: Contact) -> ContactState:
    return ContactState.objects.filter(contact=contact).first() or ContactState(contact=contact, tenant=contact.tenant)


def profile_get(*, tenant: Tenant, contact: Contact | None) -> MemoryProfile | None:
    return MemoryProfile.objects.filter(tenant=tenant, contact=contact).first()


# --- memories -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryGroup:
    memory_type: str
    memories: list[Memory]


def memories_grouped(*, tenant: Tenant, contact: Contact | None) -> list[MemoryGroup]:
    """Current memories of a scope by type (facts, preferences, episodes, patterns), most important first."""
    by_type: dict[str, list[Memory]] = defaultdict(list)
    scope = memory_list(tenant=tenant, contact=contact, tenant_scope_only=contact is None)
    for memory in scope.order_by("-importance", "-created_at"):
        by_type[memory.memory_type].append(memory)
    return [MemoryGroup(memory_type=kind, memories=by_type[kind]) for kind in scoring.MEMORY_TYPES if by_type[kind]]


def memories_past(*, tenant: Tenant, contact: Contact | None, limit: int = 20) -> list[Memory]:
    """Recently superseded, merged, compressed or deleted memories of a scope: still in history."""
    scope = Memory.objects.filter(tenant=tenant, contact=contact)
    not_current = Q(valid_to__isnull=False) | Q(deleted_at__isnull=False) | Q(is_compressed=True)
    return list(scope.filter(not_current).select_related("superseded_by").order_by("-updated_at")[:limit])


def memory_for_inspector(*, tenant: Tenant, memory_id: Any) -> Memory:
    memory = (
        Memory.objects.select_related("contact", "superseded_by", "compressed_into")
        .prefetch_related("entities")
        .filter(tenant=tenant, pk=_uuid_or_404(memory_id, "Memory"))
        .first()
    )
    if memory is None:
        raise NotFound("Memory not found.")
    return memory


def memories_superseded_by(*, tenant: Tenant, memory: Memory) -> QuerySet[Memory]:
    return Memory.objects.filter(tenant=tenant, superseded_by=memory).order_by("-valid_to")


@dataclass(frozen=True)
class SourceMessage:
    external_id: str
    message: Message | None  # None: the message is not (or no longer) in the ledger


def memory_sources(*, tenant: Tenant, memory: Memory) -> list[SourceMessage]:
    """The messages a memory was learned from, in the order it learned them."""
    found = messages_by_external_id(tenant=tenant, external_ids=memory.source_message_ids)
    return [
        SourceMessage(external_id=external_id, message=found.get(external_id))
        for external_id in memory.source_message_ids
    ]


def messages_by_external_id(*, tenant: Tenant, external_ids: Iterable[str]) -> dict[str, Message]:
    wanted = [external_id for external_id in dict.fromkeys(external_ids) if external_id]
    if not wanted:
        return {}
    rows = Message.objects.filter(tenant=tenant, external_id__in=wanted).select_related("conversation")
    return {message.external_id: message for message in rows}


@dataclass(frozen=True)
class RevisionRow:
    revision: MemoryRevision
    changes: dict[str, Any]


def memory_revisions(*, tenant: Tenant, memory: Memory) -> list[RevisionRow]:
    """The memory's history, each revision with just the fields it changed."""
    rows = memory_history(tenant=tenant, memory=memory).select_related("related_memory")
    return [
        RevisionRow(
            revision=revision,
            changes={}
            if revision.action == MemoryRevision.Action.CREATED
            else revision_changes(revision.before, revision.after),
        )
        for revision in rows
    ]


# --- entity graph -------------------------------------------------------------------------------


@dataclass(frozen=True)
class EntityNode:
    entity: Entity
    groups: list[MemoryGroup] = field(default_factory=list)

    @property
    def memory_count(self) -> int:
        return sum(len(group.memories) for group in self.groups)

    @property
    def aliases(self) -> list[dict[str, Any]]:
        """The other names the entity goes by, as written, with how often and since when they were used."""
        learned = (self.entity.metadata or {}).get("aliases") or {}
        return [
            {"slug": slug, "name": learned.get(slug, {}).get("name", slug), **learned.get(slug, {})}
            for slug in self.entity.aliases
        ]


def entity_tree(*, tenant: Tenant, contact: Contact | None) -> list[EntityNode]:
    """Each entity of the scope with the current memories linked to it (facts, preferences, episodes,
    patterns), most mentioned entity first. Two queries whatever the size of the graph."""
    entities = list(entity_list(tenant=tenant, contact=contact))
    links = (
        MemoryEntity.objects.filter(entity__in=entities, memory__tenant=tenant)
        .filter(_current_memory_q("memory__"))
        .select_related("memory")
        .order_by("-memory__importance")
    )
    by_entity: dict[Any, dict[str, list[Memory]]] = defaultdict(lambda: defaultdict(list))
    for link in links:
        by_entity[link.entity_id][link.memory.memory_type].append(link.memory)
    return [
        EntityNode(
            entity=entity,
            groups=[
                MemoryGroup(memory_type=kind, memories=by_entity[entity.pk][kind])
                for kind in scoring.MEMORY_TYPES
                if by_entity[entity.pk][kind]
            ],
        )
        for entity in entities
    ]


# --- charts -------------------------------------------------------------------------------------


def memory_count_chart(
    *, tenant: Tenant, contact: Contact | None, weeks: int = 12, now: datetime | None = None
) -> charts.CountChart:
    """Memories over time, by when they were learned (the source message's time, `valid_from`) and until
    they stopped being current (superseded, compressed into a pattern, or deleted)."""
    now = now or timezone.now()
    rows = Memory.objects.filter(tenant=tenant, contact=contact).values_list(
        "valid_from", "valid_to", "deleted_at", "is_compressed", "updated_at"
    )
    spans: list[tuple[datetime, datetime | None]] = []
    for valid_from, valid_to, deleted_at, is_compressed, updated_at in rows:
        ends = [moment for moment in (valid_to, deleted_at, updated_at if is_compressed else None) if moment]
        spans.append((valid_from, min(ends) if ends else None))
    return charts.count_chart(charts.weekly_memory_counts(spans, now=now, weeks=weeks))


def mood_timeline_chart(*, tenant: Tenant, contact: Contact, limit: int = 60) -> charts.MoodChart | None:
    """The last `limit` classified messages of the contact (InteractionLog), as a mood timeline."""
    rows = list(
        InteractionLog.objects.filter(tenant=tenant, contact=contact)
        .order_by("-occurred_at", "-id")
        .values_list("occurred_at", "mood", "is_transition")[:limit]
    )
    return charts.mood_chart([charts.MoodReading(at=at, mood=mood, is_transition=flag) for at, mood, flag in rows])


# --- context preview ------------------------------------------------------------------------------


def score_breakdown(*, tenant: Tenant, row: dict[str, Any]) -> breakdown.Breakdown:
    """A context row's score taken apart (breakdown.py): the hand weights' signal × weight, or the fitted
    ranker's contributions and how its relevance makes the score. The preview is a contact's context, so the
    contact scope's weights; the fitted weights are printed only when `explain` names the loaded version."""
    explain = row.get("explain") or {}
    fitted = ranking.active()
    version = (explain.get("ranker") or {}).get("version")
    fitted_weights = (
        dict(zip(fitted.features, fitted.weights, strict=True))
        if fitted is not None and fitted.version == version
        else {}
    )
    return breakdown.score_breakdown(
        explain=explain,
        score=float(row.get("score") or 0.0),
        outdated=bool(row.get("outdated")),
        weights=weights_for(tenant=tenant, is_tenant_scope=False),
        fitted_weights=fitted_weights,
    )


# --- conversations --------------------------------------------------------------------------------

CONVERSATION_PAGE = 100


def conversation_for_inspector(*, tenant: Tenant, conversation_id: Any) -> Conversation:
    conversation = (
        Conversation.objects.select_related("contact")
        .filter(tenant=tenant, pk=_uuid_or_404(conversation_id, "Conversation"))
        .first()
    )
    if conversation is None:
        raise NotFound("Conversation not found.")
    return conversation


def conversation_messages(*, tenant: Tenant, conversation: Conversation) -> QuerySet[Message]:
    return Message.objects.filter(tenant=tenant, conversation=conversation).order_by("occurred_at", "id")


def message_page_number(*, tenant: Tenant, conversation: Conversation, external_id: str) -> int:
    """The page (of CONVERSATION_PAGE messages) a message is on, so a source link opens where it is."""
    message = Message.objects.filter(tenant=tenant, conversation=conversation, external_id=external_id).first()
    if message is None:
        return 1
    earlier = conversation_messages(tenant=tenant, conversation=conversation).filter(
        Q(occurred_at__lt=message.occurred_at) | Q(occurred_at=message.occurred_at, id__lt=message.pk)
    )
    return earlier.count() // CONVERSATION_PAGE + 1


def contact_conversations(*, tenant: Tenant, contact: Contact, limit: int = 10) -> list[Conversation]:
    return list(Conversation.objects.filter(tenant=tenant, contact=contact).order_by("-last_message_at")[:limit])


# --- the tenant brain ---------------------------------------------------------------------------------


def brain_memories(*, tenant: Tenant, query: str = "") -> QuerySet[Memory]:
    return memory_list(tenant=tenant, tenant_scope_only=True, query=query.strip()).order_by(
        "-importance", "-created_at"
    )


def knowledge_documents(*, tenant: Tenant) -> QuerySet[KnowledgeDocument]:
    return KnowledgeDocument.objects.filter(tenant=tenant).order_by("-created_at")


def knowledge_document_get(*, tenant: Tenant, document_id: Any) -> KnowledgeDocument:
    document = KnowledgeDocument.objects.filter(tenant=tenant, pk=_uuid_or_404(document_id, "Document")).first()
    if document is None:
        raise NotFound("Document not found.")
    return document


def stats_for_tenant(*, tenant: Tenant) -> dict[str, int]:
    current = Memory.objects.filter(tenant=tenant).filter(_current_memory_q())
    return {
        "contacts": Contact.objects.filter(tenant=tenant).count(),
        "memories": current.filter(contact__isnull=False).count(),
        "brain_memories": current.filter(contact__isnull=True).count(),
        "documents": KnowledgeDocument.objects.filter(tenant=tenant).count(),
    }
