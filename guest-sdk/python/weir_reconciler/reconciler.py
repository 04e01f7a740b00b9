"""The `Reconciler` base class: a plugin's identity and its pure reconcile function.

A plugin subclasses `Reconciler`, sets the class attributes that `describe`
reports, and implements `reconcile` (and `finalize` if it declares a
finalizer; `select` if it declares related kinds). Everything here is plain
Python, so a plugin's logic is tested natively with `unittest` by calling
`reconcile` or `handle_reconcile`.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Optional, Sequence

from .objects import Children, Kind, Object
from .outcome import Cleanup, Outcome, PermanentError
from .selection import Selection


class Reconciler:
    """Base class of a Python reconciler plugin.

    Class attributes (reported by `describe`): `name`, `version`, `parent`
    (a `Kind`), `children` (the kinds it may create), optionally `related`
    (the kinds it may read), `finalizer` and `crd` (the parent's CRD as YAML
    or JSON text).
    """

    name: ClassVar[str]
    version: ClassVar[str] = "0.1.0"
    parent: ClassVar[Kind]
    children: ClassVar[Sequence[Kind]] = ()
    related: ClassVar[Sequence[Kind]] = ()
    finalizer: ClassVar[Optional[str]] = None
    crd: ClassVar[Optional[str]] = None

    def select(self, parent: Object) -> Sequence[Selection]:
        """The related objects to read for `parent`, of `related` kinds only; by default none.

        Called before every `reconcile` and `finalize`, which find the selected
        objects that exist in `children.related`. Must depend on the parent
        alone. A change to a selected object (or its creation) reconciles the
        parent again.
        """
        return []

    def reconcile(self, parent: Object, children: Children) -> Outcome:
        """The desired children and status of `parent`, given the children it owns now."""
        raise NotImplementedError(f"{type(self).__name__} must implement reconcile()")

    def finalize(self, parent: Object, children: Children, finalizer: str) -> Cleanup:
        """One cleanup step while `parent` is being deleted; by default nothing to clean."""
        return Cleanup.complete()

    # The JSON-level entry points the component glue calls. Tests may call
    # them too, to exercise exactly what the host sends.

    def handle_select(self, parent_json: str) -> list[Selection]:
        """Decode the parent, run `select`, and check that it returned `Selection`s."""
        parent, _ = _decode(parent_json, (), ())
        selections = list(self.select(parent))
        for s in selections:
            if not isinstance(s, Selection):
                raise TypeError(f"select() must return Selections, not {type(s).__name__}")
        return selections

    def handle_reconcile(self, parent_json: str, children_json: Sequence[str], related_json: Sequence[str] = ()) -> Outcome:
        """Decode the request, run `reconcile`, and check that it returned an `Outcome`."""
        parent, children = _decode(parent_json, children_json, related_json)
        outcome = self.reconcile(parent, children)
        if not isinstance(outcome, Outcome):
            raise TypeError(f"reconcile() must return an Outcome, not {type(outcome).__name__}")
        return outcome

    def handle_finalize(
        self, parent_json: str, children_json: Sequence[str], finalizer: str, related_json: Sequence[str] = ()
    ) -> Cleanup:
        """Decode the request, run `finalize`, and check that it returned a `Cleanup`."""
        parent, children = _decode(parent_json, children_json, related_json)
        cleanup = self.finalize(parent, children, finalizer)
        if not isinstance(cleanup, Cleanup):
            raise TypeError(f"finalize() must return a Cleanup, not {type(cleanup).__name__}")
        return cleanup


def _decode(parent_json: str, children_json: Sequence[str], related_json: Sequence[str]) -> tuple[Object, Children]:
    """Parse the request; undecodable input cannot get better by retrying, so it is permanent."""
    try:
        parent = _object(json.loads(parent_json), "parent")
        children = Children(
            (_object(json.loads(c), f"child {i}") for i, c in enumerate(children_json)),
            (_object(json.loads(r), f"related object {i}") for i, r in enumerate(related_json)),
        )
    except ValueError as e:
        raise PermanentError(f"undecodable request: {e}") from e
    return parent, children


def _object(value: Any, what: str) -> Object:
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not a JSON object")
    return Object(value)


def encode(obj: Any) -> str:
    """Compact JSON, as the host expects it (non-ASCII text is kept as UTF-8)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
