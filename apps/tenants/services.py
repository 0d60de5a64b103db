from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.text import slugify

from apps.core.db import retried_on_deadlock
from apps.core.exceptions import ApplicationError
from apps.core.redis import scope_keys_forget_quietly
from apps.tenants.models import ApiKey, Membership, Tenant

KEY_PREFIX = "eng_"


@dataclass(frozen=True)
class IssuedApiKey:
    """The only moment the plaintext key exists: show it once, then forget it."""

    api_key: ApiKey
    plaintext: str


def hash_key(plaintext: str) -> str:
    # keys are 32 random bytes: a fast hash is enough, a slow KDF would only add latency
    return hashlib.sha256(plaintext.encode()).hexdigest()


def split_key(plaintext: str) -> tuple[str, str] | None:
    """`eng_<prefix>_<secret>` → (prefix, plaintext) or None when it is not shaped like a key."""
    if not plaintext.startswith(KEY_PREFIX):
        return None
    parts = plaintext[len(KEY_PREFIX) :].split("_", 1)
    if len(parts) != 2 or not parts[0] or not parts[1]:
        return None
    return parts[0], plaintext


def tenant_create(*, name: str, slug: str | None = None, settings: dict[str, Any] | None = None) -> Tenant:
    slug = slugify(slug or name)
    if not slug:
        raise ApplicationError("A tenant needs a name made of letters or digits.")
    if Tenant.objects.filter(slug=slug).exists():
        raise ApplicationError(f"A tenant with slug '{slug}' already exists.", code="conflict", status_code=409)
    return Tenant.objects.create(name=name, slug=slug, settings=settings or {})


def tenant_delete(*, tenant: Tenant) -> None:
    """Delete a tenant with every row it owns (cascade) and, once that commits, every Redis key of its
    scopes (apps/core/redis.py)."""
    tenant_id = tenant.pk
    # first, on its own: its keys stop working and the periodic fan-out skips it, so fewer workers write
    # rows of it while the cascade runs
    Tenant.objects.filter(pk=tenant_id).update(is_active=False)

    def delete() -> None:
        with transaction.atomic():
            # the row lock before Django collects the rows to cascade: a worker whose insert of a row of this
            # tenant commits meanwhile (its deferred foreign-key check locks the tenant row) waits, then fails
            # in its own transaction, instead of this deletion failing at commit on a row it never saw
            locked = Tenant.objects.select_for_update().filter(pk=tenant_id).first()
            if locked is not None:
                locked.delete()
            transaction.on_commit(lambda: scope_keys_forget_quietly(tenant_id=tenant_id, whole_tenant=True))

    retried_on_deadlock(delete)  # a worker updating one of its contacts meanwhile locks in the other order


def api_key_create(*, tenant: Tenant, name: str, scopes: list[str] | None = None) -> IssuedApiKey:
    """A new key; `scopes` None means every scope, an empty list is refused (it must not mean "all")."""
    if scopes is not None and not scopes:
        raise ApplicationError("Give the key at least one scope.", details={"scopes": ["At least one scope."]})
    scopes = sorted(set(scopes if scopes is not None else ApiKey.SCOPES))
    unknown = set(scopes) - set(ApiKey.SCOPES)
    if unknown:
        raise ApplicationError(f"Unknown scopes: {', '.join(sorted(unknown))}.")
    prefix = secrets.token_hex(4)
    plaintext = f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    api_key = ApiKey.objects.create(
        tenant=tenant, name=name, prefix=prefix, key_hash=hash_key(plaintext), scopes=scopes
    )
    return IssuedApiKey(api_key=api_key, plaintext=plaintext)


def api_key_revoke(*, api_key: ApiKey) -> ApiKey:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at", "updated_at"])
    return api_key


LAST_USED_RESOLUTION_SECONDS = 60


def api_key_record_use(*, api_key_id: int, used_at: datetime) -> int:
    """Move `last_used_at` forward (never back); returns the number of rows changed."""
    return (
        ApiKey.objects.filter(pk=api_key_id)
        .filter(Q(last_used_at__isnull=True) | Q(last_used_at__lt=used_at))
        .update(last_used_at=used_at)
    )


def api_key_touch(*, api_key: ApiKey) -> None:
    """Note that a key was used: one conditional UPDATE, at most about once a minute per key (the key row,
    read on every request anyway, says when it was last written). Nothing here depends on Redis or the
    broker: queueing this through Celery made every request fail once the broker was down."""
    now = timezone.now()
    if api_key.last_used_at and (now - api_key.last_used_at).total_seconds() < LAST_USED_RESOLUTION_SECONDS:
        return
    recorded = (
        ApiKey.objects.filter(pk=api_key.pk)
        .filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - timedelta(seconds=LAST_USED_RESOLUTION_SECONDS))
        )
        .update(last_used_at=now)
    )
    if recorded:
        api_key.last_used_at = now


@transaction.atomic
def tenant_owner_create(
    *, tenant: Tenant, username: str, password: str, email: str = "", role: str = Membership.ROLE_OWNER
) -> AbstractBaseUser:
    user_model = get_user_model()
    user = user_model.objects.create_user(username=username, password=password, email=email)
    Membership.objects.create(user=user, tenant=tenant, role=role)
    return user
