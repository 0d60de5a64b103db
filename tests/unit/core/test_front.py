"""The web tier's front (config/front.py): each request to its pool, at most a pool's workers at once, the rest
refused with 503 and Retry-After within the lane's wait. The pools here are real unix-socket HTTP servers that
record what reached them (the stack test, tests/core/test_pools.py, runs the real gunicorn pools)."""

from __future__ import annotations

import io
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from apps.core.timing import parse_server_timing
from config.front import (
    READ,
    SERVICE_WEIGHT,
    WRITE,
    Front,
    Lane,
    Lanes,
    admission_wait,
    mcp_writes,
    route,
    with_front_timing,
)


@pytest.mark.parametrize(
    ("method", "path", "lane", "sheddable"),
    [
        ("GET", "/api/v1/context/c1", READ, True),
        ("POST", "/api/v1/memories/search", READ, True),
        ("POST", "/api/v1/knowledge/search", READ, True),
        ("GET", "/api/v1/memories", READ, True),
        ("HEAD", "/api/v1/contacts", READ, True),
        ("POST", "/api/v1/ingest", WRITE, True),
        ("POST", "/api/v1/ingest/batch", WRITE, True),
        ("POST", "/api/v1/observations", WRITE, True),
        ("POST", "/api/v1/memories", WRITE, True),
        ("PATCH", "/api/v1/memories/0b7c", WRITE, True),
        ("DELETE", "/api/v1/contacts/c1", WRITE, True),
        ("POST", "/api/v1/knowledge/documents", WRITE, True),
        ("GET", "/healthz", READ, False),
        ("GET", "/inspector/", READ, False),
        ("POST", "/admin/login/", READ, False),
        ("GET", "/static/app.css", READ, False),
    ],
)
def test_every_route_has_its_lane(method: str, path: str, lane: str, sheddable: bool) -> None:
    where = route(method, path)
    assert (where.lane, where.sheddable) == (lane, sheddable)


def test_an_mcp_call_is_a_write_only_when_its_tool_changes_memories() -> None:
    call = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "%s", "arguments": {}}}'
    assert mcp_writes(call % b"add_memory")
    assert mcp_writes(b"[" + call % b"search_memory" + b"," + call % b"erase_contact" + b"]")
    assert not mcp_writes(call % b"search_memory")
    assert not mcp_writes(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}')
    assert not mcp_writes(b"not json")
    assert route("POST", "/mcp", call % b"add_memory").lane == WRITE
    assert route("POST", "/mcp", call % b"get_context").lane == READ


class Pool:
    """A pool on a unix socket: reads the PROXY line and one request, records them, waits for `gate` when
    told to, answers 200 with the lane's name."""

    def __init__(self, path: Path, name: str) -> None:
        self.path, self.name = path, name
        self.seen: list[dict[str, Any]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(16)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        with connection, connection.makefile("rb") as stream:
            proxy = stream.readline().decode().strip()
            if not proxy:  # the front's health probe: connected, then closed
                return
            request_line = stream.readline().decode().strip()
            headers = {}
            while (line := stream.readline().decode().strip()) != "":
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            body = stream.read(int(headers.get("content-length", "0")))
            self.seen.append({"proxy": proxy, "request": request_line, "headers": headers, "body": body})
            self.gate.wait(10)
            answer = f'{{"pool": "{self.name}"}}'.encode()
            connection.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nX-Pool: "
                + self.name.encode()
                + b"\r\nContent-Length: "
                + str(len(answer)).encode()
                + b"\r\n\r\n"
                + answer
            )

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def pools(tmp_path: Path) -> Iterator[dict[str, Pool]]:
    made = {READ: Pool(tmp_path / "read.sock", READ), WRITE: Pool(tmp_path / "write.sock", WRITE)}
    yield made
    for pool in made.values():
        pool.gate.set()
        pool.close()


def front_for(pools: dict[str, Pool], *, read_slots: int = 2, write_slots: int = 1, wait_ms: int = 200) -> Front:
    return Front(
        Lanes(
            [
                Lane(READ, str(pools[READ].path), read_slots, wait_ms / 1000, retry_after=1),
                Lane(WRITE, str(pools[WRITE].path), write_slots, wait_ms / 1000, retry_after=2),
            ]
        ),
        max_body=1000,
    )


def call(front: Front, method: str, path: str, body: bytes = b"", **headers: str) -> tuple[str, dict[str, str], bytes]:
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path.partition("?")[0],
        "QUERY_STRING": path.partition("?")[2],
        "RAW_URI": path,
        "CONTENT_LENGTH": str(len(body)) if body else "",
        "CONTENT_TYPE": "application/json" if body else "",
        "REMOTE_ADDR": "203.0.113.9",
        "REMOTE_PORT": "50123",
        "SERVER_PORT": "8000",
        "wsgi.input": io.BytesIO(body),
        **{f"HTTP_{name.upper()}": value for name, value in headers.items()},
    }
    answered: dict[str, Any] = {}

    def start_response(status: str, response_headers: list[tuple[str, str]]) -> None:
        answered["status"], answered["headers"] = status, dict(response_headers)

    content = b"".join(front(environ, start_response))
    return answered["status"], answered["headers"], content


def test_reads_and_writes_reach_their_pool_with_the_client_address_and_the_body(pools: dict[str, Pool]) -> None:
    front = front_for(pools)
    status, headers, content = call(front, "GET", "/api/v1/context/c1?query=a%20b", authorization="Bearer k")
    assert status == "200 OK" and content == b'{"pool": "read"}' and headers["X-Pool"] == "read"
    assert "Connection" not in headers  # hop-by-hop: the front's own connection decides
    seen = pools[READ].seen[0]
    assert seen["proxy"] == "PROXY TCP4 203.0.113.9 127.0.0.1 50123 8000"
    assert seen["request"] == "GET /api/v1/context/c1?query=a%20b HTTP/1.1"
    assert seen["headers"]["authorization"] == "Bearer k"

    status, _, content = call(front, "POST", "/api/v1/ingest", b'{"message": "hi"}')
    assert content == b'{"pool": "write"}'
    assert pools[WRITE].seen[0]["body"] == b'{"message": "hi"}'
    assert pools[WRITE].seen[0]["headers"]["content-type"] == "application/json"


def test_a_write_beyond_the_pool_is_refused_with_retry_after_within_the_wait_while_reads_go_on(
    pools: dict[str, Pool],
) -> None:
    front = front_for(pools, write_slots=1, wait_ms=200)
    pools[WRITE].gate.clear()  # the pool's one worker is busy with a long batch
    busy = threading.Thread(target=call, args=(front, "POST", "/api/v1/ingest/batch", b"{}"))
    busy.start()
    while not pools[WRITE].seen:
        time.sleep(0.01)

    started = time.monotonic()
    status, headers, content = call(front, "POST", "/api/v1/ingest", b"{}")
    waited = time.monotonic() - started
    assert status.startswith("503") and headers["Retry-After"] == "2"
    assert b'"overloaded"' in content and b"nothing was done" in content
    assert 0.15 < waited < 1.0  # it waited the lane's 200 ms for a worker, not for the batch
    assert len(pools[WRITE].seen) == 1  # the refused write never reached the pool
    assert front.lanes.shed[WRITE] == 1

    assert call(front, "GET", "/api/v1/memories")[0] == "200 OK"  # reads do not wait for writes

    pools[WRITE].gate.set()
    busy.join(5)
    assert call(front, "POST", "/api/v1/ingest", b"{}")[0] == "200 OK"  # the slot came back with the answer


def test_reads_beyond_their_slots_are_refused_but_the_health_check_waits(pools: dict[str, Pool]) -> None:
    front = front_for(pools, read_slots=1, wait_ms=100)
    pools[READ].gate.clear()
    busy = threading.Thread(target=call, args=(front, "GET", "/api/v1/context/c1"))
    busy.start()
    while not pools[READ].seen:
        time.sleep(0.01)
    assert call(front, "POST", "/api/v1/memories/search", b"{}")[0].startswith("503")

    health: dict[str, str] = {}
    waiting = threading.Thread(target=lambda: health.update(status=call(front, "GET", "/healthz")[0]))
    waiting.start()
    time.sleep(0.4)  # four times the read wait: a sheddable request would have been refused by now
    assert not health
    pools[READ].gate.set()
    busy.join(5)
    waiting.join(5)
    assert health["status"] == "200 OK"


def test_a_pool_that_is_down_is_a_502_and_the_slot_is_given_back(pools: dict[str, Pool]) -> None:
    front = front_for(pools, write_slots=1)
    pools[WRITE].close()
    pools[WRITE].path.unlink()
    for _ in range(3):  # the one slot is released each time: never a 503
        status, _, content = call(front, "POST", "/api/v1/ingest", b"{}")
        assert status.startswith("502") and b'"unavailable"' in content


def test_a_body_over_the_cap_is_a_413_before_any_pool(pools: dict[str, Pool]) -> None:
    status, _, content = call(front_for(pools), "POST", "/api/v1/ingest", b"x" * 1001)
    assert status.startswith("413") and b'"too_large"' in content
    assert not pools[WRITE].seen


def test_the_health_check_says_starting_until_the_write_pool_listens(pools: dict[str, Pool]) -> None:
    front = front_for(pools)
    status, _, content = call(front, "GET", "/healthz")
    assert status == "200 OK" and content == b'{"pool": "read"}'  # the read pool answers it
    pools[WRITE].close()
    pools[WRITE].path.unlink()
    status, headers, content = call(front, "GET", "/healthz")
    assert status.startswith("503") and headers["Retry-After"] == "1"
    assert b'"starting"' in content and b'"write"' in content


@pytest.mark.parametrize(
    ("ahead", "service_ms", "budget_ms", "expected_ms"),
    [
        (0, 30, 0, 200),  # no budget: the lane's wait, whatever the line
        (9, 30, 0, 200),
        (0, 30, 130, 100),  # 1 × 30 / 2 = 15 ms expected ≤ 130 − 30: waits at most what the budget leaves
        (5, 30, 130, 100),  # 6 × 30 / 2 = 90 ms: fits
        (6, 30, 130, None),  # 7 × 30 / 2 = 105 ms > 100: refused at once
        (0, 10, 500, 200),  # never longer than the lane's wait
        (0, 130, 130, None),  # the service alone fills the budget: no wait at all
        (0, 0, 130, 130),  # no service time measured yet: the lane's wait, within the budget
    ],
)
def test_the_budget_lets_a_request_wait_only_when_the_line_ahead_clears_in_time(
    ahead: int, service_ms: int, budget_ms: int, expected_ms: int | None
) -> None:
    wait = admission_wait(ahead=ahead, slots=2, service=service_ms / 1000, budget=budget_ms / 1000, wait=0.2)
    assert wait == (None if expected_ms is None else pytest.approx(expected_ms / 1000))


def in_line(lanes: Lanes, count: int) -> None:
    """Until `count` requests wait in the read lane's line (at most 5 s)."""
    deadline = time.monotonic() + 5
    while len(lanes.line[READ]) < count:
        assert time.monotonic() < deadline, f"{len(lanes.line[READ])} in line, not {count}"
        time.sleep(0.001)


def lanes_of(slots: int, *, wait_ms: int = 1000, budget_ms: int = 0) -> Lanes:
    return Lanes([Lane(READ, "unused", slots, wait_ms / 1000, retry_after=1, budget_seconds=budget_ms / 1000)])


def test_a_freed_slot_goes_to_the_request_first_in_line_and_the_service_time_follows_the_holds() -> None:
    lanes = lanes_of(1)
    assert lanes.acquire(READ, patient=False)
    served: list[int] = []

    def waiter(number: int) -> None:
        if lanes.acquire(READ, patient=False):
            served.append(number)
            lanes.release(READ, 0.05)

    threads = []
    for number in range(4):  # in line in this order
        threads.append(threading.Thread(target=waiter, args=(number,)))
        threads[-1].start()
        in_line(lanes, number + 1)
    lanes.release(READ, 0.05)
    for thread in threads:
        thread.join(5)
    assert served == [0, 1, 2, 3] and lanes.shed[READ] == 0
    assert lanes.free[READ] == 1 and not lanes.line[READ]
    assert lanes.service[READ] == pytest.approx(0.05)
    lanes.acquire(READ, patient=False)
    lanes.release(READ, 0.15)
    assert lanes.service[READ] == pytest.approx(0.05 + SERVICE_WEIGHT * 0.10)
    with pytest.raises(ValueError, match="given back more often"):
        lanes.release(READ)


def test_under_a_budget_a_request_the_line_cannot_clear_in_time_is_refused_at_once() -> None:
    lanes = lanes_of(1, wait_ms=1000, budget_ms=350)
    lanes.service[READ] = 0.1  # a slot is held 100 ms: the budget leaves 250 ms of wait, two in line at most
    assert lanes.acquire(READ, patient=False)
    outcomes: dict[int, tuple[bool, float]] = {}

    def arrive(number: int) -> None:
        started = time.monotonic()
        outcomes[number] = (lanes.acquire(READ, patient=False), time.monotonic() - started)

    for number in range(2):  # 1 × 100 ms and 2 × 100 ms expected: both fit the 250 ms, both wait
        threading.Thread(target=arrive, args=(number,), daemon=True).start()
        in_line(lanes, number + 1)
    arrive(2)  # third in line: 300 ms expected > 250 ms — refused without waiting
    assert outcomes[2][0] is False and outcomes[2][1] < 0.05 and lanes.shed[READ] == 1
    patient = threading.Thread(target=lanes.acquire, args=(READ,), kwargs={"patient": True})
    patient.start()  # the health check and the inspector are not held to the budget: they join the line
    in_line(lanes, 3)

    time.sleep(0.3)  # nobody gives the slot back: the two in line give up after the 250 ms the budget left
    assert sorted(outcomes) == [0, 1, 2] and not outcomes[0][0] and not outcomes[1][0]
    assert 0.23 < outcomes[0][1] < 0.3 and lanes.shed[READ] == 3
    lanes.release(READ, 0.1)  # the patient one is still in line, and gets the slot
    patient.join(5)
    assert not patient.is_alive() and not lanes.line[READ] and lanes.free[READ] == 0


def test_a_slot_handed_over_just_as_the_wait_runs_out_is_taken_not_lost() -> None:
    lanes = lanes_of(1, wait_ms=50)
    assert lanes.acquire(READ, patient=False)
    outcome: list[bool] = []
    waiter = threading.Thread(target=lambda: outcome.append(lanes.acquire(READ, patient=False)))
    waiter.start()
    in_line(lanes, 1)
    with lanes.lock:  # the wait runs out meanwhile; the slot is handed over (as `release` does) before it looks
        time.sleep(0.1)
        lanes.line[READ].popleft().set()
    waiter.join(5)
    assert outcome == [True] and lanes.shed[READ] == 0 and lanes.free[READ] == 0


def test_the_front_adds_its_wait_and_the_pools_time_to_server_timing(pools: dict[str, Pool]) -> None:
    front = front_for(pools)
    assert "Server-Timing" not in call(front, "GET", "/api/v1/memories")[1]  # off unless asked for
    front.server_timing = True
    _, headers, _ = call(front, "GET", "/api/v1/memories")
    timing = parse_server_timing(headers["Server-Timing"])
    assert set(timing) == {"front-wait", "front-pool"} and timing["front-wait"] < 50 and timing["front-pool"] > 0
    merged = with_front_timing([("server-timing", "sql;dur=3.00, total;dur=9.00")], wait=0.002, pool=0.0125)
    assert merged == [("Server-Timing", "sql;dur=3.00, total;dur=9.00, front-wait;dur=2.00, front-pool;dur=12.50")]


def test_only_the_apis_requests_time_the_lanes_service(pools: dict[str, Pool]) -> None:
    front = front_for(pools)
    call(front, "GET", "/inspector/")  # never refused, so never held to the budget: its time is not counted
    assert front.lanes.service[READ] == 0.0
    call(front, "GET", "/api/v1/memories")
    assert front.lanes.service[READ] > 0.0
