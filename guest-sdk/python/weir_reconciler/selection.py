"""What a plugin reads beyond its children: selections of related objects, by name or by labels.

A plugin lists the kinds it may read in `Reconciler.related` and, for each
parent, returns `Selection`s from `Reconciler.select`. The host resolves them
from its caches and hands the objects that exist to `reconcile` and
`finalize` in `children.related`. Label selectors are Kubernetes'
`LabelSelector` in its JSON shape (`matchLabels`, `matchExpressions`), so a
selector the user wrote in a spec passes through unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping, Optional

from .objects import Kind
from .outcome import PermanentError

#: The operators of a `matchExpressions` entry, as Kubernetes spells them.
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True)
class Requirement:
    """One `matchExpressions` entry."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class LabelSelector:
    """A checked label selector: every `match_labels` pair and every requirement must hold."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    @classmethod
    def parse(cls, value: Any) -> "LabelSelector":
        """From Kubernetes' JSON shape; a malformed selector is a `PermanentError` naming the field.

        Only the shape is checked here (types, a known operator). What
        Kubernetes would also refuse (`In` without values, `Exists` with
        values, an empty key) passes, and the host refuses it on the parent
        (`InvalidSelection`), as for a plugin in any language.
        """
        if value is None:
            return cls()
        if not isinstance(value, Mapping):
            raise PermanentError(f"label selector: expected an object, got {type(value).__name__}")
        labels = value.get("matchLabels") or {}
        if not isinstance(labels, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items()):
            raise PermanentError("label selector: matchLabels must map strings to strings")
        expressions = []
        for i, e in enumerate(value.get("matchExpressions") or []):
            where = f"label selector: matchExpressions[{i}]"
            if not isinstance(e, Mapping) or not isinstance(e.get("key"), str):
                raise PermanentError(f"{where}: expected an object with a string key")
            operator, values = e.get("operator"), e.get("values") or []
            if operator not in OPERATORS:
                raise PermanentError(f"{where}: operator {operator!r} is not In, NotIn, Exists or DoesNotExist")
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise PermanentError(f"{where}: values must be a list of strings")
            expressions.append(Requirement(e["key"], operator, tuple(values)))
        return cls(tuple(sorted(labels.items())), tuple(expressions))

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether an object carrying `labels` is selected (what the host computes)."""
        if any(labels.get(k) != v for k, v in self.match_labels):
            return False
        for r in self.match_expressions:
            present = r.key in labels
            if r.operator == "In" and not (present and labels[r.key] in r.values):
                return False
            if r.operator == "NotIn" and present and labels[r.key] in r.values:
                return False
            if r.operator == "Exists" and not present:
                return False
            if r.operator == "DoesNotExist" and present:
                return False
        return True


@dataclass(frozen=True)
class Selection:
    """Objects of one related kind to read for a parent: one by `name`, or a set by `labels`.

    Build it with `Selection.by_name`, `Selection.by_labels` or
    `Selection.matching`. `namespace` `None` means the parent's (a namespaced
    kind is read there only; a cluster-scoped kind cluster-wide). `cluster`
    `None` means the parent's cluster (contract 0.4.0; `in_cluster` names another).
    """

    api_version: str
    kind: str
    name: Optional[str] = None
    labels: Optional[LabelSelector] = None
    namespace: Optional[str] = field(default=None)
    cluster: Optional[str] = field(default=None)

    def __post_init__(self) -> None:
        if (self.name is None) == (self.labels is None):
            raise ValueError("a Selection reads either one object by name or a set by labels")

    def in_cluster(self, cluster: str) -> "Selection":
        """The same selection, read in `cluster`; what it finds is in `children.related` with that cluster."""
        return replace(self, cluster=cluster)

    @classmethod
    def by_name(cls, kind: Kind, name: str, *, namespace: Optional[str] = None) -> "Selection":
        """The object of `kind` called `name`, whether or not it exists yet (its creation wakes the parent)."""
        return cls(kind.api_version, kind.kind, name=name, namespace=namespace)

    @classmethod
    def by_labels(cls, kind: Kind, selector: Any, *, namespace: Optional[str] = None) -> "Selection":
        """Every object of `kind` whose labels match `selector` (a `LabelSelector`, or its JSON shape)."""
        parsed = selector if isinstance(selector, LabelSelector) else LabelSelector.parse(selector)
        return cls(kind.api_version, kind.kind, labels=parsed, namespace=namespace)

    @classmethod
    def matching(cls, kind: Kind, labels: Mapping[str, str], *, namespace: Optional[str] = None) -> "Selection":
        """Every object of `kind` carrying all of `labels`."""
        return cls.by_labels(kind, {"matchLabels": dict(labels)}, namespace=namespace)
