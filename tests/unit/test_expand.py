"""expand lists a directory's files with strings, not pathlib: the same names, paths, sizes and order as the
pathlib walk it replaced (the reference below), for the ways users name a directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sources.files import _SKIP_DIRS, Source, expand


def _reference(paths: list[str]) -> list[Source]:
    """The pathlib walk expand used before, for directories."""
    out = []
    for raw in paths:
        path = Path(raw)
        found = []
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
            found += [Path(root) / name for name in sorted(files)]
        for p in found:
            try:
                size: int | None = p.stat().st_size
            except OSError:
                size = None
            out.append(Source(str(p.relative_to(path)) if len(paths) == 1 else str(p), p, size))
    return out


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    job = tmp_path / "job"
    for rel, text in [("rank0.log", "a\n"), ("node1/rank8.log", "bb\n"), ("node1/torchrun.log", ""),
                      ("node1/deeper/rank9.log", "ccc\n"), ("node10/rank16.log", "d\n"), (".git/HEAD", "x"),
                      ("node2/__pycache__/x.pyc", "y"), ("Node3/b.log", "e\n"), ("node2/ü-ß.log", "f\n")]:
        (job / rel).parent.mkdir(parents=True, exist_ok=True)
        (job / rel).write_text(text)
    (job / "empty").mkdir()
    (job / "node1" / "link.log").symlink_to(job / "rank0.log")
    (job / "node1" / "dangling.log").symlink_to(job / "gone.log")
    return job


@pytest.mark.parametrize("spelling", ["job", "job/", "./job", "job/.", "ABS", "."])
def test_a_directory_is_listed_as_the_pathlib_walk_listed_it(tree: Path, monkeypatch: pytest.MonkeyPatch,
                                                             spelling: str) -> None:
    monkeypatch.chdir(tree if spelling == "." else tree.parent)
    arg = str(tree) if spelling == "ABS" else spelling
    listed = expand([arg])
    assert listed == _reference([arg])
    names = [s.name for s in listed]
    assert "node1/deeper/rank9.log" in names and not any(".git" in n or "__pycache__" in n for n in names)
    assert {s.name: s.size for s in listed}["node1/dangling.log"] is None
    assert {s.name: s.size for s in listed}["node1/link.log"] == 2


def test_two_directories_name_their_files_by_whole_path(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree.parent)
    args = ["job/node1", "./job/node10"]
    assert expand(args) == _reference(args)
    assert [s.name for s in expand(args)][-1] == "job/node10/rank16.log"


def test_a_listed_files_path_is_its_folders_string_and_its_names_end(tmp_path: Path) -> None:
    """A listed file holds no path string of its own (issue 23: 163,840 of them at 131,072 ranks), and is equal,
    hashes, prints and pickles as the Source of its name, path and size does."""
    import pickle

    for rank in range(3):
        (tmp_path / "node001").mkdir(exist_ok=True)
        (tmp_path / "node001" / f"rank{rank}.log").write_text("x\n")
    found = expand([str(tmp_path)])
    assert [s.name for s in found] == ["node001/rank0.log", "node001/rank1.log", "node001/rank2.log"]
    assert [s.path for s in found] == [str(tmp_path / "node001" / f"rank{r}.log") for r in range(3)]
    assert found[0]._disk is found[2]._disk  # one string a folder
    plain = Source("node001/rank0.log", tmp_path / "node001" / "rank0.log", 2)
    assert found[0] == plain and hash(found[0]) == hash(plain) and repr(found[0]) == repr(plain)
    assert pickle.loads(pickle.dumps(found[0])) == plain
    assert Source("<stdin>", None).path is None
