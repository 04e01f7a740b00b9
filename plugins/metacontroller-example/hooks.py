"""ConfigBundle's CompositeController hooks, written for Metacontroller's webhooks (no Weir import).

A ConfigBundle gathers ConfigMaps it does not own into one ConfigMap it does:
the ones named in `spec.sources` (in that order) and the ones its
`spec.selector` selects (by name). Every key `k` of a source ConfigMap `cm`
becomes the key `cm.k` of the bundle `<bundle>-bundle`. The status counts the
sources found and lists the named ones that are missing.

Under Metacontroller these two functions are served as the `customize` and
`sync` webhooks of a CompositeController (parent `configbundles`, child
`configmaps`); `plugin.py` declares the same for Weir. They are plain
functions of the request, as Metacontroller documents it.
"""

#: The bundle looks again this often while a named source is missing (Metacontroller has no
#: other way to notice a related object's creation after its cache expired).
MISSING_RESYNC_SECONDS = 30


def customize(request):
    """The related resources: the named sources, and the ConfigMaps the selector selects."""
    spec = request["parent"].get("spec") or {}
    rules = []
    if spec.get("sources"):
        rules.append({"apiVersion": "v1", "resource": "configmaps", "names": list(spec["sources"])})
    if spec.get("selector") is not None:
        rules.append({"apiVersion": "v1", "resource": "configmaps", "labelSelector": spec["selector"]})
    return {"relatedResources": rules}


def sync(request):
    """The bundle ConfigMap, the status, and a resync while a named source is missing."""
    parent = request["parent"]
    name = parent["metadata"]["name"]
    bundle_name = f"{name}-bundle"
    spec = parent.get("spec") or {}
    named = list(spec.get("sources") or [])
    related = request["related"].get("ConfigMap.v1", {})
    # Named sources first, in their order; then the selected ones by name. The bundle itself
    # is never its own source, even if the selector matches its labels.
    order = [n for n in named if n in related] + sorted(n for n in related if n not in named)
    data = {}
    for source in order:
        if source == bundle_name:
            continue
        for key, value in sorted((related[source].get("data") or {}).items()):
            data[f"{source}.{key}"] = value
    missing = [n for n in named if n not in related]
    bundle = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": bundle_name, "labels": {"config-bundle.example.weir.dev/bundle": name}},
        "data": data,
    }
    return {
        "status": {"sources": len([s for s in order if s != bundle_name]), "missing": missing},
        "children": [bundle],
        "resyncAfterSeconds": MISSING_RESYNC_SECONDS if missing else 0,
    }
