"""`Authorization: Bearer <key>` binds every API request to exactly one tenant."""

from __future__ import annotations

from dataclasses import dataclass

from rest_framework import authentication, exceptions
from rest_framework.request import Request

from apps.core.tenancy import tenant_bind
from apps.tenants.models import ApiKey, Tenant
from apps.tenants.selectors import api_key_resolve
from apps.tenants.services import api_key_touch


@dataclass(frozen=True)
class ApiPrincipal:
    """`request.user` for API calls: the tenant the key belongs to, never a Django user."""

    tenant: Tenant
    api_key: ApiKey
    is_authenticated: bool = True
    is_anonymous: bool = False

    @property
    def actor(self) -> str:
        return f"api_key:{self.api_key.prefix}"


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[ApiPrincipal, ApiKey] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        parts = header.split()
        if len(parts) != 2 or parts[0] != self.keyword:
            raise exceptions.AuthenticationFailed("Use 'Authorization: Bearer <api key>'.")
        api_key = api_key_resolve(plaintext=parts[1])
        if api_key is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked API key.")
        api_key_touch(api_key=api_key)
        tenant_bind(api_key.tenant_id)  # from here on PostgreSQL shows this tenant's rows only
        return ApiPrincipal(tenant=api_key.tenant, api_key=api_key), api_key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword
