"""The MCP server: Engram's tools (apps/mcp_server/tools.py) on the official SDK's low-level `Server`, served over
streamable HTTP at /mcp (apps/mcp_server/http.py) and over stdio (`manage.py mcp_stdio`).

The SDK is asynchronous, the services are Django's synchronous ORM code. A tool call hops back to the one Django
thread that owns the caller's database connection — the request's thread over HTTP (the view enters the SDK with
asgiref's `async_to_sync`, whose `sync_to_async(thread_sensitive=True)` runs code back in that thread), or the
command's single sync thread over stdio — so row-level security binds the same connection the service uses.

Who calls: over HTTP the view has authenticated the key (the REST API's `ApiKeyAuthentication`, its rate limit)
and put the caller in `REQUEST_CALLER`; over stdio the key given to the command is resolved again on every call
(a revoked key stops working at once) and counted against the same rate limit."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import mcp_types as types
from asgiref.sync import sync_to_async
from django.core.serializers.json import DjangoJSONEncoder
from django.db import DatabaseError
from mcp.server import Server, ServerRequestContext
from pydantic import ValidationError

from apps.core.boundary import storable_check
from apps.core.exceptions import ApplicationError
from apps.core.tenancy import tenant_bind
from apps.mcp_server.tools import TOOLS, Caller, Tool, ToolFailure
from apps.tenants.selectors import api_key_resolve
from apps.tenants.services import api_key_touch
from apps.tenants.throttling import rate_limit_wait

logger = logging.getLogger(__name__)

INSTRUCTIONS = (
    "Engram is long-term memory for this conversation's end-user (a contact, named by your contact_id) and for the "
    "business itself (omit contact_id). Before you answer, call get_context (or search_memory) with the message "
    "you are answering; after each turn, call add_memory with what was said. Ids are yours: reuse the same "
    "contact_id for the same person."
)

REQUEST_CALLER: ContextVar[Caller | None] = ContextVar("engram_mcp_caller", default=None)


def http_caller() -> Caller:
    caller = REQUEST_CALLER.get()
    if caller is None:  # the view always sets it; a missing one must never fall through to another tenant
        raise ToolFailure("Not authenticated.")
    return caller


def stdio_caller(plaintext: str) -> Callable[[], Caller]:
    def resolve() -> Caller:
        api_key = api_key_resolve(plaintext=plaintext)
        if api_key is None:
            raise ToolFailure("Invalid or revoked API key.")
        wait = rate_limit_wait(api_key=api_key)
        if wait is not None:
            raise ToolFailure(f"Rate limit reached: retry in {max(1, round(wait))} s.")
        api_key_touch(api_key=api_key)
        tenant_bind(api_key.tenant_id)
        return Caller(tenant=api_key.tenant, api_key=api_key)

    return resolve


def _json_safe(body: Any) -> Any:
    return json.loads(json.dumps(body, cls=DjangoJSONEncoder))


def _invoke(resolve: Callable[[], Caller], tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    """In the Django thread: who calls, may they, are the arguments storable and valid, then the tool."""
    caller = resolve()
    if tool.scope not in caller.api_key.scopes:
        raise ToolFailure(f"This API key lacks the '{tool.scope}' scope that {tool.name} needs.")
    storable_check(arguments)  # NUL and unpaired surrogates: refused naming the field (apps/core/boundary.py)
    try:
        parsed = tool.arguments.model_validate(arguments)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}" for error in exc.errors()
        )
        raise ToolFailure(f"Invalid arguments: {problems}") from None
    return _json_safe(tool.run(caller, parsed))


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def build_server(resolve: Callable[[], Caller]) -> Server[Any]:
    """The MCP server whose tools act for the caller `resolve` names (in the Django thread)."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=tool.name,
                    description=tool.description,
                    input_schema=tool.arguments.model_json_schema(),
                    annotations=types.ToolAnnotations(
                        read_only_hint=tool.read_only, destructive_hint=tool.destructive, open_world_hint=False
                    ),
                )
                for tool in TOOLS.values()
            ]
        )

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = TOOLS.get(params.name)
        if tool is None:
            return _error(f"Unknown tool '{params.name}'. Tools: {', '.join(TOOLS)}.")
        try:
            body = await sync_to_async(_invoke, thread_sensitive=True)(resolve, tool, dict(params.arguments or {}))
        except ToolFailure as exc:
            return _error(str(exc))
        except ApplicationError as exc:  # what the REST API answers as a 4xx (unknown contact, bad text, conflict)
            return _error(exc.message)
        except DatabaseError:
            logger.exception("MCP tool %s failed on the database", tool.name)
            return _error("The database is unavailable or the call took too long; retry shortly.")
        except Exception:
            logger.exception("MCP tool %s failed", tool.name)
            return _error("Internal error; the server has logged it.")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(body, ensure_ascii=False))],
            structured_content=body,
        )

    return Server(
        "engram",
        version="1.0.0",
        title="Engram memory",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


HTTP_SERVER = build_server(http_caller)
