"""Serializer fields the APIs share."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


class StrictCharField(serializers.CharField):
    """A string field that takes strings only: DRF's CharField turns `12` or `true` into "12" / "True",
    so a client's type error went unnoticed (a number searched as text). Anything but a string is a 400."""

    default_error_messages = {"not_a_string": "Must be a string, not {kind}."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("not_a_string", kind=type(data).__name__ if data is not None else "null")
        return super().to_internal_value(data)
