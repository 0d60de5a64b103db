"""Business errors raised by services; apps.core.exception_handler turns them into the API error shape."""

from __future__ import annotations

from typing import Any


class ApplicationError(Exception):
    """A business rule refused the request; maps to a 4xx with a stable code."""

    def __init__(self, message: str, *, code: str = "invalid", status_code: int = 400, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status_code = status_code
        self.details = details if details is not None else {}


class NotFound(ApplicationError):
    def __init__(self, message: str = "Not found.", *, details: Any = None) -> None:
        super().__init__(message, code="not_found", status_code=404, details=details)
