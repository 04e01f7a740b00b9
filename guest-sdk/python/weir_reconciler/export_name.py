"""Builds a contract whose export is named like a C library function: a stand-in name, renamed after linking.

componentize-py links the plugin against a dynamically linked libc, and a
world-level export named like one of its functions collides with it at link
time ("one or more duplicate items detected", componentize-py issue #187).
Contract 0.2.0 exports `select`, which libc also defines. So the build
stages a copy of the contract whose world exports `select-related` instead
(same types, same imports: only that one kebab name differs), and once the
component is built renames that export back to `select` in the component's
top-level export section. The host then sees exactly the 0.2.0 world.
"""

from __future__ import annotations

import re
from pathlib import Path

#: (the contract's export, the stand-in name the build uses for it)
RENAMES = (("select", "select-related"),)

_MAGIC = b"\x00asm"
_COMPONENT_LAYER = b"\x0d\x00\x01\x00"
_EXPORT_SECTION = 11


class ExportNameError(Exception):
    """The built file is not the component the rename expects (not a component, or no such export)."""


def stage_wit(source: Path, target: Path) -> list[tuple[str, str]]:
    """Copies the contract's `.wit` files from `source` to `target` with clashing exports renamed.

    Returns the renames applied, as (stand-in, contract name) pairs to undo with `rename_exports`.
    """
    target.mkdir(parents=True, exist_ok=True)
    applied: list[tuple[str, str]] = []
    for wit in sorted(source.glob("*.wit")):
        text = wit.read_text(encoding="utf-8")
        for name, stand_in in RENAMES:
            text, count = re.subn(rf"(^\s*export\s+){re.escape(name)}(\s*:\s*func\b)", rf"\g<1>{stand_in}\g<2>", text, flags=re.M)
            if count:
                applied.append((stand_in, name))
        (target / wit.name).write_text(text, encoding="utf-8")
    return applied


def _leb(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _read_leb(data: bytes, at: int) -> tuple[int, int]:
    """(value, offset after it) of the unsigned LEB128 at `at`."""
    value = shift = 0
    while True:
        if at >= len(data):
            raise ExportNameError("truncated LEB128 number")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7


def _name(name: str) -> bytes:
    """An export name as the export section spells it: the plain-name tag, its length, its bytes."""
    raw = name.encode("utf-8")
    return b"\x00" + _leb(len(raw)) + raw


def rename_exports(component: bytes, renames: list[tuple[str, str]]) -> bytes:
    """`component` with each top-level export `old` renamed `new`, for (old, new) in `renames`.

    Only the top-level sections are walked (nested modules and components are
    skipped whole), and each name must appear exactly once in the export
    sections, as a whole entry name; anything else is an `ExportNameError`.
    """
    if component[:4] != _MAGIC or component[4:8] != _COMPONENT_LAYER:
        raise ExportNameError("not a WebAssembly component")
    out = bytearray(component[:8])
    found = {old: 0 for old, _ in renames}
    at = 8
    while at < len(component):
        section_id = component[at]
        size, body_start = _read_leb(component, at + 1)
        body = component[body_start : body_start + size]
        if len(body) != size:
            raise ExportNameError("truncated section")
        if section_id == _EXPORT_SECTION:
            for old, new in renames:
                count = body.count(_name(old))
                found[old] += count
                body = body.replace(_name(old), _name(new))
        out += bytes([section_id]) + _leb(len(body)) + body
        at = body_start + size
    wrong = {old: n for old, n in found.items() if n != 1}
    if wrong:
        raise ExportNameError(f"expected each renamed export exactly once, found {wrong}")
    return bytes(out)


def rename_file(path: Path, renames: list[tuple[str, str]]) -> None:
    """Rewrites the component at `path` with `rename_exports`."""
    if renames:
        path.write_bytes(rename_exports(path.read_bytes(), renames))
