from __future__ import annotations

import hmac

from apps.tenants.models import ApiKey
from apps.tenants.services import hash_key, split_key


def api_key_resolve(*, plaintext: str) -> ApiKey | None:
    """The active key matching `plaintext`, with its tenant, or None."""
    parsed = split_key(plaintext)
    if parsed is None:
        return None
    prefix, full = parsed
    api_key = ApiKey.objects.select_related("tenant").filter(prefix=prefix).first()
    if api_key is None or api_key.revoked_at is not None or not api_key.tenant.is_active:
        return None
    if not hmac.compare_digest(api_key.key_hash, hash_key(full)):
        return None
    return api_key
