"""Kubernetes objects as plain dicts: the parent with accessors, and builders for common children.

Objects cross the plugin boundary as JSON, so a dict is the honest Python
type for them. `Object` adds read accessors for the fields every reconciler
touches; the builders return ordinary dicts so a plugin can add anything the
builders do not cover.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping, Optional


@dataclass(frozen=True)
class Kind:
    """A Kubernetes resource type as a plugin declares it (WIT `resource-kind`)."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """`group/version`, or just `version` for the core group, as in `apiVersion`."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether `obj` (a manifest) is of this kind."""
        return obj.get("apiVersion") == self.api_version and obj.get("kind") == self.kind


#: The child kinds most plugins own, ready to list in `Reconciler.children`.
CONFIG_MAP = Kind("", "v1", "ConfigMap", "configmaps")
SERVICE = Kind("", "v1", "Service", "services")
DEPLOYMENT = Kind("apps", "v1", "Deployment", "deployments")
#: Kinds often read as related objects (`Reconciler.related`): a Secret arrives without its data.
SECRET = Kind("", "v1", "Secret", "secrets")
NAMESPACE = Kind("", "v1", "Namespace", "namespaces", namespaced=False)


class Object(dict):
    """A Kubernetes object (a dict) with accessors for the usual fields.

    Accessors never raise on a missing field: they return `None` or an empty
    dict, because a cached object may legitimately lack `status` or labels.

    `cluster` (contract 0.4.0) is the name of the cluster the object lives in,
    or, for a desired child, the cluster it belongs in (`in_cluster`); `None`:
    the parent's.
    """

    cluster: Optional[str] = None

    @property
    def api_version(self) -> Optional[str]:
        return self.get("apiVersion")

    @property
    def kind(self) -> Optional[str]:
        return self.get("kind")

    @property
    def metadata(self) -> dict:
        return self.get("metadata") or {}

    @property
    def name(self) -> Optional[str]:
        return self.metadata.get("name")

    @property
    def namespace(self) -> Optional[str]:
        return self.metadata.get("namespace")

    @property
    def uid(self) -> Optional[str]:
        return self.metadata.get("uid")

    @property
    def generation(self) -> Optional[int]:
        return self.metadata.get("generation")

    @property
    def labels(self) -> dict:
        return self.metadata.get("labels") or {}

    @property
    def annotations(self) -> dict:
        return self.metadata.get("annotations") or {}

    @property
    def deleting(self) -> bool:
        """Whether the object is being deleted (`metadata.deletionTimestamp` is set)."""
        return self.metadata.get("deletionTimestamp") is not None

    @property
    def spec(self) -> dict:
        return self.get("spec") or {}

    @property
    def status(self) -> dict:
        return self.get("status") or {}

    def path(self, dotted: str, default: Any = None) -> Any:
        """The value at a dotted path such as `"status.readyReplicas"`, or `default`."""
        node: Any = self
        for part in dotted.split("."):
            if not isinstance(node, Mapping) or part not in node:
                return default
            node = node[part]
        return node


def in_cluster(cluster: str, manifest: Mapping[str, Any]) -> Object:
    """`manifest` as a desired child that belongs in `cluster` (contract 0.4.0), not the parent's.

    The host refuses a cluster it has not engaged.
    """
    placed = Object(manifest)
    placed.cluster = cluster
    return placed


class Objects:
    """A set of objects looked up by kind and name (the observed children, or the related objects).

    Each object lives in a cluster (`Object.cluster`, contract 0.4.0); `get` and
    `of_kind` read the parent's (`cluster`) unless given another.
    """

    def __init__(self, objects: Iterable[Mapping[str, Any]] = (), cluster: Optional[str] = None):
        self._objects = [o if isinstance(o, Object) else Object(o) for o in objects]
        #: The name of the parent's cluster (`None` in a test that names none).
        self.cluster = cluster

    def __iter__(self) -> Iterator[Object]:
        return iter(self._objects)

    def __len__(self) -> int:
        return len(self._objects)

    def _in(self, o: Object, cluster: Optional[str]) -> bool:
        want = self.cluster if cluster is None else cluster
        return (o.cluster or self.cluster) == want

    def of_kind(self, kind: Kind, cluster: Optional[str] = None) -> list[Object]:
        """Every object of `kind` in `cluster` (default: the parent's)."""
        return [o for o in self._objects if kind.matches(o) and self._in(o, cluster)]

    def get(self, kind: Kind, name: str, namespace: Optional[str] = None, cluster: Optional[str] = None) -> Optional[Object]:
        """The object of `kind` named `name` (in `namespace`, if given) in `cluster` (default: the parent's), if the cache holds one."""
        for o in self.of_kind(kind, cluster):
            if o.name == name and (namespace is None or o.namespace == namespace):
                return o
        return None

    def clusters(self) -> list[str]:
        """The names of the clusters the objects live in, sorted, each once."""
        return sorted({c for c in (o.cluster or self.cluster for o in self._objects) if c is not None})


class Children(Objects):
    """The observed children of one parent, looked up by kind and name.

    `related` holds the related objects the plugin selected that exist
    (`Reconciler.select`; empty for a plugin without related kinds), looked
    up the same way. Secrets come without their data. `cluster` is the name
    of the parent's cluster (contract 0.4.0).
    """

    def __init__(
        self,
        objects: Iterable[Mapping[str, Any]] = (),
        related: Iterable[Mapping[str, Any]] = (),
        cluster: Optional[str] = None,
    ):
        super().__init__(objects, cluster)
        self.related = Objects(related, cluster)


def _metadata(name: str, labels: Optional[Mapping[str, str]], annotations: Optional[Mapping[str, str]]) -> dict:
    meta: dict = {"name": name}
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


def config_map(
    name: str,
    data: Mapping[str, str],
    *,
    labels: Optional[Mapping[str, str]] = None,
    annotations: Optional[Mapping[str, str]] = None,
) -> dict:
    """A `v1/ConfigMap` manifest holding `data`."""
    return {
        "apiVersion": CONFIG_MAP.api_version,
        "kind": "ConfigMap",
        "metadata": _metadata(name, labels, annotations),
        "data": dict(data),
    }


def container(
    name: str,
    image: str,
    *,
    ports: Iterable[Mapping[str, Any]] = (),
    volume_mounts: Iterable[Mapping[str, Any]] = (),
    **extra: Any,
) -> dict:
    """A container spec; `ports` and `volume_mounts` are omitted when empty."""
    spec: dict = {"name": name, "image": image}
    if ports:
        spec["ports"] = [dict(p) for p in ports]
    if volume_mounts:
        spec["volumeMounts"] = [dict(m) for m in volume_mounts]
    spec.update(extra)
    return spec


def deployment(
    name: str,
    *,
    replicas: int,
    selector: Mapping[str, str],
    containers: Iterable[Mapping[str, Any]],
    volumes: Iterable[Mapping[str, Any]] = (),
    labels: Optional[Mapping[str, str]] = None,
    annotations: Optional[Mapping[str, str]] = None,
    pod_labels: Optional[Mapping[str, str]] = None,
    pod_annotations: Optional[Mapping[str, str]] = None,
) -> dict:
    """An `apps/v1` Deployment whose pods carry `selector` (plus `pod_labels`)."""
    template_labels = {**selector, **(pod_labels or {})}
    template_meta: dict = {"labels": template_labels}
    if pod_annotations:
        template_meta["annotations"] = dict(pod_annotations)
    pod_spec: dict = {"containers": [dict(c) for c in containers]}
    if volumes:
        pod_spec["volumes"] = [dict(v) for v in volumes]
    return {
        "apiVersion": DEPLOYMENT.api_version,
        "kind": "Deployment",
        "metadata": _metadata(name, labels, annotations),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(selector)},
            "template": {"metadata": template_meta, "spec": pod_spec},
        },
    }


def service(
    name: str,
    *,
    selector: Mapping[str, str],
    ports: Iterable[Mapping[str, Any]],
    labels: Optional[Mapping[str, str]] = None,
    annotations: Optional[Mapping[str, str]] = None,
    type: Optional[str] = None,
) -> dict:
    """A `v1/Service` routing `ports` to the pods matching `selector`."""
    spec: dict = {"selector": dict(selector), "ports": [dict(p) for p in ports]}
    if type:
        spec["type"] = type
    return {
        "apiVersion": SERVICE.api_version,
        "kind": "Service",
        "metadata": _metadata(name, labels, annotations),
        "spec": spec,
    }


def condition(type: str, holds: bool, reason: str, message: str) -> dict:
    """A `status.conditions` entry, `True` when `holds`, else `False`.

    A plugin has no clock: the host sets `lastTransitionTime` and
    `observedGeneration` (as the Rust SDK's `Condition::new` does).
    """
    return {"type": type, "status": "True" if holds else "False", "reason": reason, "message": message}
