from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from apps.contacts.models import Contact, ErasureRecord
from apps.contacts.personal_data import contact_rows_delete
from apps.core.db import retried_on_deadlock
from apps.core.exceptions import ApplicationError
from apps.core.redis import RedisError, scope_keys_forget
from apps.tenants.models import Tenant

logger = logging.getLogger(__name__)

MAX_EXTERNAL_ID_LENGTH = 255


def _validate_external_id(external_id: str) -> str:
    external_id = (external_id or "").strip()
    if not external_id:
        raise ApplicationError("contact_id must not be empty.", details={"contact_id": ["This field is required."]})
    if len(external_id) > MAX_EXTERNAL_ID_LENGTH:
        raise ApplicationError(
            f"contact_id must be at most {MAX_EXTERNAL_ID_LENGTH} characters.",
            details={"contact_id": [f"Ensure this field has no more than {MAX_EXTERNAL_ID_LENGTH} characters."]},
        )
    if "/" in external_id:
        raise ApplicationError(
            "contact_id must not contain '/' (it is part of URLs).",
            details={"contact_id": ["'/' is not allowed."]},
        )
    return external_id


def contact_create(
    *,
    tenant: Tenant,
    external_id: str,
    display_name: str = "",
    channel: str = "",
    metadata: dict[str, Any] | None = None,
) -> Contact:
    external_id = _validate_external_id(external_id)
    try:
        with transaction.atomic():
            return Contact.objects.create(
                tenant=tenant,
                external_id=external_id,
                display_name=display_name,
                channel=channel,
                metadata=metadata or {},
            )
    except IntegrityError:
        raise ApplicationError(f"Contact '{external_id}' already exists.", code="conflict", status_code=409) from None


def contact_get_or_create(
    *,
    tenant: Tenant,
    external_id: str,
    display_name: str = "",
    channel: str = "",
    metadata: dict[str, Any] | None = None,
) -> Contact:
    """Ingest creates contacts on first use; later calls fill in a display name or channel that was missing."""
    external_id = _validate_external_id(external_id)
    contact, created = Contact.objects.get_or_create(
        tenant=tenant,
        external_id=external_id,
        defaults={"display_name": display_name, "channel": channel, "metadata": metadata or {}},
    )
    if not created:
        _fill_missing(contact, display_name=display_name, channel=channel)
    return contact


def _fill_missing(contact: Contact, *, display_name: str, channel: str) -> None:
    """Later messages fill in a display name or channel the contact was created without."""
    changed: list[str] = []
    if display_name and not contact.display_name:
        contact.display_name = display_name
        changed.append("display_name")
    if channel and not contact.channel:
        contact.channel = channel
        changed.append("channel")
    if changed:
        contact.save(update_fields=[*changed, "updated_at"])


def contacts_get_or_create_many(*, tenant: Tenant, wanted: Sequence[tuple[str, str, str]]) -> dict[str, Contact]:
    """`contact_get_or_create` for a batch: (external_id, display_name, channel) in order, the first of each id
    creating it; a few statements whatever the batch's size. Returns {external id as given: Contact}."""
    ids = {given: _validate_external_id(given) for given, _, _ in wanted}
    found = {
        contact.external_id: contact for contact in Contact.objects.filter(tenant=tenant, external_id__in=ids.values())
    }
    missing: dict[str, Contact] = {}
    for given, display_name, channel in wanted:
        external_id = ids[given]
        if external_id not in found and external_id not in missing:
            missing[external_id] = Contact(
                tenant=tenant, external_id=external_id, display_name=display_name, channel=channel, metadata={}
            )
    if missing:
        Contact.objects.bulk_create(list(missing.values()), ignore_conflicts=True)  # a concurrent request may win
        found.update(
            {contact.external_id: contact for contact in Contact.objects.filter(tenant=tenant, external_id__in=missing)}
        )
    for given, display_name, channel in wanted:
        _fill_missing(found[ids[given]], display_name=display_name, channel=channel)
    return {given: found[external_id] for given, external_id in ids.items()}


def contact_update(*, contact: Contact, data: dict[str, Any]) -> Contact:
    fields = [field for field in ("display_name", "channel", "metadata") if field in data]
    for field in fields:
        setattr(contact, field, data[field])
    if fields:
        contact.save(update_fields=[*fields, "updated_at"])
    return contact


def contact_digest(*, tenant_id: Any, external_id: str) -> str:
    """A keyed digest of a contact's id (HMAC-SHA256 with the SECRET_KEY): names an erased contact in the
    audit without keeping the id."""
    message = f"{tenant_id}:{external_id}".encode()
    return hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).hexdigest()


def contact_delete(*, contact: Contact, actor: str = "system") -> ErasureRecord:
    """Erase a contact and everything remembered about them (GDPR art. 17): every row the registry of their
    data names (apps/contacts/personal_data.py: what the export holds, nothing less), and, once that commits,
    their Redis keys (session windows, lexicon, cached embeddings). An ErasureRecord without personal data
    says who erased whom (by digest), when, and how many rows went."""
    tenant, tenant_id, contact_id = contact.tenant, contact.tenant_id, contact.pk
    digest = contact_digest(tenant_id=tenant_id, external_id=contact.external_id)

    def delete() -> ErasureRecord:
        with transaction.atomic():
            # the row lock before Django collects the rows to cascade: a concurrent write of a row of this
            # contact that commits meanwhile waits (its deferred foreign-key check locks the contact row), then
            # fails in its own transaction, instead of this deletion failing at commit on a row it never saw
            locked = Contact.objects.select_for_update().filter(pk=contact_id).first()
            deleted = contact_rows_delete(tenant=tenant, contact=locked) if locked is not None else {}
            record = ErasureRecord.objects.create(
                tenant_id=tenant_id, contact_digest=digest, actor=actor[:150], rows=deleted
            )
            transaction.on_commit(lambda: _redis_forget(record=record, tenant_id=tenant_id, contact_id=contact_id))
        return record

    return retried_on_deadlock(delete)


def _redis_forget(*, record: ErasureRecord, tenant_id: Any, contact_id: Any) -> None:
    try:
        removed = scope_keys_forget(tenant_id=tenant_id, contact_id=contact_id)
    except RedisError as exc:  # what Redis keeps expires by itself (apps/core/redis.py)
        logger.warning("Redis unavailable: keys of an erased contact not removed (%s)", exc)
        return
    ErasureRecord.objects.filter(pk=record.pk).update(redis_keys=removed)
