"""The API's JSON parser: JSON text that PostgreSQL cannot store is refused at the boundary with a 400.

JSON may spell NUL (`\\u0000`) and unpaired UTF-16 surrogates (`\\ud83d` alone); PostgreSQL's text and jsonb
refuse both, so a body carrying them reached the database and failed there with a 500 (found by the fuzz
test: PATCH /contacts/{id} with such `metadata`). Serializer string fields already refuse them; this covers
what they do not see (keys and values of free-form objects such as `metadata`)."""

from __future__ import annotations

import re
from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def _unstorable(value: Any) -> bool:
    if isinstance(value, str):
        return _UNSTORABLE.search(value) is not None
    if isinstance(value, dict):
        return any(_unstorable(key) or _unstorable(item) for key, item in value.items())
    if isinstance(value, list):
        return any(_unstorable(item) for item in value)
    return False


class StorableJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        data = super().parse(stream, media_type, parser_context)
        if _unstorable(data):
            raise ParseError("JSON text must not contain NUL (\\u0000) or unpaired surrogate characters.")
        return data
