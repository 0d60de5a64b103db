"""Schema-driven fuzzing (schemathesis): every operation of the OpenAPI schema, called with a tenant key through
the WSGI application (every middleware, the real PostgreSQL and Redis), with generated valid and invalid input
(`GenerationMode.all()`). No answer may be a server error.

The operations are driven from one test with Hypothesis' `given` per operation, not schemathesis' pytest
plugin: its parametrization breaks on pytest 9 (`'Function' object has no attribute '_nodeid'`)."""

from __future__ import annotations

import pytest
import schemathesis
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.generation import GenerationMode

pytestmark = [pytest.mark.fuzz, pytest.mark.django_db(transaction=True)]  # each request commits on its own

EXAMPLES_PER_OPERATION = 30


def test_no_operation_answers_a_server_error(issued_key):
    schema = schemathesis.openapi.from_wsgi("/api/v1/schema/", get_wsgi_application())
    headers = {"Authorization": f"Bearer {issued_key.plaintext}"}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 30  # the whole API, not an empty schema
    failures: dict[str, str] = {}
    for operation in operations:

        @given(case=operation.as_strategy(generation_mode=GenerationMode.NEGATIVE) | operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        def call(case: schemathesis.Case) -> None:
            response = case.call(headers=headers)
            case.validate_response(response, checks=[not_a_server_error])

        try:
            call()
        except Exception as exc:  # one operation's failure must not hide the others'
            failures[operation.label] = f"{type(exc).__name__}: {str(exc)[:600]}"
    assert failures == {}
