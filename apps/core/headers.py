"""Headers every page and API answer carries (the outermost middleware: on the boundary's refusals too).
Static files keep their own caching."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse


class ResponseHeadersMiddleware:
    """`Cache-Control: no-store` on every dynamic answer: the API's and the inspector's bodies hold personal
    data (a contact's words, memories, mood), which no browser or proxy cache may keep. The strict
    `Content-Security-Policy` of settings.CONTENT_SECURITY_POLICY on every page (Django 5.2 has none built in):
    the inspector, the admin and the API docs share one origin, so a script injected into one page must not
    run there."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.static_prefix = settings.STATIC_URL or "/static/"

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.path.startswith(self.static_prefix):
            return response
        if "no-store" not in response.get("Cache-Control", ""):
            response["Cache-Control"] = "no-store"
        response["Content-Security-Policy"] = settings.CONTENT_SECURITY_POLICY
        return response
