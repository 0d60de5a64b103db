"""Serializer fields the APIs share, and the rules they carry as validators so that the OpenAPI schema states
them (drf-spectacular turns a field's `RegexValidator` into `pattern`, its length validators into
`minLength`/`maxLength`): a rule is written once, and the code and the schema cannot drift apart."""

from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from rest_framework import serializers

MAX_ID_LENGTH = 255

# A character `str.strip()` keeps (Python's `\s` is `str.isspace()`): the text is not blank. DRF's own blank check
# runs first on trimmed fields, so there it never fires; on a field that keeps its whitespace (a message) it is
# the rule. As a schema `pattern` (unanchored: "contains") it tells a client or a fuzzer that "   " is refused.
NOT_BLANK_REGEX = r"\S"
NOT_BLANK = RegexValidator(NOT_BLANK_REGEX, message="This field may not be blank.", code="blank")

# A client's id (contact_id, conversation_id): part of URLs, so no '/'; and not blank. (`$` may match before a
# final line break, but `[^/]` takes line breaks too: no string with a '/' matches.) The MCP tools' JSON schemas
# use the same two regexes.
ID_REGEX = r"^[^/]*[^/\s][^/]*$"
ID_PATTERN = RegexValidator(ID_REGEX, message="'/' is not allowed (ids are part of URLs).", code="invalid_id")


class StrictCharField(serializers.CharField):
    """A string field that takes strings only: DRF's CharField turns `12` or `true` into "12" / "True",
    so a client's type error went unnoticed (a number searched as text). Anything but a string is a 400.
    Unless blank is allowed, it carries `NOT_BLANK` (after any validator of its own, whose pattern the schema
    shows first: a field with a pattern of its own states non-blankness in it, as `ID_PATTERN` does)."""

    default_error_messages = {"not_a_string": "Must be a string, not {kind}."}

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not self.allow_blank:
            self.validators.append(NOT_BLANK)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("not_a_string", kind=type(data).__name__ if data is not None else "null")
        return super().to_internal_value(data)


class IdField(StrictCharField):
    """A client's id that becomes part of a URL: at most 255 characters, not blank, no '/'."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", MAX_ID_LENGTH)
        kwargs["validators"] = [ID_PATTERN, *kwargs.get("validators", [])]
        super().__init__(**kwargs)


class AtLeastOneOf(serializers.Serializer):
    # A serializer that needs at least one of `at_least_one_of` (a PATCH with nothing to change is a 400). The
    # schema states it too: `anyOf` of one `required` per field (apps/core/schema.py). A comment, not a docstring:
    # drf-spectacular would show a docstring as the description of every such component.

    at_least_one_of: tuple[str, ...] = ()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not any(name in attrs for name in self.at_least_one_of):
            raise serializers.ValidationError(f"Send at least one of {', '.join(self.at_least_one_of)}.")
        return attrs
