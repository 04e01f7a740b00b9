"""ConfigPropagation's CompositeController hooks (v1), written for Metacontroller's webhooks (no Weir import).

A ConfigPropagation is cluster-scoped: it copies one ConfigMap (`spec.source`,
a namespace and a name) into every Namespace its `spec.namespaceSelector`
selects, under the same name. The copies are its children; the source and
the Namespaces are related objects. Under a cluster-scoped parent even hooks
of version v1 find a namespaced object under `namespace/name` (a Namespace
under its name): the source in `related`, each copy in `children`. The status
lists the namespaces copied into and those whose copy exists, or names the
source when it is missing.

Under Metacontroller these are the `customize` and `sync` webhooks of a
CompositeController (parent `configpropagations`, child `configmaps`, hooks
of the default version, v1); `plugin.py` declares the same for Weir.
"""


def source_of(parent):
    """The source ConfigMap's namespace and name."""
    source = (parent.get("spec") or {}).get("source") or {}
    return source.get("namespace") or "", source.get("name") or ""


def customize(request):
    """The related resources: the source ConfigMap, by name in its namespace, and the selected Namespaces."""
    spec = request["parent"].get("spec") or {}
    namespace, name = source_of(request["parent"])
    return {
        "relatedResources": [
            {"apiVersion": "v1", "resource": "configmaps", "namespace": namespace, "names": [name]},
            {"apiVersion": "v1", "resource": "namespaces", "labelSelector": spec.get("namespaceSelector") or {}},
        ]
    }


def sync(request):
    """One copy of the source per selected namespace (other than the source's own)."""
    namespace, name = source_of(request["parent"])
    source = request["related"]["ConfigMap.v1"].get(f"{namespace}/{name}")
    if source is None:
        return {"children": [], "status": {"missing": f"{namespace}/{name}", "copies": []}}
    targets = sorted(ns for ns in request["related"]["Namespace.v1"] if ns != namespace)
    present = [target for target in targets if f"{target}/{name}" in request["children"]["ConfigMap.v1"]]
    children = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": target, "labels": {"example.weir.dev/propagated-from": namespace}},
            "data": source.get("data") or {},
        }
        for target in targets
    ]
    return {"children": children, "status": {"copies": targets, "present": present}}
