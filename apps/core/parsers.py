"""The API's parsers: text that PostgreSQL cannot store is refused at the boundary with a 400 naming the field.

JSON may spell NUL (`\\u0000`) and unpaired UTF-16 surrogates (`\\ud83d` alone); multipart and form fields may
carry a raw NUL. PostgreSQL's text and jsonb refuse both, so a body carrying them reached the database and
failed there with a 500 (found by the fuzz test: PATCH /contacts/{id} with such `metadata`; a knowledge upload
with a NUL). Every parser runs the same check, apps/core/boundary.py `storable_check`, on everything it parsed:
keys and values of free-form objects such as `metadata` included."""

from __future__ import annotations

from typing import Any

from rest_framework.parsers import FormParser, JSONParser, MultiPartParser

from apps.core.boundary import storable_check


class StorableJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        data = super().parse(stream, media_type, parser_context)
        storable_check(data)
        return data


def _fields_check(data: Any) -> None:
    for name in data:
        storable_check(name, field="<field name>")
        storable_check(data.getlist(name), field=name)


class StorableMultiPartParser(MultiPartParser):
    """Multipart fields checked here; the files' contents when they are decoded (`boundary.uploaded_text`)."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        parsed = super().parse(stream, media_type, parser_context)
        _fields_check(parsed.data)
        return parsed


class StorableFormParser(FormParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        data = super().parse(stream, media_type, parser_context)
        _fields_check(data)
        return data
