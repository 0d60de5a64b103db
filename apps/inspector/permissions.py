"""Every inspector view runs behind `inspector_view`: signed in, resolved to exactly one tenant, and any
object that is not that tenant's is a 404 page (never a hint that it exists elsewhere)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django_htmx.middleware import HtmxDetails

from apps.core.exceptions import NotFound
from apps.core.tenancy import tenant_bind
from apps.inspector.selectors import SESSION_TENANT_KEY, InspectorAccess, inspector_access_resolve
from apps.tenants.models import Tenant


class InspectorRequest(HttpRequest):
    """What `inspector_view` adds to the request (for type checkers; it is the same object)."""

    tenant: Tenant
    access: InspectorAccess
    htmx: HtmxDetails


View = Callable[..., HttpResponse]


def not_found(request: HttpRequest) -> HttpResponse:
    # the project's handler404 answers JSON (API clients); people in the inspector get a page
    return render(request, "inspector/404.html", status=404)


def forbidden(request: HttpRequest, reason: str) -> HttpResponse:
    return render(request, "inspector/403.html", {"reason": reason}, status=403)


def inspector_view(*, write: bool = False) -> Callable[[View], View]:
    """Resolve `request.tenant` and `request.access` or answer 403; turn a missing object into a 404 page.
    `write=True` also requires an owner (or an operator): viewers read only."""

    def decorator(view: View) -> View:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            access = inspector_access_resolve(
                user=request.user, selected_tenant_id=request.session.get(SESSION_TENANT_KEY)
            )
            if access is None:
                return forbidden(request, "Your account is not linked to a tenant. Ask an operator for access.")
            if write and not access.can_write:
                return forbidden(request, "Your role can view this tenant's memory but not change it.")
            tenant_bind(access.tenant.pk)  # PostgreSQL shows this tenant's rows only (apps/core/tenancy.py)
            request.tenant = access.tenant  # type: ignore[attr-defined]
            request.access = access  # type: ignore[attr-defined]
            try:
                return view(request, *args, **kwargs)
            except (Http404, NotFound):
                return not_found(request)

        return login_required(wrapped)

    return decorator
