"""The embedded mode's console notifier: a readable summary, redacted, one per delivery."""

from __future__ import annotations

import io

from notifiers.console import ConsoleNotifier
from tests.notifiers.conftest import make_incident


def test_the_console_summary_names_the_cause_the_rank_and_the_check() -> None:
    out = io.StringIO()
    incident = make_incident(evidence=["export HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"],
                             changes=["initiating rank 12 → 37"], revision=2)
    delivery = ConsoleNotifier(out, "http://127.0.0.1:8321").send(incident, "#ml-oncall", None, "d-1")
    text = out.getvalue()
    assert "Linux OOM killer" in text and "rank 37 on node004" in text and "host.oom_killer" in text
    assert "63 line(s) on other ranks" in text and "dmesg -T" in text and "changed: initiating rank 12 → 37" in text
    assert f"http://127.0.0.1:8321/incidents/{incident.id}" in text
    assert "hf_AbCd" not in text
    assert delivery.ref == f"console/{incident.id}"
