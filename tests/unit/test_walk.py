"""Listing a directory through folder descriptors (sources/files.py `_walk`) lists what os.walk lists, in its order,
with the same names, paths and sizes (`_walk_by_path`, the os.walk reading it replaced where the platform allows):
links to folders listed but not followed, links to files and broken links listed as files, skipped folders left
out, the top given in any spelling."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sources import files
from sources.files import Source, _walk, _walk_by_path, expand


def _tree(root: Path) -> Path:
    top = root / "job"
    for folder in ("node001", "node000/sub/deeper", "node002", ".git/objects", "empty", "z-last"):
        (top / folder).mkdir(parents=True)
    for name, text in (("node000/rank0.log", "a\n"), ("node000/rank1.log", "bb\n"), ("node001/rank2.log", ""),
                       ("node000/sub/deeper/x.log", "ccc\n"), ("top.log", "d\n"), (".git/objects/o", "e"),
                       ("z-last/dmesg.log", "ffff\n"), ("node002/b", "1"), ("node002/a", "22")):
        (top / name).write_text(text)
    os.symlink(top / "node000", top / "link-to-node000")  # a link to a folder: listed among folders, not followed
    os.symlink(top / "top.log", top / "node001" / "link.log")  # a link to a file: a file, its target's size
    os.symlink(top / "gone", top / "node001" / "broken.log")  # a broken link: a file that cannot be sized
    return top


def _listed(found: list[Source]) -> list[tuple[str, str | None, int | None]]:
    return [(s.name, s.path, s.size) for s in found]


@pytest.mark.parametrize("relative", [True, False])
def test_descriptor_walk_lists_what_os_walk_lists(tmp_path: Path, relative: bool) -> None:
    top = _tree(tmp_path)
    assert files._BY_DESCRIPTOR  # Linux: the descriptor walk is the one that runs
    for spelling in (top, Path(str(top) + "/"), Path(str(top) + "/."), tmp_path / "job" / ".." / "job"):
        assert _listed(_walk(spelling, relative)) == _listed(_walk_by_path(spelling, relative))
    listed = _listed(_walk(top, relative))
    names = [name.removeprefix(str(top) + "/") for name, _, _ in listed]
    assert names == ["top.log", "node000/rank0.log", "node000/rank1.log", "node000/sub/deeper/x.log",
                     "node001/broken.log", "node001/link.log", "node001/rank2.log", "node002/a", "node002/b",
                     "z-last/dmesg.log"]
    sizes = dict(zip(names, (size for _, _, size in listed), strict=True))
    assert sizes["node001/link.log"] == 2 and sizes["node001/broken.log"] is None


def test_a_relative_top_and_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path)
    monkeypatch.chdir(tmp_path / "job")
    for spelling in (".", "./", "./node000/.", "node000", "../job"):
        assert _listed(_walk(Path(spelling), True)) == _listed(_walk_by_path(Path(spelling), True))
        assert _listed(_walk(Path(spelling), False)) == _listed(_walk_by_path(Path(spelling), False))


def test_expand_of_the_repository_s_examples_is_unchanged() -> None:
    """Every example tree the tests diagnose, listed both ways."""
    examples = Path(__file__).resolve().parents[2] / "examples"
    assert _listed(expand([str(examples)])) == _listed(_walk_by_path(examples, True))
