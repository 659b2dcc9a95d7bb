"""Guards: noticing that code or settings may have changed, without comparing them again.

The engine's caches (a graph's kernels, a kernel's last program) must not hand out what other
code made: a learner's exercise, a test's monkeypatch, NOOPT or BEAM set meanwhile. Comparing
every function and setting they depend on, at every realize, cost more than the rest of an eager
op. Yet everything such a swap writes to is a dict: a module's namespace, a class's, an
instance's, os.environ's. CPython gives every dict a version tag (PEP 509) that changes at each
write to it, so a Guard keeps the tags of the dicts an answer was read from, and holds while none
of them changed: a few integer reads. When it fails, the caller works its answer out again (and
finds, most often, that nothing it cares about changed: see program.setting_stamp).

The tag is no part of Python's API: it is read with ctypes at its place in the dict's C struct,
right after the object header and the item count. That place is checked once, at import, on a
dict of each kind a guard watches (a write must change the tag, a read must not); where the check
fails (another interpreter, a Python that dropped the tag), a guard compares the dicts' contents
instead: slower, and as right.
"""
from __future__ import annotations

import ctypes
import gc
import os
import sys
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any, cast

_TAG_OFFSET = object.__basicsize__ + ctypes.sizeof(ctypes.c_ssize_t)  # (header, ma_used)


def namespace(owner: Any) -> Mapping[Any, Any]:
    """The dict that holds owner's names: a module's or an instance's __dict__, a class's own
    dict (behind the read-only view `cls.__dict__`, which is what comes back where the dict
    cannot be reached), os.environ's table of variables; a dict is its own."""
    if type(owner) is dict:  # (sys.modules, a dict of its own)
        return owner
    if owner is os.environ:
        return os.environ._data  # (the table setenv writes)
    if isinstance(owner, type):
        found = gc.get_referents(owner.__dict__)
        return found[0] if len(found) == 1 and type(found[0]) is dict else owner.__dict__
    return vars(owner)


def _tag_reader(table: Mapping[Any, Any]) -> ctypes.c_uint64:
    """A view of table's version tag (read `.value`); the table must outlive it."""
    return ctypes.c_uint64.from_address(id(table) + _TAG_OFFSET)


def _tags_work() -> bool:
    """True when the version tag is where _tag_reader looks, on each kind of dict a guard
    watches: a write changes it, and only a write. (Only on CPython, where id() is the
    object's address.)"""
    if sys.implementation.name != "cpython":
        return False

    class Probe:
        def method(self) -> None: ...
    module, probe = ModuleType("probe"), Probe()
    module.name = probe.name = 1  # type: ignore[attr-defined]
    tables = [vars(module), namespace(Probe), namespace(probe), {"name": 1}]
    if any(type(table) is not dict for table in tables):  # (a class's dict out of reach)
        return False
    for table in tables:
        reader = _tag_reader(table)
        before = reader.value
        table.get("name")
        if reader.value != before:  # (a read is no write)
            return False
        cast(dict[str, Any], table)["name"] = object()
        if reader.value == before:
            return False
    return True


TAGS = _tags_work()


class Guard:
    """Holds while the dicts it watches are unwritten since it was made (make it before reading
    what it guards, so a write meanwhile is seen)."""

    def __init__(self, owners: Iterable[Any]) -> None:
        self._tables = list({id(t): t for t in map(namespace, owners)}.values())
        self._tagged = TAGS
        if TAGS:
            self._readers = [_tag_reader(table) for table in self._tables]
            self._tags = [reader.value for reader in self._readers]
        else:  # (compared by identity first: a changed entry is another object)
            self._items = [list(table.items()) for table in self._tables]

    def holds(self) -> bool:
        """True when no dict watched was written since (on the fallback: holds the same)."""
        if self._tagged:
            return [reader.value for reader in self._readers] == self._tags
        try:
            return [list(table.items()) for table in self._tables] == self._items
        except Exception:  # (a comparison that fails, as an array's can, counts as a change)
            return False


def owners_of_code(*parts: Any) -> list[Any]:
    """What a guard of parts' code watches: each part (an instance's settings), its class and
    their bases (the methods): what program.code_identity reads."""
    owners: list[Any] = []
    for part in parts:
        if part is None:
            continue
        cls = part if isinstance(part, type) else type(part)
        if not isinstance(part, type) and hasattr(part, "__dict__"):
            owners.append(part)
        owners += [klass for klass in cls.__mro__ if klass.__module__ != "builtins"]
    return owners


_environ = Guard([os.environ])
_env: dict[str, str | None] = {}


def getenv(name: str, default: str = "") -> str:
    """os.getenv(name, default), remembered until os.environ is written (an environment variable
    read at every realize, DEBUG or NOOPT, costs a dict lookup)."""
    global _environ
    if not _environ.holds():
        _environ = Guard([os.environ])
        _env.clear()
    if (value := _env.get(name, _UNREAD)) is _UNREAD:
        value = _env[name] = os.environ.get(name)
    return default if value is None else value


_UNREAD = "(not read yet)"  # (compared by identity: no value read is this object)
