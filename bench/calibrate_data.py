"""The cases bench/calibrate.py fits and tables: labelled logs and jobs, each diagnosed in process, with the
features of its diagnosis and whether it was right (as the corpus's score.py counts).

Sources: the corpus's halves (bench/corpus.py), the field sets' halves (bench/field..field6, their labels' own
split), the blind generators' seeds (bench/independent, independent2, independent3, independent4), and the
simulator's sweep (bench/accuracy.py), degraded the way real logs arrive. Which of them a fit may read is
bench/calibrate.py's business; this module only produces them.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import random
import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.accuracy import correct, hostile_knobs, knobs_for, plan
from bench.corpus import corpus_dir, field_class_map, field_rows, labels, source_repo
from correlator.diagnose import diagnose
from scan.engine import default_matcher, scan_sources
from schemas.diagnosis import Diagnosis
from simulate import generate
from sources.files import expand

INDEPENDENT_JOBS = 60
HOSTILE_SHARE = 0.5
DEGRADE = (("whole", 0.4), ("initiator_lost", 0.2), ("node_logs_lost", 0.2), ("pasted_few", 0.2))
_NODE_LOGS = ("dmesg", "syslog", "kern", "torchrun", "slurm-")


@dataclass
class Case:
    source: str  # "corpus:<half>", "corpus:<field set>-<half>", "<generator>:<seed>" (GENERATORS), "simulator"
    name: str
    confidence: float | None  # what the diagnosis reported (None: no failure found)
    features: dict[str, float] | None
    right: bool
    initiating: bool  # right is about the initiator (else, for a corpus label naming none, the class)
    # What cross-validation holds out together: a real log's source repository (two logs of one project share a
    # launcher and a cluster's naming), an independent seed's job, a simulated job.
    group: str = ""


def _year() -> int:
    return datetime.now(UTC).year  # as `firstfault diagnose` reads a log (score.py runs it)


def _score_py(corpus: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("corpus_score", corpus / "score.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _corpus() -> Path:
    corpus = corpus_dir()
    if corpus is None:
        raise SystemExit("bench.calibrate: ../shared/corpus (score.py, class_map.json) is not on this machine "
                         "(set FIRSTFAULT_CORPUS)")
    return corpus


def _diagnose(paths: list[str], exit_codes: dict[str, int] | None = None) -> Diagnosis:
    matcher = default_matcher()
    scan = scan_sources(matcher, expand(paths), _year())
    return diagnose(scan.results, matcher.catalog, None, exit_codes=exit_codes)


def judged(lab: dict[str, Any], d: Diagnosis, class_ok: Any, class_map: dict[str, Any]) -> tuple[bool, bool]:
    """(right, about the initiator) as score.py counts: the rank, else the host, else the class."""
    rc = d.root_cause.model_dump() if d.root_cause else {}
    ini: dict[str, Any] = lab.get("initiating") or {}
    if ini.get("rank") is not None:
        return rc.get("rank") == ini["rank"], True
    if ini.get("host"):
        got = str(rc.get("host") or "")
        return bool(got) and (got in ini["host"] or ini["host"] in got), True
    return bool(class_ok(lab["failure_class"], rc, class_map)), False


def _case(source: str, lab: dict[str, Any], path: str, score: ModuleType, class_map: dict[str, Any],
          group: str) -> Case:
    d = _diagnose([path])
    right, initiating = judged(lab, d, score.class_ok, class_map)
    conf = d.root_cause.confidence if d.root_cause else None
    return Case(source, str(lab["id"]), conf, d._features, right, initiating, group)


def corpus_cases(half: str) -> list[Case]:
    """Each labelled log of one half, diagnosed in process, judged as score.py judges it."""
    corpus = _corpus()
    score = _score_py(corpus)
    class_map = json.loads((corpus / "class_map.json").read_text())
    return [_case(f"corpus:{half}", lab, str(corpus / "real" / f"{lab['id']}.log"), score, class_map,
                  "repo:" + source_repo(str(lab.get("source") or lab["id"])))
            for lab in labels(corpus, half)]


def field_cases(half: str, which: str = "field") -> list[Case]:
    """A field set's logs of one half (its labels' split), judged as score.py judges them with the set's class map
    additions."""
    corpus = _corpus()
    score = _score_py(corpus)
    class_map: dict[str, Any] = field_class_map(corpus, which)
    return [_case(f"corpus:{which}-{half}", lab, str(lab["path"]), score, class_map,
                  "repo:" + source_repo(str(lab.get("source") or lab["id"])))
            for lab in field_rows(half, which)]


# The blind generators (each written from upstream formats by someone who read none of firstfault's code), by the
# name a case's source carries: the module whose generate(out, seed, jobs) writes a seed's jobs and labels.
GENERATORS = {"independent": "bench.independent.generate", "independent2": "bench.independent2.generate",
              "independent3": "bench.independent3.generate", "independent4": "bench.independent4.generate"}


def generated_cases(seed: int, generator: str = "independent", jobs: int = INDEPENDENT_JOBS) -> list[Case]:
    """A blind generator's jobs of one seed, generated in a temporary directory, diagnosed in process."""
    write = importlib.import_module(GENERATORS[generator]).generate
    corpus = _corpus()
    score = _score_py(corpus)
    class_map = json.loads((corpus / "class_map.json").read_text())
    with tempfile.TemporaryDirectory(prefix=f"ff-{generator}-") as tmp:
        return [_case(f"{generator}:{seed}", lab, str(Path(tmp) / str(lab["path"])), score, class_map,
                      f"{generator}:{seed}:{lab['id']}")
                for lab in write(Path(tmp), seed, jobs)]


def independent_cases(seed: int, jobs: int = INDEPENDENT_JOBS) -> list[Case]:
    """bench/independent's jobs of one seed."""
    return generated_cases(seed, "independent", jobs)


def degrade(root: Path, how: str, rank: int | None, host: str | None, rng: random.Random) -> None:
    """Take away what real logs often lack. ``initiator_lost``: the initiator's own rank logs and dumps (or, for a
    node's fault, that node's kernel and launcher logs); ``node_logs_lost``: every kernel, launcher and scheduler
    log; ``pasted_few``: all but two to four text files, as a user pastes a few logs into an issue."""
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name != "job.json")
    if how == "initiator_lost":
        doomed = [p for p in files
                  if (rank is not None and p.stem.rsplit("_", 1)[-1].removeprefix("rank") == str(rank))
                  or (rank is None and p.parent.name == host and p.name.startswith(_NODE_LOGS))]
    elif how == "node_logs_lost":
        doomed = [p for p in files if p.name.startswith(_NODE_LOGS)]
    elif how == "pasted_few":
        text = [p for p in files if p.suffix in (".log", ".out", ".txt")]
        keep = set(rng.sample(text, min(len(text), rng.randint(2, 4))))
        doomed = [p for p in files if p not in keep]
    else:
        doomed = []
    if len(doomed) < len(files):  # an empty job says nothing to calibrate
        for p in doomed:
            p.unlink()


def simulator_cases(per_kind: int, seed: int, degraded: bool = True, hostile: bool = True) -> list[Case]:
    """bench/accuracy.py's sweep of scenarios and knobs (small worlds), each degraded as drawn from DEGRADE, and
    half of them with issue 22's hostile knobs (accuracy.hostile_knobs: local-rank prefixes, host aliases, launcher
    exit reports, survivors' transport errors, silent stragglers)."""
    rng = random.Random(seed + 1)
    pick = random.Random(seed + 2)
    hostile_rng = random.Random(seed + 22)
    out: list[Case] = []
    for kind, world, s in plan(per_kind, False, seed):
        knobs, metadata = knobs_for(rng, world)
        if hostile and hostile_rng.random() < HOSTILE_SHARE:
            knobs = hostile_knobs(hostile_rng, knobs)
        how = pick.choices([d for d, _ in DEGRADE], [w for _, w in DEGRADE])[0] if degraded else "whole"
        root = Path(tempfile.mkdtemp(prefix=f"ff-cal-{kind}-"))
        try:
            truth = generate(kind, root, s, knobs)
            degrade(root, how, truth.rank, truth.host, pick)
            d = _diagnose([str(root)], truth.exit_codes if metadata else None)
        finally:
            shutil.rmtree(root, ignore_errors=True)
        rc = d.root_cause
        call = type("Call", (), {"rank": rc.rank if rc else None, "host": rc.host if rc else None})
        name = f"{kind}/{how}/seed={s}"
        out.append(Case("simulator", name, rc.confidence if rc else None, d._features,
                        correct(truth, call), True, f"simulator:{seed}:{len(out)}"))  # type: ignore[arg-type]
    return out
