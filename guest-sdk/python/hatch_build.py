"""Build hook: ships the contract's WIT files inside the package.

The WIT directory lives at the repository root (`wit/`), outside this
project. A wheel built from the checkout gets it as `weir_reconciler/wit`;
an sdist gets it as `wit/`, from which its own wheel is then built. An
editable install needs neither: the build command finds the checkout's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name == "wheel" and version == "editable":
            return
        root = Path(self.root)
        found = next((d for d in (root / "wit", root.parent.parent / "wit") if (d / "reconciler.wit").is_file()), None)
        if found is None:
            raise RuntimeError(f"no wit/reconciler.wit in {root} or {root.parent.parent}: build from the Weir checkout")
        build_data["force_include"][str(found.resolve())] = "weir_reconciler/wit" if self.target_name == "wheel" else "wit"
