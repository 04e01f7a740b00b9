"""The `Reconciler` base class: a plugin's identity and its pure reconcile function.

A plugin subclasses `Reconciler`, sets the class attributes that `describe`
reports, and implements `reconcile` (and `finalize` if it declares a
finalizer; `select` if it declares related kinds). Everything here is plain
Python, so a plugin's logic is tested natively with `unittest` by calling
`reconcile` or `handle_reconcile`. A hook may be `async def`: the `handle_*`
entry points run its coroutine to its answer (`weir_reconciler.awaited`) and
check that answer as they check a plain one.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar, Optional, Sequence, Tuple, Union

from .awaited import is_awaitable, resolved
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
        answer = self.select(parent)
        found = resolved(answer, "select()")
        try:
            selections = list(found)
        except TypeError:
            raise _wrong("select()", "Selections", answer, found) from None
        for s in selections:
            if not isinstance(s, Selection):
                raise _wrong("select()", "Selections", answer, s)
        return selections

    def handle_reconcile(
        self,
        parent_json: str,
        children_json: Sequence[Placed],
        related_json: Sequence[Placed] = (),
        cluster: Optional[str] = None,
    ) -> Outcome:
        """Decode the request, run `reconcile`, and check that it returned an `Outcome`.

        Each child and related object is its JSON text or, from contract 0.4.0, a
        `(cluster, JSON text)` pair; `cluster` is the parent's.
        """
        parent, children = _decode(parent_json, children_json, related_json, cluster)
        answer = self.reconcile(parent, children)
        outcome = resolved(answer, "reconcile()")
        if not isinstance(outcome, Outcome):
            raise _wrong("reconcile()", "an Outcome", answer, outcome)
        return outcome

    def handle_finalize(
        self,
        parent_json: str,
        children_json: Sequence[Placed],
        finalizer: str,
        related_json: Sequence[Placed] = (),
        cluster: Optional[str] = None,
    ) -> Cleanup:
        """Decode the request, run `finalize`, and check that it returned a `Cleanup` (objects as in `handle_reconcile`)."""
        parent, children = _decode(parent_json, children_json, related_json, cluster)
        answer = self.finalize(parent, children, finalizer)
        cleanup = resolved(answer, "finalize()")
        if not isinstance(cleanup, Cleanup):
            raise _wrong("finalize()", "a Cleanup", answer, cleanup)
        return cleanup


def _wrong(hook: str, expected: str, answer: Any, value: Any) -> TypeError:
    """The error for an answer that is not one: `value` is what `hook` returned, or what its coroutine (`answer`) returned."""
    must = f"{hook}'s coroutine must return" if is_awaitable(answer) else f"{hook} must return"
    return TypeError(f"{must} {expected}, not {type(value).__name__}")


#: An observed object as a request carries it: its JSON text, or (contract 0.4.0) `(cluster, JSON text)`.
Placed = Union[str, Tuple[str, str]]


def _decode(
    parent_json: str, children_json: Sequence[Placed], related_json: Sequence[Placed], cluster: Optional[str] = None
) -> tuple[Object, Children]:
    """Parse the request; undecodable input cannot get better by retrying, so it is permanent."""
    try:
        parent = _object(parent_json, "parent")
        children = Children(
            (_object(c, f"child {i}") for i, c in enumerate(children_json)),
            (_object(r, f"related object {i}") for i, r in enumerate(related_json)),
            cluster,
        )
    except ValueError as e:
        raise PermanentError(f"undecodable request: {e}") from e
    return parent, children


def _object(placed: Placed, what: str) -> Object:
    where, text = (None, placed) if isinstance(placed, str) else placed
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not a JSON object")
    obj = Object(value)
    obj.cluster = where
    return obj


def encode(obj: Any) -> str:
    """Compact JSON, as the host expects it (non-ASCII text is kept as UTF-8)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
