from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from apps.tenants.authentication import ApiPrincipal
from apps.tenants.models import ApiKey


class HasApiKeyScope(BasePermission):
    """GET needs the `read` scope, writes need `write`; a view may declare `required_scope` itself
    (a search sent as POST is still a read)."""

    message = "This API key lacks the scope this operation needs."

    def has_permission(self, request: Request, view: Any) -> bool:
        if not isinstance(request.user, ApiPrincipal):
            return False
        needed = getattr(view, "required_scope", None)
        if needed is None:
            needed = ApiKey.SCOPE_READ if request.method in SAFE_METHODS else ApiKey.SCOPE_WRITE
        return needed in request.user.api_key.scopes
