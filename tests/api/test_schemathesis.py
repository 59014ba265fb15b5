"""schemathesis against the project's own OpenAPI schema, inside the test suite.

Every operation gets 100 schema-valid and 100 schema-violating generated requests from a fixed
seed, over the shipped data, and every built-in check runs on each answer: no server error;
status, headers, content type and body as documented; valid input accepted, invalid input
refused; auth not ignored; unsupported methods 405. The test fails with schemathesis's report
of every failing operation (each with a curl command to replay it).

The operations are driven through schemathesis's Python API (``operation.as_strategy`` +
``case.call_and_validate``) rather than its pytest plugin, whose lazy loader does not run on
pytest 9.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given, seed
from hypothesis import settings as hypothesis_settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.config import SchemathesisConfig

from tests.api.conftest import auth

SEED = 20261130
EXAMPLES = 100

CONFIG = SchemathesisConfig.from_str(
    f"""
seed = {SEED}

[generation]
max-examples = {EXAMPLES}

[checks]
# A tombstone (retracted run) is a documented 410.
positive_data_acceptance.expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "410", "429"]

# Writes check more than a schema can say (digests, the forms' rules): a schema-valid body can
# still be refused with a documented 400.
[[operations]]
include-method = "POST"
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409", "413", "429"]
"""
)


def exercise(operation: Any, mode: GenerationMode, label: str, calls: Counter, token: dict[str, str]) -> None:
    """EXAMPLES generated requests to one operation; raises schemathesis's failure report."""

    @seed(SEED)
    @hypothesis_settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case: Any) -> None:
        calls[(label, "calls")] += 1
        case.call_and_validate(headers=token if case.method == "POST" else None)

    run()


@pytest.mark.slow
@pytest.mark.django_db
def test_api_conforms_to_its_schema(shipped_data: None, settings: Any, alice_token: str) -> None:
    # Generous limits so that throttling does not hide everything else (it has its own tests).
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"anon": "1000000/min", "token": "1000000/min", "submissions": "1000000/min"},
    }
    settings.RATE_LIMIT_PER_MINUTE = settings.RATE_LIMIT_PER_DAY = 1000000
    # Like Django's own test client: requests must not close the test's database connection
    # (on PostgreSQL that would end the transaction holding the shipped data).
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        run_schemathesis(alice_token)
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def run_schemathesis(alice_token: str) -> None:
    schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application(), config=CONFIG)
    token_headers = {"Authorization": auth(alice_token)["HTTP_AUTHORIZATION"]}
    calls: Counter[tuple[str, str]] = Counter()
    failures: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 20

    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            label = f"{operation.method.upper()} {operation.path} ({mode.value})"
            try:
                exercise(operation, mode, label, calls, token_headers)
            except Unsatisfiable:
                # Nothing in this operation can be made schema-invalid (e.g. no parameters).
                calls[(label, "unsatisfiable")] += 1
            except (Exception, BaseExceptionGroup) as error:  # noqa: BLE001 - collect every failure
                failures.append(f"{label}:\n{error}")

    assert not failures, "\n\n".join(failures)
    positive = {label: n for (label, kind), n in calls.items() if kind == "calls" and "(positive)" in label}
    assert len(positive) == len(operations)
    # Every operation that takes input got EXAMPLES requests; one without any input (the index)
    # has a single possible request, which hypothesis sends once.
    without_input = {
        f"{op.method.upper()} {op.path} (positive)"
        for op in operations
        if not (len(op.path_parameters) or len(op.query) or len(op.headers) or op.body)
    }
    short = {label: n for label, n in positive.items() if n < EXAMPLES and label not in without_input}
    assert not short, short
