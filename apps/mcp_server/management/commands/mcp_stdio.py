"""`manage.py mcp_stdio --api-key KEY`: the MCP server over stdio, for desktop MCP clients (Claude Desktop,
Cursor, IDE agents) that start a command. The same tools as POST /mcp, acting for the key's tenant; the key is
checked now and again on every call (a revoked key stops working at once), each call counts against the key's
rate limit. stdout carries only the protocol (the SDK points file descriptor 1 at stderr while it serves)."""

from __future__ import annotations

import os
from argparse import ArgumentParser
from typing import Any

import anyio
from django.core.management.base import BaseCommand, CommandError
from mcp.server.stdio import stdio_server

from apps.mcp_server.server import build_server, stdio_caller
from apps.tenants.selectors import api_key_resolve


class Command(BaseCommand):
    help = "Serve Engram's MCP tools over stdio for one API key."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--api-key",
            default=os.environ.get("ENGRAM_API_KEY", ""),
            help="the tenant's API key (default: $ENGRAM_API_KEY)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        plaintext = options["api_key"]
        if not plaintext or api_key_resolve(plaintext=plaintext) is None:
            raise CommandError("Give a valid, unrevoked API key: --api-key KEY (or ENGRAM_API_KEY).")
        server = build_server(stdio_caller(plaintext))

        async def serve() -> None:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

        anyio.run(serve)
