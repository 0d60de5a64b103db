from __future__ import annotations

import json
from typing import Any

from django import template
from django.db.models import QuerySet

from apps.inspector.selectors import tenant_choices as tenant_choices_selector
from apps.tenants.models import Tenant

register = template.Library()


@register.simple_tag
def tenant_choices() -> QuerySet[Tenant]:
    """The operator's tenant switcher (the base template asks only when the user may switch)."""
    return tenant_choices_selector()


@register.filter
def percent(value: Any) -> int:
    """0..1 → 0..100, for the width of an importance or score bar."""
    try:
        return max(0, min(100, round(float(value) * 100)))
    except (TypeError, ValueError):
        return 0


@register.filter
def number(value: Any, digits: int = 3) -> str:
    """A number with `digits` decimals and a true minus sign (−1.303), for a signed weight or contribution."""
    try:
        text = f"{float(value):.{int(digits)}f}"
    except (TypeError, ValueError):
        return ""
    return text.replace("-", "\u2212")


@register.filter
def signed(value: Any, digits: int = 3) -> str:
    """A contribution with its sign: +1.823, −1.303 (0 as 0.000)."""
    text = number(value, digits)
    return f"+{text}" if text and not text.startswith("\u2212") and float(value) != 0 else text


@register.filter
def get_item(mapping: Any, key: Any) -> Any:
    return mapping.get(key) if hasattr(mapping, "get") else None


@register.filter
def plain_value(value: Any) -> str:
    """A scaffold value as people read it: text as is, flat lists and mappings comma-separated, the rest as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(item, str | int | float) for item in value):
        return ", ".join(str(item) for item in value)
    if isinstance(value, dict) and all(isinstance(item, str | int | float) for item in value.values()):
        return ", ".join(f"{key}: {item}" for key, item in value.items())
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


@register.filter
def spaced(value: Any) -> str:
    """access_frequency → access frequency."""
    return str(value).replace("_", " ")


@register.inclusion_tag("inspector/partials/long_id.html")
def long_id(value: Any, label: str = "id") -> dict[str, Any]:
    """An id as clients send it (up to 255 characters, often without a space: URLs, hashes): shown on one
    line, cut with an ellipsis where it would push the page wider, the whole of it in the tooltip and a
    Copy button."""
    return {"value": "" if value is None else str(value), "label": label}
