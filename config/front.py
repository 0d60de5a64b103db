"""The front of the web tier (issue 29, item 3): one public port, two pools of workers behind it.

Reads (GET /context, search, every GET of the API) and writes (ingest, observations, every other change) are
served by two gunicorn pools of sync workers listening on unix sockets: the **read pool** and the **write pool**.
This module is the WSGI application of the process in front of them (gunicorn's threaded worker, no Django in
it): it sends each request to its pool by method and path, at most as many at once as the pool has workers (its
*slots*), so an admitted request always finds a free worker and never queues inside a pool:

- a request waits for a slot of its lane at most `ENGRAM_READ_WAIT_MS` / `ENGRAM_WRITE_WAIT_MS`; past that it
  is answered **503 with `Retry-After`** at once (nothing reached the application: safe to send again), instead
  of queueing behind the batches for minutes;
- reads are also held to a latency budget (`ENGRAM_READ_BUDGET_MS`, 100; 0: off): a read that finds every
  slot taken waits only if the line ahead of it clears, at the lane's measured service time, early enough to
  serve it within the budget (`admission_wait`), and is refused at once otherwise — so a served read's wait for
  a slot is bounded by what the budget leaves after its service, not by a fixed constant. Slots are handed to
  the waiting requests in arrival order;
- the body is read whole before a slot is taken and the pool's answer read whole before the slot is given back,
  so a slow client never holds a worker;
- requests outside the API (health check, inspector, admin, static files) use the read pool's slots but are
  never refused: they wait for one as long as it takes.

The write pool runs at a lower CPU priority (`runstack` starts it with `nice`): on a machine whose cores are
all busy, the kernel serves the read pool first, and the writes take what is left. The pools receive each
request with a PROXY protocol line naming the client, so the application sees the client's address. With
`ENGRAM_SERVER_TIMING` on, the answer's `Server-Timing` also carries `front-wait` (the wait for a slot) and
`front-pool` (the pool's time), which `bench_load` prints for the served reads.

Sizing: docs/architecture.md, "Sizing web and worker processes"."""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

READ, WRITE = "read", "write"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
READ_POSTS = frozenset({"/api/v1/memories/search", "/api/v1/knowledge/search"})  # POSTs that only read
MCP_PATH = "/mcp"
MCP_WRITE_TOOLS = frozenset({"add_memory", "update_memory", "delete_memory", "erase_contact"})
API_PREFIX = "/api/"
HEALTH_PATH = "/healthz"
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
CHUNK = 64 * 1024


@dataclass(frozen=True)
class Route:
    lane: str  # READ or WRITE: the pool, and whose slots the request takes
    sheddable: bool  # False: waits for a slot as long as it takes (health check, inspector, admin, static)


def mcp_writes(body: bytes) -> bool:
    """Whether an MCP request body (JSON-RPC: one message or a list) calls a tool that changes memories."""
    try:
        decoded = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return False
    messages = decoded if isinstance(decoded, list) else [decoded]
    for message in messages:
        if not isinstance(message, dict) or message.get("method") != "tools/call":
            continue
        params = message.get("params")
        if isinstance(params, dict) and params.get("name") in MCP_WRITE_TOOLS:
            return True
    return False


def route(method: str, path: str, body: bytes = b"") -> Route:
    """The lane of a request. Pure: its method, path and (for MCP) body decide."""
    method = method.upper()
    if path == MCP_PATH or path == MCP_PATH + "/":
        return Route(WRITE if method == "POST" and mcp_writes(body) else READ, True)
    if not path.startswith(API_PREFIX):
        return Route(READ, False)
    if method in SAFE_METHODS or path.rstrip("/") in READ_POSTS:
        return Route(READ, True)
    return Route(WRITE, True)


@dataclass(frozen=True)
class Lane:
    name: str
    socket_path: str
    slots: int
    wait_seconds: float  # the longest a request waits for a slot
    retry_after: int
    budget_seconds: float = 0.0  # > 0: the latency budget that bounds the wait (`admission_wait`)


SERVICE_WEIGHT = 0.1  # the newest slot-hold time's weight in a lane's moving average of them


def admission_wait(*, ahead: int, slots: int, service: float, budget: float, wait: float) -> float | None:
    """How long a request that finds every slot of its lane taken may wait for one; None: refuse it now.

    Without a budget (0): the lane's wait. With one, the request is served only if it can be answered within the
    budget, counting from its arrival: its wait for a slot plus its own service time. A slot frees every
    `service / slots` seconds on average (Little's law: `slots` requests in service, each `service` seconds), so
    the request behind `ahead` others expects to wait `(ahead + 1) * service / slots`; if that is more than the
    budget leaves after its service (`budget - service`, never more than the lane's wait), it is refused at once
    — it would have waited only to be refused, or to be served late — and otherwise it waits at most that."""
    if budget <= 0:
        return wait
    room = min(wait, budget - service)
    if room <= 0 or (ahead + 1) * service / slots > room:
        return None
    return room


class Lanes:
    """The two pools' slots (one front process: they are this process's). A request takes a free slot, or
    waits in its lane's line for one (`admission_wait` says whether and how long); a slot given back goes
    straight to the first request in line, so none overtakes the line. Each lane keeps a moving average of
    how long its API requests hold a slot (`service`): their service time under the current load, which the
    budget rule reads."""

    def __init__(self, lanes: Iterable[Lane]) -> None:
        self.lanes = {lane.name: lane for lane in lanes}
        self.lock = threading.Lock()
        self.free = {lane.name: lane.slots for lane in self.lanes.values()}
        self.line: dict[str, deque[threading.Event]] = {name: deque() for name in self.lanes}
        self.service = dict.fromkeys(self.lanes, 0.0)  # seconds; 0 until a slot has been given back
        self.shed = dict.fromkeys(self.lanes, 0)  # refusals since start (read by tests and logs)

    def acquire(self, name: str, *, patient: bool) -> bool:
        lane = self.lanes[name]
        with self.lock:
            if self.free[name] > 0:
                self.free[name] -= 1
                return True
            timeout = None
            if not patient:
                timeout = admission_wait(
                    ahead=len(self.line[name]),
                    slots=lane.slots,
                    service=self.service[name],
                    budget=lane.budget_seconds,
                    wait=lane.wait_seconds,
                )
                if timeout is None:
                    self.shed[name] += 1
                    return False
            turn = threading.Event()
            self.line[name].append(turn)
        if turn.wait(timeout):
            return True
        with self.lock:
            if turn.is_set():  # a slot was handed over just as the wait ran out
                return True
            self.line[name].remove(turn)
            self.shed[name] += 1
            return False

    def release(self, name: str, held: float | None = None) -> None:
        """Give a slot back; `held`: for how long (seconds), which updates the lane's service time."""
        with self.lock:
            if held is not None:
                previous = self.service[name]
                self.service[name] = held if not previous else previous + SERVICE_WEIGHT * (held - previous)
            line = self.line[name]
            if line:
                line.popleft().set()
                return
            if self.free[name] >= self.lanes[name].slots:
                raise ValueError(f"the {name} lane's slots were given back more often than taken")
            self.free[name] += 1


def lanes_from_env(environ: dict[str, str] | None = None) -> Lanes:
    env = os.environ if environ is None else environ
    return Lanes(
        [
            Lane(
                READ,
                env["ENGRAM_READ_SOCKET"],
                slots=int(env.get("ENGRAM_READ_SLOTS", "3")),
                wait_seconds=int(env.get("ENGRAM_READ_WAIT_MS", "100")) / 1000,
                retry_after=int(env.get("ENGRAM_READ_RETRY_AFTER", "1")),
                budget_seconds=int(env.get("ENGRAM_READ_BUDGET_MS", "100")) / 1000,
            ),
            Lane(
                WRITE,
                env["ENGRAM_WRITE_SOCKET"],
                slots=int(env.get("ENGRAM_WRITE_SLOTS", "2")),
                wait_seconds=int(env.get("ENGRAM_WRITE_WAIT_MS", "500")) / 1000,
                retry_after=int(env.get("ENGRAM_WRITE_RETRY_AFTER", "1")),
            ),
        ]
    )


def reachable(lane: Lane) -> bool:
    """Whether a pool listens (its socket is bound once the application is loaded: gunicorn --preload)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(lane.socket_path)
    except OSError:
        return False
    finally:
        probe.close()
    return True


class UnixConnection(http.client.HTTPConnection):
    """HTTP to a pool's unix socket, opening with a PROXY protocol v1 line that names the client."""

    def __init__(self, socket_path: str, proxy_line: bytes, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = socket_path
        self.proxy_line = proxy_line

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.socket_path)
        sock.sendall(self.proxy_line)
        self.sock = sock


def proxy_line(environ: dict[str, Any]) -> bytes:
    client = environ.get("REMOTE_ADDR") or "127.0.0.1"
    family = "TCP6" if ":" in client else "TCP4"
    server = "::1" if family == "TCP6" else "127.0.0.1"
    client_port = environ.get("REMOTE_PORT") or "0"
    server_port = environ.get("SERVER_PORT") or "0"
    try:
        int(client_port), int(server_port)
    except ValueError:
        client_port = server_port = "0"
    return f"PROXY {family} {client} {server} {client_port} {server_port}\r\n".encode("ascii")


def request_headers(environ: dict[str, Any]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for key, value in environ.items():
        if key.startswith("HTTP_"):
            name = key[5:].replace("_", "-").title()
            if name.lower() not in HOP_BY_HOP:
                headers[name] = value
    if environ.get("CONTENT_TYPE"):
        headers["Content-Type"] = environ["CONTENT_TYPE"]
    headers["Connection"] = "close"
    return headers


StartResponse = Callable[..., Any]


def error_answer(
    start_response: StartResponse, status: str, code: str, message: str, *, headers: Iterable[tuple[str, str]] = ()
) -> list[bytes]:
    """The API's one error shape (apps/core/exception_handler.py), written without Django."""
    body = json.dumps({"error": {"code": code, "message": message, "details": {}}}).encode()
    start_response(
        status,
        [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(body))),
            ("Cache-Control", "no-store"),
            *headers,
        ],
    )
    return [body]


def with_front_timing(headers: list[tuple[str, str]], *, wait: float, pool: float) -> list[tuple[str, str]]:
    """The answer's headers with the front's phases added to its `Server-Timing` (apps/core/timing.py's format):
    `front-wait`, the wait for a slot of the lane, and `front-pool`, the time the pool took to answer (seconds in,
    milliseconds out)."""
    phases = f"front-wait;dur={wait * 1000:.2f}, front-pool;dur={pool * 1000:.2f}"
    merged, found = [], False
    for name, value in headers:
        if name.lower() == "server-timing" and not found:
            name, value, found = "Server-Timing", f"{value}, {phases}" if value else phases, True
        merged.append((name, value))
    return merged if found else [*merged, ("Server-Timing", phases)]


class Front:
    """The WSGI application: route, admit (or refuse with 503 Retry-After), forward, answer."""

    def __init__(
        self, lanes: Lanes, *, max_body: int = 16 * 1024 * 1024, timeout: float = 130.0, server_timing: bool = False
    ) -> None:
        self.lanes = lanes
        self.max_body = max_body
        self.timeout = timeout
        self.server_timing = server_timing  # add the front's own phases to the answer's Server-Timing

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        method = environ["REQUEST_METHOD"]
        path = environ.get("PATH_INFO", "") or "/"
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return error_answer(start_response, "400 Bad Request", "bad_request", "Content-Length is not a number.")
        if length > self.max_body:
            return error_answer(
                start_response,
                "413 Content Too Large",
                "too_large",
                f"The request body is larger than {self.max_body} bytes.",
            )
        body = self._body(environ, length)
        if body is None:
            return error_answer(
                start_response,
                "413 Content Too Large",
                "too_large",
                f"The request body is larger than {self.max_body} bytes.",
            )
        if path == HEALTH_PATH:
            missing = [name for name, lane in self.lanes.lanes.items() if name != READ and not reachable(lane)]
            if missing:  # the read pool answers the check itself; the others must be listening too
                body = json.dumps({"status": "starting", "pools_down": missing}).encode()
                start_response(
                    "503 Service Unavailable",
                    [("Content-Type", "application/json"), ("Content-Length", str(len(body))), ("Retry-After", "1")],
                )
                return [body]
        where = route(method, path, body)
        lane = self.lanes.lanes[where.lane]
        arrived = time.monotonic()
        if not self.lanes.acquire(where.lane, patient=not where.sheddable):
            return error_answer(
                start_response,
                "503 Service Unavailable",
                "overloaded",
                f"The server is busy with other {where.lane}s; nothing was done. Send the request again after "
                f"{lane.retry_after} s (Retry-After).",
                headers=[("Retry-After", str(lane.retry_after))],
            )
        admitted = time.monotonic()
        try:
            status, headers, content = self._forward(environ, lane, method, body)
        except OSError as exc:
            return error_answer(
                start_response,
                "502 Bad Gateway",
                "unavailable",
                f"The {lane.name} pool did not answer ({type(exc).__name__}).",
                headers=[("Retry-After", str(lane.retry_after))],
            )
        finally:
            # the API's requests time the lane's service (a long inspector page or admin export would skew it)
            self.lanes.release(where.lane, time.monotonic() - admitted if where.sheddable else None)
        if self.server_timing:
            headers = with_front_timing(headers, wait=admitted - arrived, pool=time.monotonic() - admitted)
        start_response(status, headers)
        return content

    def _body(self, environ: dict[str, Any], length: int) -> bytes | None:
        stream = environ["wsgi.input"]
        if length:
            return stream.read(length)
        if environ.get("HTTP_TRANSFER_ENCODING", "").lower() == "chunked":
            body = stream.read(self.max_body + 1)
            return None if len(body) > self.max_body else body
        return b""

    def _forward(
        self, environ: dict[str, Any], lane: Lane, method: str, body: bytes
    ) -> tuple[str, list[tuple[str, str]], list[bytes]]:
        target = environ.get("RAW_URI") or (
            environ.get("PATH_INFO", "/") + (f"?{environ['QUERY_STRING']}" if environ.get("QUERY_STRING") else "")
        )
        connection = UnixConnection(lane.socket_path, proxy_line(environ), self.timeout)
        try:
            headers = request_headers(environ)
            if body or method not in SAFE_METHODS:
                headers["Content-Length"] = str(len(body))
            connection.request(method, target, body=body or None, headers=headers)
            response = connection.getresponse()
            content = []
            while chunk := response.read(CHUNK):
                content.append(chunk)
            status = f"{response.status} {response.reason}"
            answer_headers = [(name, value) for name, value in response.getheaders() if name.lower() not in HOP_BY_HOP]
        finally:
            connection.close()
        return status, answer_headers, content


def application_build() -> Front:
    """gunicorn's application factory: `gunicorn 'config.front:application_build()'` (runstack sets the
    environment: the pools' sockets, slots and waits)."""
    return Front(
        lanes_from_env(),
        max_body=int(os.environ.get("ENGRAM_FRONT_MAX_BODY", str(16 * 1024 * 1024))),
        server_timing=os.environ.get("ENGRAM_SERVER_TIMING", "").lower() in {"1", "true", "yes", "on"},
    )
