"""The published JSON Schema (catalog/schema.json) is the model's, and an editor using it accepts the catalog."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from catalog.model import catalog_json_schema
from tests.catalog.helpers import one_entry

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "catalog" / "schema.json"
BUNDLED = sorted((ROOT / "catalog" / "signatures").glob("*.yaml"))


def test_committed_schema_is_what_the_model_produces() -> None:
    assert json.loads(COMMITTED.read_text()) == catalog_json_schema(), (
        "catalog/schema.json is stale: run `firstfault catalog schema > catalog/schema.json`")


def test_cli_prints_the_committed_schema() -> None:
    p = subprocess.run([sys.executable, "-m", "firstfault.cli", "catalog", "schema"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout == COMMITTED.read_text()


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.name)
def test_every_bundled_file_is_valid_under_the_schema(path: Path) -> None:
    text = path.read_text()
    assert text.startswith("# yaml-language-server: $schema=../schema.json\n")  # what editors read
    jsonschema.validate(yaml.safe_load(text), json.loads(COMMITTED.read_text()))


@pytest.mark.parametrize(("change", "complaint"), [
    (("severity: error", "severity: error\n    colour: red"), "colour"),
    (("role: initiating", "role: culprit"), "culprit"),
    (("id: my.thing.broke", "id: MyThing"), "MyThing"),
    (("    fix: Mend the thing.\n", ""), "fix"),
])
def test_the_schema_flags_what_the_loader_rejects(change: tuple[str, str], complaint: str) -> None:
    good = one_entry(sig_id="my.thing.broke")
    schema = json.loads(COMMITTED.read_text())
    jsonschema.validate(yaml.safe_load(good), schema)
    with pytest.raises(jsonschema.ValidationError, match=complaint):
        jsonschema.validate(yaml.safe_load(good.replace(*change)), schema)
