"""The development build's runtime: a component that takes the plugin's source as data.

A production build (`weir-py build`) runs componentize-py, which starts CPython, imports the
plugin and snapshots the interpreter: 10-15 s on a small machine, on every save. A development
build (`weir-py build --dev`, or `WEIR_DEV_BUILD=1`, which `weir dev --watch` sets) runs
componentize-py once per set of dependencies to make a *runtime*: the same interpreter, SDK and
contract with the plugin's dependencies imported, and with a buffer of `size` bytes (`Sources`)
in place of the plugin's own modules. Each save then only writes the plugin's sources into that
buffer in a copy of the runtime (`build.patch`): the same bytes at the same offsets, so the copy
is a component like any other, loaded under the same sandbox, limits and admission.

Inside the component, `Deferred` stands for the plugin's `Reconciler`: on first use it reads the
buffer, serves the plugin's modules from it (a finder on `sys.meta_path`, each module compiled
under its file name, so tracebacks name the file) and imports the plugin class. That happens
once per instance, where a production build did it once at build time; a module that only
imports cheaply costs a few milliseconds per instance.

The buffer: `size` bytes of the repeated `BLOCK` until the first patch, then `MAGIC`, the
payload's length (4 bytes, little-endian) and the payload, JSON: `{"modules": {NAME: [FILE,
SOURCE, IS_PACKAGE]}}`. The repeated block is what the build finds in the runtime's memory
snapshot; it is written in place, so no second copy of it is left in the snapshot.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import sys
from typing import Any

# Fills the buffer until the first patch: 16 bytes whose run the build looks for.
BLOCK = b"weir-dev-source\x01"
# Opens a patched buffer.
MAGIC = b"weir-src"
# MAGIC and the payload's length.
HEADER = len(MAGIC) + 4


def Sources(size: int) -> bytearray:
    """A buffer of `size` bytes (a multiple of 16) holding `BLOCK` repeated, filled in place."""
    buffer = bytearray(size)
    view = memoryview(buffer)
    view[0 : len(BLOCK)] = BLOCK
    filled = len(BLOCK)
    while filled < size:
        step = min(filled, size - filled)
        view[filled : filled + step] = view[0:step]
        filled += step
    view.release()
    return buffer


def preload(names: list[str]) -> None:
    """Imports each module the plugin imports, so that the snapshot holds it (there is no
    filesystem at run time to import it from). One that does not import here is left out: the
    plugin's own import of it fails the same way in a production build."""
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - any failure: leave it out, as said
            pass


def payload(buffer: bytearray) -> dict[str, Any]:
    """The plugin's sources written into `buffer` by the build."""
    if bytes(buffer[: len(MAGIC)]) != MAGIC:
        raise RuntimeError("this development runtime holds no plugin source (weir-py build --dev writes it)")
    length = int.from_bytes(buffer[len(MAGIC) : HEADER], "little")
    return json.loads(bytes(buffer[HEADER : HEADER + length]).decode("utf-8"))


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the plugin's own modules from the payload."""

    def __init__(self, modules: dict[str, list[Any]]) -> None:
        self.modules = modules

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        found = self.modules.get(fullname)
        if found is None:
            return None
        file, _source, is_package = found
        spec = importlib.util.spec_from_loader(fullname, self, origin=file, is_package=is_package)
        if spec is not None:
            spec.has_location = True
        return spec

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: Any) -> None:
        file, source, _is_package = self.modules[module.__spec__.name]
        module.__file__ = file
        exec(compile(source, file, "exec"), module.__dict__)


class Deferred:
    """Stands for the plugin's Reconciler until first used, then is it (attribute by attribute)."""

    def __init__(self, buffer: bytearray, module: str, cls: str) -> None:
        self._buffer = buffer
        self._target = (module, cls)
        self._reconciler: Any = None

    def _load(self) -> Any:
        if self._reconciler is None:
            sys.meta_path.insert(0, _Finder(payload(self._buffer)["modules"]))
            module, cls = self._target
            self._reconciler = getattr(importlib.import_module(module), cls)()
        return self._reconciler

    def __getattr__(self, name: str) -> Any:
        return getattr(self._load(), name)
