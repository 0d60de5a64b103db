"""POST /mcp: the MCP server over streamable HTTP, on the same gunicorn workers and port as the REST API.

The view is a DRF view like every API view, so a request meets the same door: `Authorization: Bearer <key>`
(`ApiKeyAuthentication`: 401 without a valid key, before any MCP message is read), the tenant bound for row-level
security, the key's rate limit (429 with Retry-After). Then the body goes to the official SDK's streamable HTTP
transport (stateless, JSON responses: every POST carries one JSON-RPC message and gets its answer in the
response, so nothing outlives the request and any worker can serve any call), entered through asgiref's
`async_to_sync` — see apps/mcp_server/server.py for how a tool call comes back to this thread.

GET (a server-to-client event stream) and DELETE (ending a session) are 405: a stateless server has neither."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

import anyio
from asgiref.sync import async_to_sync
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.views import APIView

from apps.mcp_server.server import HTTP_SERVER, REQUEST_CALLER
from apps.mcp_server.tools import Caller
from apps.tenants.authentication import ApiPrincipal
from apps.tenants.models import ApiKey

Exchange = tuple[int, list[tuple[bytes, bytes]], bytes]


async def _exchange(scope: dict[str, Any], body: bytes) -> Exchange:
    """One HTTP exchange with the SDK's transport, in memory: the request body in, the status, headers and body
    out. A fresh session manager per request: stateless, nothing to keep between requests."""
    manager = StreamableHTTPSessionManager(app=HTTP_SERVER, json_response=True, stateless=True)
    status, headers, chunks = 500, [], []
    delivered, answered = False, anyio.Event()

    async def receive() -> MutableMapping[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()  # the client stays connected until the answer is out
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status, headers = message["status"], list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                answered.set()

    async with manager.run():
        await manager.handle_request(scope, receive, send)
    return status, headers, b"".join(chunks)


def _scope(request: Request) -> dict[str, Any]:
    django_request = request._request
    host, _, port = django_request.get_host().partition(":")
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": django_request.method,
        "scheme": django_request.scheme,
        "path": django_request.path,
        "raw_path": django_request.path.encode(),
        "root_path": "",
        "query_string": django_request.META.get("QUERY_STRING", "").encode("latin-1"),
        "headers": [
            (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in django_request.headers.items()
        ],
        "server": (host, int(port or 80)),
        "client": (django_request.META.get("REMOTE_ADDR", ""), 0),
        "state": {},
    }


class RawBodyParser(BaseParser):
    """The body is the SDK's to read (JSON-RPC, its own validation and error answers)."""

    media_type = "*/*"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Mapping[str, Any]:
        return {}


@extend_schema(exclude=True)  # MCP, not REST: its tools are listed by the protocol (tools/list), docs/agents.md
class McpApi(APIView):
    required_scope = ApiKey.SCOPE_READ  # any valid key gets in; each tool checks the scope it needs
    parser_classes = [RawBodyParser]

    def post(self, request: Request) -> HttpResponse:
        principal = request.user
        assert isinstance(principal, ApiPrincipal)
        token = REQUEST_CALLER.set(Caller(tenant=principal.tenant, api_key=principal.api_key))
        try:
            status, headers, body = async_to_sync(_exchange)(_scope(request), request._request.body)
        finally:
            REQUEST_CALLER.reset(token)
        response = HttpResponse(body, status=status)
        for name, value in headers:
            if name.lower() not in (b"content-length", b"connection", b"transfer-encoding"):
                response[name.decode("latin-1")] = value.decode("latin-1")
        return response

    def get(self, request: Request) -> HttpResponse:
        return self._not_offered()

    def delete(self, request: Request) -> HttpResponse:
        return self._not_offered()

    @staticmethod
    def _not_offered() -> HttpResponse:
        response = HttpResponse(status=405)
        response["Allow"] = "POST"
        return response
