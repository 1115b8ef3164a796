"""Schemathesis against the published OpenAPI: generated queries to every history, catalog and subscription
operation of the app served on 127.0.0.1 over the seeded history (writes with the bearer token; their 401 without
it is tested in test_subscriptions.py). No answer may be a 5xx, and every answer must match the status codes,
content type and response schema the OpenAPI declares. Examples are bounded so the run stays short.

Driven through schemathesis's Python API (operation strategies under hypothesis) rather than its pytest plugin,
whose lazy fixture loader does not run on pytest 9.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from schemas.incident import Incident
from tests.api.conftest import TOKEN

MAX_EXAMPLES = 25
API_PATHS = r"^/v1/(incidents|stats|offenders|catalog|subscriptions)"  # the ingest writes have their own tests
AUTH = {"Authorization": f"Bearer {TOKEN}"}
# only these constrain a parameter (ranges, enums, lengths) or a body: the others take any text
CONSTRAINED = {("GET", "/v1/incidents"), ("GET", "/v1/stats"), ("GET", "/v1/offenders"),
               ("POST", "/v1/incidents/{incident_id}/resolve"), ("POST", "/v1/subscriptions"),
               ("GET", "/v1/subscriptions/{subscription_id}"), ("PUT", "/v1/subscriptions/{subscription_id}"),
               ("PATCH", "/v1/subscriptions/{subscription_id}"), ("DELETE", "/v1/subscriptions/{subscription_id}")}


def _operations(base_url: str) -> list[Any]:
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json").include(path_regex=API_PATHS)
    return [result.ok() for result in schema.get_all_operations()]


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_5xx_and_answers_match_the_openapi(base_url: str, history: dict[str, Incident],
                                              mode: GenerationMode) -> None:
    operations = _operations(base_url)
    assert {(op.method.upper(), op.path) for op in operations} == {
        ("GET", "/v1/incidents"), ("GET", "/v1/incidents/{incident_id}"),
        ("POST", "/v1/incidents/{incident_id}/resolve"), ("POST", "/v1/incidents/{incident_id}/verification"),
        ("GET", "/v1/stats"), ("GET", "/v1/offenders"),
        ("GET", "/v1/catalog"), ("GET", "/v1/catalog/{signature_id}"),
        ("GET", "/v1/subscriptions"), ("POST", "/v1/subscriptions"), ("GET", "/v1/subscriptions/{subscription_id}"),
        ("PUT", "/v1/subscriptions/{subscription_id}"), ("PATCH", "/v1/subscriptions/{subscription_id}"),
        ("DELETE", "/v1/subscriptions/{subscription_id}")}
    checks = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
    if mode is GenerationMode.NEGATIVE:
        operations = [op for op in operations if (op.method.upper(), op.path) in CONSTRAINED]
    for op in operations:
        @given(case=op.as_strategy(generation_mode=mode))
        @settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        def run(case: Any) -> None:
            case.call_and_validate(base_url=base_url, headers=AUTH, checks=checks)

        run()
