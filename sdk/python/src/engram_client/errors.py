"""Errors by kind. Every error the API answers is one `{"error": {"code", "message", "details"}}` body; the
client raises the exception of its status, carrying that code, message and details."""

from __future__ import annotations

from typing import Any


class EngramError(Exception):
    """Base of everything this package raises."""


class APIConnectionError(EngramError):
    """The server could not be reached, or the connection broke before an answer (after the retries)."""


class APITimeoutError(APIConnectionError):
    """No answer within the configured timeout (after the retries)."""


class APIStatusError(EngramError):
    """The server answered with an error status."""

    def __init__(self, message: str, *, status_code: int, code: str = "", details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.code = code
        self.details: Any = details if details is not None else {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status_code={self.status_code}, code={self.code!r}, message={self.message!r})"


class ValidationError(APIStatusError):
    """400 (bad input, text that cannot be stored), 413 (too large) or 415 (undecodable upload).
    `field_errors` maps each field to its messages (`{"top_k": ["Ensure this value is less than or equal to 50."]}`)."""

    @property
    def field_errors(self) -> dict[str, list[str]]:
        if not isinstance(self.details, dict):
            return {}
        return {str(name): _messages(value) for name, value in self.details.items()}


class AuthenticationError(APIStatusError):
    """401: no key, a malformed key, an unknown or revoked key."""


class PermissionDeniedError(APIStatusError):
    """403: the key lacks the scope the operation needs (`read` or `write`)."""


class NotFoundError(APIStatusError):
    """404: no such object in this tenant (another tenant's objects are not found either)."""


class ConflictError(APIStatusError):
    """409: the contact exists already, a conversation of another contact, a message_id used elsewhere."""


class RateLimitError(APIStatusError):
    """429 after the retries: the key's rate limit. `retry_after` is the server's Retry-After, in seconds."""

    def __init__(
        self, message: str, *, status_code: int, code: str = "", details: Any = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message, status_code=status_code, code=code, details=details)
        self.retry_after = retry_after


class ServerError(APIStatusError):
    """5xx after the retries (503: the database or the embedder unavailable, a statement over its timeout)."""


def _messages(value: Any) -> list[str]:
    if isinstance(value, list):
        return [item if isinstance(item, str) else repr(item) for item in value]
    if isinstance(value, dict):
        return [f"{key}: {message}" for key, inner in value.items() for message in _messages(inner)]
    return [str(value)]


def error_for_status(
    status_code: int, *, code: str, message: str, details: Any, retry_after: float | None
) -> APIStatusError:
    if status_code == 429:
        return RateLimitError(message, status_code=status_code, code=code, details=details, retry_after=retry_after)
    kinds: dict[int, type[APIStatusError]] = {
        400: ValidationError,
        401: AuthenticationError,
        403: PermissionDeniedError,
        404: NotFoundError,
        409: ConflictError,
        413: ValidationError,
        415: ValidationError,
        422: ValidationError,
    }
    kind = kinds.get(status_code, ServerError if status_code >= 500 else APIStatusError)
    return kind(message, status_code=status_code, code=code, details=details)
