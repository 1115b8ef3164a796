"""Reading log sources from paths: files, directories (recursively), gzip/zstd files and stdin, in chunks."""

from __future__ import annotations

import gzip
import io
import os
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from schemas.errors import UsageError

CHUNK = 4 << 20
_PROBE = 64 << 10  # what a plain file is asked for after a short read: its end, or what was added since
_SKIP_DIRS = {".git", "__pycache__", ".venv", "node_modules"}


class Source:
    """One input: ``name`` (what evidence cites: the path as given, relative inside a directory), ``path`` (on
    disk, a string; None for stdin), ``size`` (bytes on disk when expand listed it: progress, the pool's choice
    and its order). Equal where those three are.

    Slotted, and a listed file's path not a string of its own: a diagnosis holds one Source a file to its end
    (163,840 at 131,072 ranks), and the path is its folder's (one string a folder, shared) followed by the end of
    its name, made when asked for (a file is opened once). A path string a file was 0.19 KB a rank, a dict and
    a Path each 0.3 KB a file before that (issue 23: memory per rank)."""

    __slots__ = ("_cut", "_disk", "name", "size")

    def __init__(self, name: str, path: str | os.PathLike[str] | None, size: int | None = None) -> None:
        self.name = name
        self._disk = os.fspath(path) if path is not None else None  # a Path given: kept as its string
        self._cut = -1  # where the name's part the path ends with starts; -1: _disk is the whole path
        self.size = size

    @classmethod
    def listed(cls, name: str, folder: str, cut: int, size: int | None) -> Source:
        """A file expand found: its path is ``folder`` followed by ``name[cut:]``."""
        source = cls.__new__(cls)
        source.name, source._disk, source._cut, source.size = name, folder, cut, size
        return source

    @property
    def path(self) -> str | None:
        if self._cut < 0 or self._disk is None:
            return self._disk
        return self._disk + self.name[self._cut :]

    def _key(self) -> tuple[str, str | None, int | None]:
        return self.name, self.path, self.size

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Source) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Source(name={self.name!r}, path={self.path!r}, size={self.size!r})"

    def __reduce__(self) -> tuple[type[Source], tuple[str, str | None, int | None]]:
        return Source, self._key()

    def length(self) -> int:
        """Its size in bytes as listed, else as on disk now; 0 for stdin or a file that cannot be read."""
        if self.size is not None:
            return self.size
        path = self.path
        return (_size(path) or 0) if path is not None else 0


def _open(where: str) -> BinaryIO:
    suffix = os.path.splitext(where)[1]  # Path.suffix's answer, without building Path's parts for every file
    if suffix == ".gz":
        return gzip.open(where, "rb")  # type: ignore[return-value]
    if suffix in (".zst", ".zstd"):
        try:
            import zstandard
        except ImportError as exc:
            raise UsageError(f"{where}: reading .zst needs the 'zstandard' package") from exc
        from sources.zstdfile import ZstdFile

        return ZstdFile(where, zstandard)  # type: ignore[return-value]  # read and close: what chunks calls
    # Unbuffered: chunks reads whole blocks, and a buffer in between only copies them. FileIO itself, not
    # Path.open: at 4,096 ranks going through io.open for each file cost a fortieth of the scan.
    return io.FileIO(where)


def _read_errors() -> tuple[type[Exception], ...]:
    """What reading a source raises for input that cannot be read: the file system's errors, and corrupt or truncated
    compressed data (zlib's and zstandard's own errors are no OSError). zstandard is imported only where a .zst
    was opened, so its error joins only then."""
    zstd = sys.modules.get("zstandard")
    found: tuple[type[Exception], ...] = (OSError, EOFError, zlib.error)  # gzip.BadGzipFile is an OSError
    return (*found, zstd.ZstdError) if zstd is not None else found


def _size(path: str | Path) -> int | None:
    """None where it cannot be read (a dangling link, a file gone since it was listed): reading it reports that."""
    try:
        return os.stat(path).st_size
    except OSError:
        return None


# Listing a folder through a descriptor of it: where the platform can (Linux, the BSDs, macOS)
_BY_DESCRIPTOR = (hasattr(os, "O_DIRECTORY") and os.stat in os.supports_dir_fd and os.scandir in os.supports_fd)


def _walk(top: Path, relative: bool) -> list[Source]:
    """The files under ``top``, directory by directory in name order, named relative to it (else by their whole
    path): os.walk's order, its folders, names and sizes (tests/unit/test_walk.py). Listed through a descriptor of
    each folder, its files' sizes read relative to it (the kernel resolves one name, not the whole path again),
    each folder's names made from its parent's: at 32,768 ranks (40,960 files in 4,096 folders) os.walk, a stat
    of each whole path and relpath and pathlib once a folder took 0.55 CPU-s, more than rg's whole search."""
    if not _BY_DESCRIPTOR:
        return _walk_by_path(top, relative)
    found: list[Source] = []
    root = os.fspath(top)
    folder = os.fspath(Path(root))  # as pathlib spells it ("./job/." is "job")
    _walk_folder(root, os.curdir, "" if folder == os.curdir else os.path.join(folder, ""), relative, found)
    return found


def _walk_folder(root: str, within: str, on_disk: str, relative: bool, found: list[Source]) -> None:
    """``root``'s files in name order, then its folders' in name order, depth first, as os.walk lists them: a
    folder that cannot be opened or read is left out, a link to a folder is listed among the folders but not
    followed. ``within``: its path relative to the top; ``on_disk``: its path as pathlib spells it, with a
    separator (or "")."""
    try:
        descriptor = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        folders: list[tuple[str, bool]] = []  # (name, a link)
        files: list[str] = []
        try:
            with os.scandir(descriptor) as entries:
                for entry in entries:
                    try:
                        is_dir = entry.is_dir()
                    except OSError:
                        is_dir = False
                    if is_dir:
                        folders.append((entry.name, _is_link(entry)))
                    else:
                        files.append(entry.name)
        except OSError:  # os.walk lists nothing of a folder it could not read to its end
            return
        prefix = os.path.join(root, "")
        shown_prefix = (os.path.join(within, "") if within != os.curdir else "") if relative else prefix
        cut = len(shown_prefix)  # name: shown_prefix + the file's; path: on_disk + the file's (one string a folder)
        for name in sorted(files):
            try:
                size: int | None = os.stat(name, dir_fd=descriptor).st_size
            except OSError:
                size = None
            found.append(Source.listed(shown_prefix + name, on_disk, cut, size))
    finally:
        os.close(descriptor)
    for name, link in sorted(folder for folder in folders if folder[0] not in _SKIP_DIRS):
        if not link:
            _walk_folder(prefix + name, name if within == os.curdir else os.path.join(within, name),
                         os.path.join(on_disk + name, ""), relative, found)


def _is_link(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_symlink()
    except OSError:  # os.path.islink's answer where it cannot tell
        return False


def _walk_by_path(top: Path, relative: bool) -> list[Source]:
    """_walk where folders cannot be listed through a descriptor: with strings, not pathlib, per file (a
    4,096-rank job's 5,120 files took 80 ms to list, start-up that no core shares)."""
    found = []
    for root, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        within = os.path.relpath(root, top)
        prefix = os.path.join(root, "")  # "" ends it with one separator
        shown_prefix = (os.path.join(within, "") if within != os.curdir else "") if relative else prefix
        folder = os.fspath(Path(root))  # as pathlib spells it ("./job/." is "job"), once a folder
        on_disk = "" if folder == os.curdir else os.path.join(folder, "")
        cut = len(shown_prefix)  # a name is shown_prefix + the file's, its path on_disk + the file's
        for name in sorted(files):
            found.append(Source.listed(shown_prefix + name, on_disk, cut, _size(prefix + name)))
    return found


def expand(paths: list[str]) -> list[Source]:
    """Every file a diagnosis reads, in a stable order. Unreadable input is a UsageError."""
    sources: list[Source] = []
    for raw in paths:
        if raw == "-":
            sources.append(Source("<stdin>", None))
            continue
        path = Path(raw)
        if path.is_dir():
            found = _walk(path, relative=len(paths) == 1)
            if not found:
                raise UsageError(f"{raw}: directory holds no files")
            sources.extend(found)
        elif path.is_file():
            if not os.access(path, os.R_OK):
                raise UsageError(f"{raw}: permission denied")
            sources.append(Source(path.name if len(paths) == 1 else str(path), os.fspath(path), _size(path)))
        else:
            raise UsageError(f"{raw}: no such file or directory")
    return sources


def chunks(source: Source, size: int = CHUNK) -> Iterator[bytes]:
    path = source.path  # made once: a listed file's is made when asked for
    try:
        handle = sys.stdin.buffer if path is None else _open(path)
    except OSError as exc:
        raise UsageError(f"{source.name}: {exc.strerror or exc}") from exc
    # A plain file asks for its listed size (and a byte to see its end) at first, not a whole chunk, and after a
    # short read only for a little more (its end, most often): FileIO.read allocates what it is asked for, and a
    # 4,096-rank job's rank logs are 200 kB (the matcher's reading took a fifth less time).
    plain = path is not None and handle.__class__ is io.FileIO
    ask = min(size, source.length() + 1) if plain else size
    try:
        while True:
            try:
                block = handle.read(ask)
                ask = size if not plain or len(block) >= ask else min(size, _PROBE)
            except _read_errors() as exc:
                raise UsageError(f"{source.name}: cannot read: {exc}") from exc
            if not block:
                return
            yield block
    finally:
        if path is not None:
            handle.close()
