"""The one check every text passes on its way in: PostgreSQL stores neither NUL nor unpaired UTF-16 surrogates
(text and jsonb refuse both, and the request failed there with a 500). Whatever the entry point — JSON bodies
(apps/core/parsers.py), form and multipart fields and query parameters (`BoundaryMiddleware`), uploaded files
(`uploaded_text`), MCP tool arguments — it calls `storable_check`, which answers a 400 naming the field.

Uploaded files are decoded here too, by their declared charset, else a byte-order mark, else UTF-8, else the
charset detected from the bytes; a file that decodes under none of them is a 415, never stored raw.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterator
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.core.files.uploadhandler import FileUploadHandler
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError

from apps.core.exceptions import ApplicationError

UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
PROBLEM = "must not contain NUL (\\u0000) or unpaired surrogate characters"


def is_storable(text: str) -> bool:
    return UNSTORABLE.search(text) is None


def _unstorable_paths(value: Any, path: str) -> Iterator[str]:
    if isinstance(value, str):
        if not is_storable(value):
            yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            inner = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and not is_storable(key):
                yield f"{path}.<key>" if path else "<key>"
            else:
                yield from _unstorable_paths(item, inner)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _unstorable_paths(item, f"{path}[{index}]" if path else f"[{index}]")


def unstorable_field(value: Any, *, field: str = "") -> str | None:
    """The first place in `value` (a string, or JSON-like data) holding text PostgreSQL cannot store, named as
    a dotted path under `field` (`metadata.note`, `messages[3].message`), or None when all of it is storable."""
    return next(_unstorable_paths(value, field), None)


class UnstorableText(ApplicationError):
    def __init__(self, field: str) -> None:
        name = field or "body"
        super().__init__(
            f"{name} {PROBLEM}.", code="invalid_text", status_code=400, details={name: [f"This field {PROBLEM}."]}
        )
        self.field = name


def storable_check(value: Any, *, field: str = "") -> None:
    """Raise `UnstorableText` (400, naming the field) when `value` holds text PostgreSQL cannot store."""
    found = unstorable_field(value, field=field)
    if found is not None:
        raise UnstorableText(found)


# --- uploaded files -----------------------------------------------------------------------------------

BOMS = (
    (b"\xef\xbb\xbf", "utf-8-sig"),
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)


class UndecodableFile(ApplicationError):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(
            f"{field}: {reason}; send UTF-8 (or UTF-16 with a byte-order mark, or declare the charset).",
            code="unsupported_media_type",
            status_code=415,
            details={field: [reason]},
        )


def _detected(raw: bytes) -> str | None:
    """The text of `raw` in the charset detected from its bytes, when the detector is confident it is text."""
    from charset_normalizer import from_bytes

    best = from_bytes(raw).best()
    if best is None or best.chaos > 0.2:  # binary, or text so garbled no charset reads it
        return None
    return str(best)


def uploaded_text(raw: bytes, *, field: str = "file", declared_charset: str | bytes | None = None) -> str:
    """The text of an uploaded file: by its declared charset, else its byte-order mark, else UTF-8, else the
    detected charset. 415 when none decodes it; 400 (naming the field) when the text holds NUL or unpaired
    surrogates (a binary file saved as .txt, UTF-16 without a mark read as UTF-8)."""
    text: str | None = None
    if isinstance(declared_charset, bytes):  # Django keeps a multipart part's parameters as bytes
        declared_charset = declared_charset.decode("latin-1")
    if declared_charset:
        try:
            text = raw.decode(declared_charset)
        except LookupError:
            raise UndecodableFile(field, f"unknown charset {declared_charset[:40]!r}") from None
        except UnicodeDecodeError:
            raise UndecodableFile(field, f"the bytes are not valid {declared_charset[:40]}") from None
    if text is None:
        for mark, codec in BOMS:
            if raw.startswith(mark):
                try:
                    text = raw.decode(codec)
                except UnicodeDecodeError:
                    raise UndecodableFile(field, f"the bytes are not valid {codec}") from None
                break
    if text is None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if text is None or "\x00" in text:  # NULs in valid UTF-8: UTF-16 without its mark, or a binary file
            text = _detected(raw) or text
    if text is None:
        raise UndecodableFile(field, "the file is not text in a charset that could be detected")
    storable_check(text, field=field)
    return text


# --- the web boundary: body size, query parameters and form fields ------------------------------------------


def max_request_bytes() -> int:
    """The largest body accepted: Django's cap for non-file data, or a document plus its form's room."""
    return max(int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE or 0), int(settings.ENGRAM["MAX_DOCUMENT_BYTES"]) + 65_536)


class UploadTooLarge(RequestDataTooBig):
    def __init__(self, limit: int) -> None:
        super().__init__(f"The uploaded file is larger than {limit} bytes.")
        self.limit = limit


class LimitedUploadHandler(FileUploadHandler):
    """First of the upload handlers: counts a file's bytes as they stream in and stops at the document limit,
    so an oversized upload is refused after the limit's worth of bytes, not spooled whole first."""

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        limit = int(settings.ENGRAM["MAX_DOCUMENT_BYTES"])
        if start + len(raw_data) > limit:
            raise UploadTooLarge(limit)
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None


def _error(request: HttpRequest, status: int, code: str, message: str, details: Any = None) -> HttpResponse:
    if request.path.startswith("/api/"):
        body = {"error": {"code": code, "message": message, "details": details or {}}}
        return JsonResponse(body, status=status)
    page = f"<!doctype html><title>{status}</title><h1>{status}</h1><p>{html.escape(message)}</p>"
    return HttpResponse(page, status=status, content_type="text/html; charset=utf-8")


FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


class BoundaryMiddleware:
    """First of the middleware: a body over the cap is a 413 before a byte of it is read; NUL in the path
    names nothing (404); a query parameter (name or value) or, outside the API, a form field that PostgreSQL
    cannot store is a 400 naming it. API bodies are checked by their parsers (apps/core/parsers.py) with the
    same `storable_check`."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path:
            return _error(request, 404, "not_found", "Not found.")
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return _error(request, 400, "bad_request", "Content-Length is not a number.")
        limit = max_request_bytes()
        if length > limit:
            return _error(request, 413, "too_large", f"The request body is larger than {limit} bytes.")
        problem = self._problem(request)
        if problem is not None:
            return problem
        return self.get_response(request)

    def _problem(self, request: HttpRequest) -> HttpResponse | None:
        for name in request.GET:
            found = "<query parameter name>" if not is_storable(name) else None
            found = found or unstorable_field(request.GET.getlist(name), field=name)
            if found:
                return self._unstorable(request, found.split("[")[0])
        if request.method == "POST" and not request.path.startswith("/api/"):
            if request.content_type not in FORM_TYPES:
                return None
            try:
                fields = request.POST
            except UploadTooLarge as exc:
                return _error(request, 413, "too_large", f"The file is larger than {exc.limit} bytes.")
            except (RequestDataTooBig, TooManyFieldsSent, MultiPartParserError) as exc:
                return _error(request, 400, "bad_request", str(exc))
            for name in fields:
                found = "<field name>" if not is_storable(name) else None
                found = found or unstorable_field(fields.getlist(name), field=name)
                if found:
                    return self._unstorable(request, found.split("[")[0])
        return None

    def _unstorable(self, request: HttpRequest, field: str) -> HttpResponse:
        error = UnstorableText(field)
        return _error(request, 400, error.code, error.message, error.details)
