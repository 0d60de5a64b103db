from __future__ import annotations

import hmac

from apps.core.rows import columns, fetch_row, instances
from apps.tenants.models import ApiKey, Tenant
from apps.tenants.services import hash_key, split_key

_KEY_WITH_TENANT = (
    f"SELECT {columns(ApiKey, 'k')}, {columns(Tenant, 't')} FROM {ApiKey._meta.db_table} k "
    f"JOIN {Tenant._meta.db_table} t ON t.id = k.tenant_id WHERE k.prefix = %s"
)


def api_key_resolve(*, plaintext: str) -> ApiKey | None:
    """The active key matching `plaintext`, with its tenant, or None."""
    parsed = split_key(plaintext)
    if parsed is None:
        return None
    prefix, full = parsed
    row = fetch_row(_KEY_WITH_TENANT, [prefix])  # every API request: one statement, no ORM compilation
    if row is None:
        return None
    api_key, tenant = instances(row, [ApiKey, Tenant])
    assert isinstance(api_key, ApiKey) and isinstance(tenant, Tenant)
    api_key.tenant = tenant
    if api_key.revoked_at is not None or not tenant.is_active:
        return None
    if not hmac.compare_digest(api_key.key_hash, hash_key(full)):
        return None
    return api_key
