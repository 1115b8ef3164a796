"""What every blind generator of labelled jobs (bench/independent2 ... independent7) holds, one harness for all:
the same bytes for the same seed, labels in the corpus schema, every layout and kind reachable, each label's
evidence line in exactly the files it names, and no import beyond the standard library (a generator that read
firstfault would measure nothing). Each generator's own rules (which kinds name a rank, which jobs cannot be told)
sit below the shared tests, each asked of the generators that promise it."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.benches.generated_jobs import (
    assert_evidence_in_the_named_files,
    assert_imports_only_the_standard_library,
    assert_known_classes,
    assert_label_in_corpus_schema,
    assert_same_seed_same_bytes,
    labels,
)

BENCH = Path(__file__).resolve().parents[2] / "bench"


@dataclass(frozen=True)
class Blind:
    """One generator as the harness runs it: ``jobs`` at seed 7 reach every layout (and kind, where it has
    ``kinds``); ``max_bytes`` bounds one job's files."""

    package: str
    jobs: int = 60
    twice_each: str | None = None  # "layouts" or "kinds": two jobs of each instead of ``jobs``
    max_bytes: int = 1_000_000
    kinds_module: str | None = "kinds"
    unmapped_classes: frozenset[str] = frozenset()  # labels score.py maps by its all-words rule
    classes_mapped: bool = True  # False: the generator predates the rule that every class be in the map
    # False: the evidence may be a survivor's line (present though no cause line is); checked where promised only
    evidence_means_cause: bool = True

    @property
    def path(self) -> Path:
        return BENCH / self.package

    def generate(self, out: Path, seed: int, jobs: int) -> Any:
        return importlib.import_module(f"bench.{self.package}.generate").generate(out, seed=seed, jobs=jobs)

    def layout_names(self) -> set[str]:
        layouts = importlib.import_module(f"bench.{self.package}.generate").LAYOUTS
        return {getattr(lay, "name", lay) for lay in layouts}

    def kinds(self) -> Any:
        """The generator's KINDS (names, or names mapped to what each kind is), or None."""
        if self.kinds_module is None:
            return None
        return importlib.import_module(f"bench.{self.package}.{self.kinds_module}").KINDS


GENERATORS = {
    "independent2": Blind("independent2", twice_each="layouts", max_bytes=400_000, kinds_module=None,
                          classes_mapped=False, evidence_means_cause=False),
    "independent3": Blind("independent3", twice_each="kinds", unmapped_classes=frozenset({"xid_119"})),
    "independent4": Blind("independent4"),
    "independent5": Blind("independent5"),
    "independent6": Blind("independent6"),
    "independent7": Blind("independent7"),
}


def _jobs(spec: Blind) -> int:
    if spec.twice_each == "layouts":
        return 2 * len(spec.layout_names())
    if spec.twice_each == "kinds":
        return 2 * len(spec.kinds() or {})
    return spec.jobs


_made: dict[str, Path] = {}


def _generated(name: str, factory: pytest.TempPathFactory) -> Path:
    """Each generator's seed-7 set, written once for every test that reads it."""
    if name not in _made:
        out = factory.mktemp(name)
        GENERATORS[name].generate(out, 7, _jobs(GENERATORS[name]))
        _made[name] = out
    return _made[name]


@pytest.fixture(params=sorted(GENERATORS))
def blind(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Blind, Path]:
    return GENERATORS[request.param], _generated(request.param, tmp_path_factory)


def test_same_seed_same_bytes(blind: tuple[Blind, Path], tmp_path: Path) -> None:
    spec, out = blind
    assert_same_seed_same_bytes(spec.generate, out, tmp_path, _jobs(spec))


def test_labels_parse_in_corpus_schema(blind: tuple[Blind, Path]) -> None:
    spec, out = blind
    rows = labels(out)
    assert len(rows) == _jobs(spec)
    assert {lab["layout"] for lab in rows} == spec.layout_names()
    kinds = spec.kinds()
    if kinds is not None:
        assert {lab["kind"] for lab in rows} == set(kinds)
    if spec.classes_mapped:
        assert_known_classes([lab for lab in rows if lab["failure_class"] not in spec.unmapped_classes],
                             spec.path / "class_map_additions.json")
    for lab in rows:
        assert_label_in_corpus_schema(out, lab, max_bytes=spec.max_bytes)


def test_evidence_in_exactly_the_named_files(blind: tuple[Blind, Path]) -> None:
    spec, out = blind
    for lab in labels(out):
        if spec.evidence_means_cause or lab["cause_line_present"]:
            assert_evidence_in_the_named_files(out, lab)


def test_imports_only_the_standard_library(blind: tuple[Blind, Path]) -> None:
    assert_imports_only_the_standard_library(blind[0].path)


# ---- what some generators promise beyond the shared contract ----

@pytest.mark.parametrize("name", ["independent4"])
def test_node_faults_name_a_host_and_job_wide_causes_nothing(name: str,
                                                             tmp_path_factory: pytest.TempPathFactory) -> None:
    """independent4: rank faults name a rank and its host; node faults a host only; job-wide causes neither."""
    node_level = {"ib_flap", "node_lost", "container_oom"}
    job_wide = {"bad_ifname", "missing_data", "preempt"}
    for lab in labels(_generated(name, tmp_path_factory)):
        ini = lab["initiating"]
        if lab["kind"] in job_wide:
            assert ini["rank"] is None and ini["host"] is None, lab["id"]
        elif lab["kind"] in node_level:
            assert ini["rank"] is None and ini["host"], lab["id"]
        else:
            assert ini["rank"] is not None and ini["host"], lab["id"]


@pytest.mark.parametrize("name", ["independent5", "independent6", "independent7"])
def test_a_rank_is_named_only_with_a_clue(name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Job-wide causes name neither; node faults at most a host; a rank is named only with a reason a reader of
    the files has (a prefix, a launcher's report, a pid join, a flight-recorder dump, a silence)."""
    kinds = GENERATORS[name].kinds()
    assert kinds is not None
    for lab in labels(_generated(name, tmp_path_factory)):
        ini, level = lab["initiating"], kinds[lab["kind"]][1]
        if level == "job":
            assert ini["rank"] is None and ini["host"] is None, lab["id"]
        elif level == "host":
            assert ini["rank"] is None, lab["id"]
        assert (ini["rank"] is not None) == (lab["knowable"] == "rank"), lab["id"]
        if lab["knowable"] != "none" and level != "job":
            assert lab["clues"], lab["id"]


@pytest.mark.parametrize("name", ["independent5", "independent6", "independent7"])
def test_some_jobs_cannot_be_told(name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A few rank or host faults leave nothing that names where they started; their labels say so."""
    kinds = GENERATORS[name].kinds()
    assert kinds is not None
    rows = labels(_generated(name, tmp_path_factory))
    untold = [lab for lab in rows if kinds[lab["kind"]][1] != "job" and lab["knowable"] == "none"]
    assert 1 <= len(untold) <= len(rows) // 4


@pytest.mark.parametrize("name", ["independent6", "independent7"])
def test_no_path_or_text_names_the_kind(name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The job's directory and files carry no generator vocabulary a diagnoser could read the answer from."""
    out = _generated(name, tmp_path_factory)
    for lab in labels(out):
        assert lab["path"] == lab["id"] and lab["kind"] not in lab["path"]
        for p in (out / lab["path"]).rglob("*"):
            if p.is_file():
                text = p.read_text()
                assert lab["kind"] not in p.name and f"_{lab['kind']}" not in text, (lab["id"], p.name)


@pytest.mark.parametrize("name", ["independent7"])
def test_launcher_reports_name_the_first_failure_only(name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Hydra, PRRTE and Flux's doom plugin report the first task to end; a straggler's is a collateral rank."""
    out = _generated(name, tmp_path_factory)
    for lab in labels(out):
        if lab["kind"] == "silent" and lab["layout"] in ("pbs_hydra", "prterun_efa"):
            text = "".join(p.read_text() for p in (out / lab["path"]).rglob("*") if p.is_file())
            rank = lab["initiating"]["rank"]
            assert f"rank {rank} with PID" not in text and f"RANK {rank} PID" not in text, lab["id"]
