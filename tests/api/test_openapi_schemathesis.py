"""Schemathesis against the published OpenAPI: generated queries to every history and catalog operation of the
app served on 127.0.0.1 over the seeded history. No answer may be a 5xx, and every answer must match the status
codes, content type and response schema the OpenAPI declares. Examples are bounded so the run stays short.

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

MAX_EXAMPLES = 25
READ_PATHS = r"^/v1/(incidents|stats|offenders|catalog)"  # the ingest writes have their own tests


def _operations(base_url: str) -> list[Any]:
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json").include(path_regex=READ_PATHS)
    return [result.ok() for result in schema.get_all_operations()]


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_5xx_and_answers_match_the_openapi(base_url: str, history: dict[str, Incident],
                                              mode: GenerationMode) -> None:
    operations = _operations(base_url)
    assert {op.path for op in operations} == {"/v1/incidents", "/v1/incidents/{incident_id}", "/v1/stats",
                                              "/v1/offenders", "/v1/catalog", "/v1/catalog/{signature_id}"}
    checks = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
    if mode is GenerationMode.NEGATIVE:  # only these constrain a parameter (ranges, enums): the others take any text
        operations = [op for op in operations if op.path in ("/v1/incidents", "/v1/stats", "/v1/offenders")]
    for op in operations:
        @given(case=op.as_strategy(generation_mode=mode))
        @settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        def run(case: Any) -> None:
            case.call_and_validate(base_url=base_url, checks=checks)

        run()
