"""The OpenAPI schema's conventions (drf-spectacular): a serializer nested in an API view is named after the view
(`MemorySearchApi.InputSerializer` → `MemorySearchApiInput`), so the many `InputSerializer`s of the style guide
do not collide into one component; the API key is a bearer token."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema


class EngramAutoSchema(AutoSchema):
    def get_serializer_name(self, serializer: Any, direction: Any) -> str:
        qualified = type(serializer).__qualname__
        return qualified.replace(".", "") if "." in qualified else super().get_serializer_name(serializer, direction)


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "apps.tenants.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "`Authorization: Bearer eng_<prefix>_<secret>`"}
