from __future__ import annotations

from typing import Any

from rest_framework.views import APIView

from apps.tenants.authentication import ApiPrincipal
from apps.tenants.models import Tenant


class TenantAPIView(APIView):
    """Base for every tenant API: `self.tenant` is the tenant of the calling key, and the only one."""

    required_scope: str | None = None

    @property
    def tenant(self) -> Tenant:
        principal = self.request.user
        assert isinstance(principal, ApiPrincipal)
        return principal.tenant

    @property
    def actor(self) -> str:
        principal = self.request.user
        assert isinstance(principal, ApiPrincipal)
        return principal.actor

    def get_serializer_context(self) -> dict[str, Any]:
        return {"request": self.request, "tenant": self.tenant}
