from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.exceptions import Throttled
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.timing import stopwatch
from apps.tenants.authentication import ApiPrincipal
from apps.tenants.concurrency import TenantBusy, heavy_slot_release, heavy_slot_take
from apps.tenants.models import Tenant


class TenantAPIView(APIView):
    """Base for every tenant API: `self.tenant` is the tenant of the calling key, and the only one.

    A view whose POST is heavy (`heavy_post = True`: it holds a write worker for up to seconds) takes one of the
    tenant's in-flight slots once the key and the rate limit passed, and gives it back with its response
    (apps/tenants/concurrency.py); none free: 429 with Retry-After.

    With `ENGRAM["SERVER_TIMING"]` on, every answer carries a `Server-Timing` header: where the request's time
    went inside the view, authentication and rate limit included (apps/core/timing.py; the phases the code
    marks, and SQL)."""

    required_scope: str | None = None
    heavy_post = False
    _heavy_slot: str | None = None

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

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        if not settings.ENGRAM["SERVER_TIMING"]:
            return super().dispatch(request, *args, **kwargs)
        with stopwatch() as watch:
            response = super().dispatch(request, *args, **kwargs)
        response["Server-Timing"] = watch.header()
        return response

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if self.heavy_post and request.method == "POST":
            try:
                self._heavy_slot = heavy_slot_take(tenant=self.tenant)
            except TenantBusy as busy:
                raise Throttled(wait=busy.wait, detail=str(busy)) from None

    def finalize_response(self, request: Request, response: Response, *args: Any, **kwargs: Any) -> Response:
        if self._heavy_slot is not None:
            heavy_slot_release(tenant_id=self.tenant.pk, token=self._heavy_slot)
            self._heavy_slot = None
        return super().finalize_response(request, response, *args, **kwargs)
