"""The OpenAPI schema's conventions (drf-spectacular): a serializer nested in an API view is named after the view
(`MemorySearchApi.InputSerializer` → `MemorySearchApiInput`), so the many `InputSerializer`s of the style guide
do not collide into one component; a serializer that needs at least one of some fields (`AtLeastOneOf`) says so
with `anyOf`; the API key is a bearer token.

Field rules reach the schema from the fields themselves (apps/core/fields.py: a validator's pattern, lengths,
ranges, choices). What OpenAPI 3.0 cannot say is in `DESCRIPTION` (config/settings/base.py) and docs/api.md."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema


class EngramAutoSchema(AutoSchema):
    def get_serializer_name(self, serializer: Any, direction: Any) -> str:
        qualified = type(serializer).__qualname__
        return qualified.replace(".", "") if "." in qualified else super().get_serializer_name(serializer, direction)

    def _map_serializer(self, serializer: Any, direction: Any, bypass_extensions: bool = False) -> dict[str, Any]:
        schema: dict[str, Any] = super()._map_serializer(serializer, direction, bypass_extensions)
        names = getattr(serializer, "at_least_one_of", ())
        if names and direction == "request":
            schema["anyOf"] = [{"required": [name]} for name in names]
            schema.setdefault("description", f"At least one of {', '.join(names)}.")
        return schema


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "apps.tenants.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "`Authorization: Bearer eng_<prefix>_<secret>`"}
