from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import CursorPagination, LimitOffsetPagination
from rest_framework.request import Request


def _whole_number(request: Request, name: str, *, minimum: int) -> int | None:
    """The query parameter `name` as an int ≥ `minimum`, None when absent; anything else is a 400 naming it
    (DRF's paginator silently fell back to its default, so `limit=abc` listed 50 rows as if asked)."""
    raw = request.query_params.get(name)
    if raw is None:
        return None
    value = raw.strip()
    if not value.isascii() or not value.isdigit() or int(value) < minimum:
        raise ValidationError({name: [f"Must be a whole number, at least {minimum}."]})
    return int(value)


class LimitOffset(LimitOffsetPagination):
    """`limit` (default 50; a larger one than 200 is cut to 200) and `offset` (default 0); a malformed one is a
    400."""

    default_limit = 50
    max_limit = 200

    def get_limit(self, request: Request) -> int:
        limit = _whole_number(request, self.limit_query_param, minimum=1)
        return self.default_limit if limit is None else min(limit, self.max_limit)

    def get_offset(self, request: Request) -> int:
        return _whole_number(request, self.offset_query_param, minimum=0) or 0

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1 if parameter["name"] == self.limit_query_param else 0
        return parameters


class TimelineCursor(CursorPagination):
    page_size = 50
    ordering = "-created_at"
