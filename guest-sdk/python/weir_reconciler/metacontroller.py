"""Metacontroller migration: a CompositeController's `sync` (and `customize`, `finalize`) hooks as a Weir plugin.

A function written for Metacontroller's CompositeController webhooks runs
unchanged; a few lines declare what Metacontroller's CompositeController
object declared::

    from weir_reconciler import CONFIG_MAP, Kind
    from weir_reconciler.metacontroller import composite_controller
    from hooks import sync, customize          # the webhook functions, as they were

    Bundle = composite_controller(
        name="config-bundle",
        parent=Kind("example.weir.dev", "v1alpha1", "ConfigBundle", "configbundles"),
        children=[CONFIG_MAP],
        related=[CONFIG_MAP],
        sync=sync,
        customize=customize,
    )

The mapping (README.md, "Migrating from Metacontroller", says what differs):

- `customize({controller, parent})` -> `relatedResources` rules become the
  plugin's `select`: `names` select by name, `labelSelector` by labels
  (neither: every object of the kind in the parent's namespace); `resource`
  must be the plural of a kind declared in `related`. `namespace` reads
  another namespace, and `namespaceSelector` the namespaces whose labels
  match (it needs `NAMESPACE` declared in `related`): both only as far as
  the host's policy entry for the plugin allows (a cluster-scoped parent's
  rule without a namespace reads every namespace the entry allows).
- `sync({controller, parent, children, related, finalizing: false})` becomes
  `reconcile`: `children` and `related` are maps `Kind.apiVersion` -> key ->
  object, with an entry (maybe empty) for every declared kind. The key is
  Metacontroller's (`object_key`): with hooks of version v1 (the default), the
  name of an object in the parent's namespace or of a cluster-scoped object,
  and `namespace/name` otherwise, so always `namespace/name` for a namespaced
  object under a cluster-scoped parent; with `hook_version="v2"`,
  `namespace/name` for every namespaced object and the name for a
  cluster-scoped one. Desired children are read back from their own
  `metadata`, never from a key: a namespaced child without
  `metadata.namespace` lands in the parent's namespace.
- A cluster-scoped parent (`Kind(..., namespaced=False)` and a CRD with
  `scope: Cluster`) and children in other namespaces (each child sets its
  `metadata.namespace`) are served when the host's policy has an entry for
  the plugin that allows them; otherwise the host refuses them. The response's
  `children` are the desired children, `status` the parent's status (absent or
  null: left as it is), `resyncAfterSeconds` > 0 a requeue after that long.
- `finalize` (the finalize hook, or the sync function itself when it reads
  `finalizing`) gets the same request with `finalizing: true`; the `children`
  and `status` it returns are held while the finalizer is (absent `children`:
  left as they are), `finalized: true` completes the cleanup once they are
  written, otherwise it is asked again at the next change or after
  `resyncAfterSeconds` (or `FINALIZE_RETRY_SECONDS`).
- `controller` is a CompositeController object made from the declaration.
- A hook may be `async def`: its coroutine is run to its response
  (`weir_reconciler.awaited`), which is then checked as a plain one.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Mapping, Optional, Sequence, Union

from .awaited import resolved
from .objects import Children, Kind, Object, Objects
from .outcome import Cleanup, Outcome, PermanentError
from .reconciler import Reconciler
from .selection import LabelSelector, Selection

Response = Optional[Mapping[str, Any]]
Hook = Callable[[dict], Union[Response, Awaitable[Response]]]

#: When a finalize hook answers `finalized: false` without `resyncAfterSeconds`.
FINALIZE_RETRY_SECONDS = 5


def kind_key(kind: Kind) -> str:
    """Metacontroller's key of a kind in `children` and `related`: `Kind.apiVersion`, e.g. `Deployment.apps/v1`."""
    return f"{kind.kind}.{kind.api_version}"


#: The hook versions Metacontroller defines: how `children` and `related` are keyed.
HOOK_VERSIONS = ("v1", "v2")


def object_key(obj: Object, parent_namespace: Optional[str], hook_version: str = "v1") -> str:
    """The key of `obj` in a hook's `children`/`related` map, as Metacontroller keys it.

    A cluster-scoped object is keyed by its name. A namespaced one is keyed
    `namespace/name`, except in a v1 hook when it is in the parent's namespace
    (`parent_namespace`; none for a cluster-scoped parent): then by its name.
    Metacontroller never hands a namespaced parent's v1 hook an object of
    another namespace; Weir does when the operator's policy allows the read,
    and keys it `namespace/name` so that it cannot collide with one of the
    parent's own namespace.
    """
    if not obj.namespace or (hook_version == "v1" and obj.namespace == parent_namespace):
        return obj.name
    return f"{obj.namespace}/{obj.name}"


def controller_object(name: str, parent: Kind, children: Sequence[Kind], hooks: Sequence[str], hook_version: str = "v1") -> dict:
    """The CompositeController a Metacontroller user would have applied, for the hooks' `controller` field."""

    def rule(k: Kind) -> dict:
        return {"apiVersion": k.api_version, "resource": k.plural}

    return {
        "apiVersion": "metacontroller.k8s.io/v1alpha1",
        "kind": "CompositeController",
        "metadata": {"name": name},
        "spec": {
            "parentResource": rule(parent),
            "childResources": [rule(c) for c in children],
            "hooks": {h: {"version": hook_version} for h in hooks},
        },
    }


def object_map(kinds: Sequence[Kind], objects: Objects, parent_namespace: Optional[str], hook_version: str = "v1") -> dict:
    """`Kind.apiVersion` -> key -> object, with an entry for every kind in `kinds` (keys: `object_key`)."""
    return {kind_key(k): {object_key(o, parent_namespace, hook_version): dict(o) for o in objects.of_kind(k)} for k in kinds}


def _namespace_kind(related: Sequence[Kind], where: str) -> Kind:
    for k in related:
        if k.api_version == "v1" and k.kind == "Namespace":
            return k
    raise PermanentError(f"{where}: namespaceSelector reads Namespaces' labels, so declare NAMESPACE in related")


def selections(rules: Any, related: Sequence[Kind]) -> list[Selection]:
    """The `relatedResources` of a customize response as selections of declared kinds."""
    if not isinstance(rules, list):
        raise PermanentError(f"customize: relatedResources must be a list, got {type(rules).__name__}")
    declared = {(k.api_version, k.plural): k for k in related}
    chosen: list[Selection] = []
    for i, rule in enumerate(rules):
        where = f"customize: relatedResources[{i}]"
        if not isinstance(rule, Mapping):
            raise PermanentError(f"{where}: expected an object")
        kind = declared.get((rule.get("apiVersion"), rule.get("resource")))
        if kind is None:
            names = ", ".join(f"{a} {r}" for a, r in declared) or "none"
            raise PermanentError(f"{where}: {rule.get('apiVersion')} {rule.get('resource')} is not a declared related kind (declared: {names})")
        namespace = rule.get("namespace") or None
        names = rule.get("names") or []
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise PermanentError(f"{where}: names must be a list of strings")
        if names:
            chosen += [Selection.by_name(kind, n, namespace=namespace) for n in names]
        else:
            chosen.append(Selection.by_labels(kind, rule.get("labelSelector") or {}, namespace=namespace))
        if rule.get("namespaceSelector") is not None:
            # The namespaces' labels, to keep the rule's objects in matching namespaces only.
            chosen.append(Selection.by_labels(_namespace_kind(related, where), rule["namespaceSelector"]))
    return chosen


def _response(answer: Any, hook: str) -> Mapping[str, Any]:
    value = resolved(answer, f"the {hook} hook")
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"the {hook} hook must return a dict, not {type(value).__name__}")
    return value


def _children(response: Mapping[str, Any], hook: str) -> list:
    """A response's `children` (none: an empty list), checked."""
    desired = response.get("children") or []
    if not isinstance(desired, list) or not all(isinstance(c, Mapping) for c in desired):
        raise TypeError(f"the {hook} hook's children must be a list of objects")
    return desired


def _seconds(response: Mapping[str, Any], hook: str) -> float:
    seconds = response.get("resyncAfterSeconds") or 0
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
        raise TypeError(f"the {hook} hook's resyncAfterSeconds must be a non-negative number, got {seconds!r}")
    return float(seconds)


def composite_controller(
    *,
    name: str,
    parent: Kind,
    sync: Hook,
    children: Sequence[Kind] = (),
    related: Sequence[Kind] = (),
    customize: Optional[Hook] = None,
    finalize: Optional[Hook] = None,
    finalizer: Optional[str] = None,
    version: str = "0.1.0",
    crd: Optional[str] = None,
    hook_version: str = "v1",
) -> type:
    """A `Reconciler` subclass serving CompositeController hooks (see the module's docs for the mapping).

    `finalize`, if given, is the finalize hook (it may be `sync` itself); the
    plugin then holds the finalizer `finalizer` (default
    `metacontroller.weir.dev/<name>`) on every parent.
    """
    if hook_version not in HOOK_VERSIONS:
        raise ValueError(f"hook_version must be one of {HOOK_VERSIONS}, got {hook_version!r}")
    hooks = ["sync"] + (["customize"] if customize else []) + (["finalize"] if finalize else [])
    controller = controller_object(name, parent, children, hooks, hook_version)
    declared_children, declared_related = list(children), list(related)

    def request(parent_object: Object, observed: Children, finalizing: bool) -> dict:
        return {
            "controller": controller,
            "parent": dict(parent_object),
            "children": object_map(declared_children, observed, parent_object.namespace, hook_version),
            "related": object_map(declared_related, filtered(parent_object, observed.related), parent_object.namespace, hook_version),
            "finalizing": finalizing,
        }

    def rules(parent_object: Object) -> list:
        if customize is None:
            return []
        response = _response(customize({"controller": controller, "parent": dict(parent_object)}), "customize")
        return response.get("relatedResources") or []

    def filtered(parent_object: Object, objects: Objects) -> Objects:
        # A rule with both `names` and `labelSelector` reads the named objects that also match;
        # one with a `namespaceSelector`, its objects in namespaces whose labels match.
        keep = list(objects)
        namespaces = [o for o in keep if o.get("kind") == "Namespace" and o.get("apiVersion") == "v1"]
        for rule in rules(parent_object):
            if not isinstance(rule, Mapping):
                continue
            of_rule = lambda o: o.get("apiVersion") == rule.get("apiVersion") and _plural(o) == rule.get("resource")  # noqa: E731
            if rule.get("names") and rule.get("labelSelector"):
                selector = LabelSelector.parse(rule["labelSelector"])
                named = set(rule["names"])
                keep = [o for o in keep if not of_rule(o) or o.name not in named or selector.matches(o.labels)]
            if rule.get("namespaceSelector") is not None:
                selector = LabelSelector.parse(rule["namespaceSelector"])
                allowed = {n.name for n in namespaces if selector.matches(n.labels)}
                keep = [o for o in keep if not of_rule(o) or o.namespace in allowed]
        return Objects(keep, objects.cluster)

    plurals = {(k.api_version, k.kind): k.plural for k in declared_related}

    def _plural(o: Object) -> Optional[str]:
        return plurals.get((o.get("apiVersion"), o.get("kind")))

    class CompositeController:
        def select(self, parent_object: Object) -> list[Selection]:
            return selections(rules(parent_object), declared_related)

        def reconcile(self, parent_object: Object, observed: Children) -> Outcome:
            response = _response(sync(request(parent_object, observed, False)), "sync")
            outcome = Outcome.apply(_children(response, "sync"))
            status = response.get("status")
            if status is not None:
                outcome.status(status)
            seconds = _seconds(response, "sync")
            return outcome.requeue_after(seconds) if seconds > 0 else outcome

        def finalize(self, parent_object: Object, observed: Children, held: str) -> Cleanup:
            if finalize is None:
                return Cleanup.complete()
            response = _response(finalize(request(parent_object, observed, True)), "finalize")
            # Children it returns are held (applied and pruned) while the finalizer is; a
            # response without `children` leaves them as they are.
            acts = response.get("children") is not None
            cleanup = Cleanup.apply(_children(response, "finalize")) if acts else Cleanup()
            status = response.get("status")
            if status is not None:
                cleanup.status(status)
            if response.get("finalized") is True:
                return cleanup.finalized()
            return cleanup.requeue_after(_seconds(response, "finalize") or FINALIZE_RETRY_SECONDS)

    attributes = {
        "name": name,
        "version": version,
        "parent": parent,
        "children": declared_children,
        "related": declared_related,
        "finalizer": (finalizer or f"metacontroller.weir.dev/{name}") if finalize else None,
        "crd": crd,
        "select": CompositeController.select,
        "reconcile": CompositeController.reconcile,
        "finalize": CompositeController.finalize,
        "__doc__": f"The CompositeController hooks of {name}, as a Weir plugin.",
    }
    return type(f"CompositeController_{name.replace('-', '_')}", (Reconciler,), attributes)
