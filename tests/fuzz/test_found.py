"""What the atheris targets found, kept as explicit cases (each raised another exception type before its fix), and
every seed of the corpora run through its target's check without libFuzzer: a seed that no longer passes would
make every fuzz run start from a failure."""

from __future__ import annotations

import json
from importlib import import_module
from pathlib import Path

import pytest
from pydantic import ValidationError

from schemas.diagnosis import CollateralGroup
from schemas.incident import Incident
from tests.fuzz.runner import TARGETS
from tests.fuzz.targets.render import check as render_check
from tests.notifiers.conftest import make_incident

CORPUS = Path(__file__).parent / "corpus"


@pytest.mark.parametrize("ranks", [[{}], 5, ["node7", 1], [[1, 2]]], ids=["dict", "number", "name", "list"])
def test_a_stored_collateral_group_whose_ranks_are_no_numbers_is_a_validation_error(ranks: object) -> None:
    """Found by the render target: a group's "ranks" holding `{}` raised TypeError (unhashable type: 'dict') out
    of Incident.model_validate_json, where every caller expects ValidationError: the counts and spans of a group
    stored before they existed were derived before validation."""
    stored = json.loads(make_incident().model_dump_json())
    stored["diagnosis"]["collateral"][0]["ranks"] = ranks
    del stored["diagnosis"]["collateral"][0]["rank_count"]
    with pytest.raises(ValidationError, match="ranks"):
        Incident.model_validate_json(json.dumps(stored))
    render_check(b"\x0f" + json.dumps(stored).encode())  # the target's own view: no incident, no exception


def test_a_group_stored_without_its_counts_still_gets_them() -> None:
    """What the validator is for, unchanged by the fix: counts and spans derived from the listed ranks."""
    group = CollateralGroup.model_validate({"signature": "x.y", "ranks": [7, 5, 6, 9], "hosts": ["a"], "count": 4})
    assert (group.rank_count, group.host_count, group.rank_spans) == (4, 1, [(5, 7), (9, 9)])
    kept = CollateralGroup.model_validate({"signature": "x.y", "ranks": [1], "count": 9, "rank_count": 9})
    assert kept.rank_count == 9


@pytest.mark.parametrize("seed", sorted(CORPUS.glob("*/*")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_each_seed_passes_its_targets_check(seed: Path) -> None:
    assert seed.parent.name in TARGETS
    import_module(f"tests.fuzz.targets.{seed.parent.name}").check(seed.read_bytes())
