"""One error shape for every API failure: {"error": {"code", "message", "details"}}."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import page_not_found
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from apps.core.boundary import UploadTooLarge
from apps.core.exceptions import ApplicationError

logger = logging.getLogger(__name__)

QUERY_CANCELED = "57014"  # PostgreSQL's SQLSTATE for a statement cancelled by statement_timeout


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details if details is not None else {}}}


def _first_message(detail: Any) -> str:
    if isinstance(detail, dict):
        for key, value in detail.items():
            inner = _first_message(value)
            return inner if key in ("non_field_errors", "detail") else f"{key}: {inner}"
    if isinstance(detail, list) and detail:
        return _first_message(detail[0])
    return str(detail)


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ApplicationError):
        if exc.status_code >= 500:  # a dependency is down: the operator needs the reason, the client does not
            logger.error("API request failed: %s (%s)", exc, exc.code)
        return Response(error_body(exc.code, exc.message, exc.details), status=exc.status_code)
    if isinstance(exc, UploadTooLarge):
        return Response(
            error_body("too_large", f"The uploaded file is larger than {exc.limit} bytes."),
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return Response(
            error_body("too_large", f"The request body is larger than {limit} bytes."),
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, OperationalError):  # PostgreSQL down or restarting, or a statement over its timeout
        timed_out = getattr(exc.__cause__, "sqlstate", "") == QUERY_CANCELED
        logger.error("API request failed on the database: %s", exc)
        if timed_out:
            body = error_body("timeout", "The request took too long and was cancelled; retry, or narrow it.")
        else:
            body = error_body("database_unavailable", "The database is unavailable; retry shortly.")
        return Response(body, status=status.HTTP_503_SERVICE_UNAVAILABLE, headers={"Retry-After": "5"})
    if isinstance(exc, RecursionError):  # json.loads on a body nested thousands of levels deep
        exc = exceptions.ParseError("JSON parse error - nested too deeply.")
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(detail=exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()

    response = exception_handler(exc, context)
    if response is None:
        logger.exception("Unhandled API error", exc_info=exc)
        return Response(
            error_body("server_error", "Internal server error."), status=status.HTTP_500_INTERNAL_SERVER_ERROR
        )

    if isinstance(exc, exceptions.ValidationError):
        response.data = error_body("validation_error", _first_message(exc.detail), exc.detail)
    elif isinstance(exc, exceptions.APIException):
        detail = exc.detail
        message = _first_message(detail)
        code = exc.get_codes() if isinstance(exc.get_codes(), str) else exc.default_code
        response.data = error_body(str(code), message)
    return response


def json_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """JSON in the API's error shape under /api/, Django's HTML 404 page everywhere else."""
    if request.path.startswith("/api/"):
        return JsonResponse(error_body("not_found", "Not found."), status=404)
    return page_not_found(request, exception or Http404())


def json_server_error(request: HttpRequest) -> JsonResponse:
    return JsonResponse(error_body("server_error", "Internal server error."), status=500)
