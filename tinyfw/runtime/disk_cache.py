"""The disk cache of compiled kernel libraries: where it is, its entries (a library and the
record that proves it), checked on every load, and its size kept under a limit."""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
import threading
from pathlib import Path
from typing import Any


def cache_dir() -> Path:
    """Where compiled kernels are kept: $TINYFW_CACHE, else ~/.cache/tinyfw/kernels."""
    base = os.getenv("TINYFW_CACHE") or os.path.join(
        os.getenv("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "tinyfw")
    path = Path(base) / "kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


# --- the cache on disk ---
# An entry is two files named by a hash of the source and flags: <key>.so, the library, and
# <key>.json, its record: the exact source and flags it was compiled from and the SHA-256 of the
# library's bytes. The name alone proves nothing (a file may be truncated by a full disk or a
# killed process, or replaced by hand), so every load reads the library, checks its bytes
# against the record and the record against the source wanted, and compiles the entry again if
# anything is off. A library is loaded only from bytes just checked (see _open_library).
def entry(source: str, flags: list[str]) -> tuple[Path, Path]:
    """The library and record paths of the cache entry for source compiled with flags."""
    key = hashlib.sha256((source + " ".join(flags)).encode()).hexdigest()[:24]
    directory = cache_dir()
    return directory / f"{key}.so", directory / f"{key}.json"


def read_record(record: Path) -> dict[str, Any] | None:
    """The record of an entry, or None if it is missing or not a record."""
    try:
        meta = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing, unreadable, not UTF-8, not JSON
        return None
    if not isinstance(meta, dict) or not all(isinstance(meta.get(k), t) for k, t in (
            ("source", str), ("flags", list), ("sha256", str))):
        return None
    return meta


def verified_bytes(lib: Path, record: Path, source: str, flags: list[str]) -> bytes | None:
    """The library's bytes if its entry is sound: a record of this very source and these flags,
    and a library whose SHA-256 is the recorded one. None if anything is off."""
    meta = read_record(record)
    if meta is None or meta["source"] != source or meta["flags"] != flags:
        return None
    try:
        data = lib.read_bytes()
    except OSError:
        return None
    if not data or hashlib.sha256(data).hexdigest() != meta["sha256"]:
        return None
    try:  # used now: the last to go when the cache is trimmed (its access time; the
        # modification time stays the build's)
        os.utime(lib, ns=(time.time_ns(), lib.stat().st_mtime_ns))
    except OSError:
        pass
    return data


# --- the size of the cache on disk ---
# A process that makes new kernels all the time (a number that changes in every kernel's
# source, a search trying variants) would fill the disk. Past $TINYFW_CACHE_MB megabytes (1024
# by default; 0: no limit) the entries used longest ago (a library's access time, which each
# verified load sets) are deleted until the cache is at 90% of the limit. Deleting is
# safe at any time: an entry that is missing or half deleted fails its check and is built again.
DEFAULT_CACHE_MB = 1024
_cache_bytes: dict[Path, int] = {}  # per cache directory: its size, as last seen plus writes


def cache_limit() -> int:
    """The most bytes the kernel cache on disk may hold ($TINYFW_CACHE_MB; 0: no limit)."""
    try:
        return int(float(os.getenv("TINYFW_CACHE_MB", DEFAULT_CACHE_MB)) * 2**20)
    except ValueError:
        return DEFAULT_CACHE_MB * 2**20


def note_written(directory: Path, added: int) -> None:
    """added bytes were written into the cache at directory: trim it if it is over the limit
    (the directory is measured once per process, then its size followed)."""
    limit = cache_limit()
    if limit <= 0:
        return
    if directory not in _cache_bytes:
        _cache_bytes[directory] = _cache_size(directory)
    else:
        _cache_bytes[directory] += added
    if _cache_bytes[directory] > limit:
        _cache_bytes[directory] = _trim_cache(directory, int(limit * 0.9))


def _cache_files(directory: Path) -> list[tuple[float, int, Path]]:
    """(access time, size, path) of each library of the cache (not temporary files)."""
    found = []
    for path in directory.glob("*.so"):
        try:
            stat = path.stat()
        except OSError:  # (deleted meanwhile by another process)
            continue
        found.append((stat.st_atime, stat.st_size + _size(path.with_suffix(".json")), path))
    return found


def _cache_size(directory: Path) -> int:
    return sum(size for _, size, _ in _cache_files(directory))


def _trim_cache(directory: Path, target: int) -> int:
    """Delete the entries used longest ago until the cache holds at most target bytes; returns
    the bytes left."""
    files = sorted(_cache_files(directory))
    total = sum(size for _, size, _ in files)
    for _, size, lib in files:
        if total <= target:
            break
        remove_file(lib.with_suffix(".json"))  # (the record first: a library alone fails its check)
        remove_file(lib)
        total -= size
    return total


def write_atomically(path: Path, data: bytes) -> None:
    """Write path whole or not at all: into a temporary file beside it, then renamed over it (a
    rename within one directory is atomic; readers see the old file or the new one)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        remove_file(tmp)
        raise


def entry_size(lib: Path, record: Path) -> int:
    """The bytes of a cache entry (0 for a file missing)."""
    return _size(lib) + _size(record)


def _size(path: Path) -> int:
    """The bytes of a file, 0 if it is missing (another process may delete it meanwhile)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def remove_file(path: str | Path) -> None:
    """Delete a file if it is there."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def link_or_copy(source: Path, dest: Path, data: bytes) -> None:
    """dest as the same file as source (a hard link), else a copy of its bytes (data), put in
    place atomically either way."""
    tmp = dest.with_name(f".{dest.stem}.{os.getpid()}.{threading.get_ident()}.link")
    try:
        remove_file(tmp)
        os.link(source, tmp)
        os.replace(tmp, dest)
    except OSError:
        remove_file(tmp)
        write_atomically(dest, data)
