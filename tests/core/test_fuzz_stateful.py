"""Stateful fuzzing (schemathesis' state machine): sequences of calls in which the ids a POST created feed the
GET / PATCH / DELETE of them, the links inferred by schemathesis from the OpenAPI schema (response bodies
and path parameters). Through the WSGI application with a tenant key, valid and invalid input; no answer
may be a server error. The stateless fuzz (tests/core/test_fuzz.py) covers every operation on its own."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from tests.factories import ApiKeyFactory, TenantFactory

pytestmark = [pytest.mark.fuzz, pytest.mark.django_db(transaction=True)]  # each request commits on its own

# How often the sequences reach what a POST created depends on the seed and on the answers before: over eight
# seeds, 100 x 8 followed a created memory 4-38 times and a created document 2-24 (a memory never, in five whole-suite
# runs of 2026-11-27); 150 x 10 gives 45-57 and 7-33
SEQUENCES = 150
STEPS_PER_SEQUENCE = 10


def closing(application: Callable[..., Iterable[bytes]]) -> Callable[..., list[bytes]]:
    """The application as a WSGI server runs it: each response read, then closed within its own call (PEP 3333),
    so each request ends (Django's `request_finished`: the database connection closed, CONN_MAX_AGE being 0
    in tests) before the next begins. schemathesis' WSGI transport reads the body and never closes it: the
    requests then ended whenever the garbage collector freed their responses (a run of this test alone: 802
    requests, none ended), a moment the rest of the suite's heap decides."""

    def call(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        response = application(environ, start_response)
        try:
            return [b"".join(response)]
        finally:
            getattr(response, "close", lambda: None)()

    return call


def test_sequences_of_calls_on_created_ids_answer_no_server_error():
    schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", closing(get_wsgi_application()))
    answered: Counter[tuple[str, int]] = Counter()
    finished: list[object] = []

    def count(sender: object, **kwargs: Any) -> None:
        finished.append(sender)

    request_finished.connect(count)

    class Machine(schema.as_state_machine()):  # type: ignore[misc]
        def setup(self) -> None:
            # each sequence on a tenant of its own: what a call answers depends only on the sequence's earlier
            # calls, as Hypothesis requires (a contact left by another sequence would turn a 201 into a 409)
            self.headers = {"Authorization": f"Bearer {ApiKeyFactory(tenant=TenantFactory()).plaintext}"}

        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
            return {"headers": self.headers}

        def after_call(self, response: Any, case: schemathesis.Case) -> None:
            answered[case.operation.label, response.status_code // 100] += 1
            # every request has finished by the time its response is seen, as under a server
            assert len(finished) == answered.total(), (len(finished), answered.total())

        def validate_response(self, response: Any, case: schemathesis.Case, **kwargs: Any) -> None:
            case.validate_response(response, checks=[not_a_server_error])

    try:
        Machine.run(
            settings=settings(
                max_examples=SEQUENCES,
                stateful_step_count=STEPS_PER_SEQUENCE,
                deadline=None,
                suppress_health_check=list(HealthCheck),
                derandomize=True,
                database=None,
            )
        )
    finally:
        request_finished.disconnect(count)
    assert not [label for (label, family), _ in answered.items() if family == 5]
    # the sequences reached what a POST created (the stateless fuzz mostly meets 404s on generated ids)
    reached = {label for (label, family), _ in answered.items() if family == 2}
    for resource in ("/memories/{memory_id}", "/knowledge/documents/{document_id}", "/contacts/{contact_id}"):
        assert any(resource in label for label in reached), (resource, sorted(answered.items()))
