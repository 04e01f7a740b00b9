"""The official Python client (`kubernetes`) against the emulator: one line per check.

Usage: conformance.py KUBECONFIG

The kubeconfig is the one the emulator wrote, loaded unmodified. Each check prints `PASS name`
or `FAIL name: reason`; the last line is `N passed, N failed`. When a check needs the emulator to
do something no client can ask for (forget its watch history, cut every watch), it prints
`HOOK what` and waits for one line on stdin: the test driving this script does it, then answers.
"""

import base64
import signal
import sys
import time
import traceback

from kubernetes import client, config, dynamic, watch
from kubernetes.client.rest import ApiException

NS = "py-conformance"
CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def hook(what):
    """Ask the driving test to act on the emulator, and wait until it has."""
    print(f"HOOK {what}", flush=True)
    answer = sys.stdin.readline().strip()
    if answer != "ok":
        raise RuntimeError(f"hook {what!r} answered {answer!r}")


def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def api_status(call):
    """The HTTP status a call fails with (None when it succeeds)."""
    try:
        call()
    except ApiException as e:
        return e.status
    return None


def configmap(name, labels=None, data=None):
    return client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, labels=labels or {}), data=data or {}
    )


class Suite:
    def __init__(self, kubeconfig):
        self.api = config.new_client_from_config(config_file=kubeconfig)
        self.core = client.CoreV1Api(self.api)
        self.apps = client.AppsV1Api(self.api)
        self.ext = client.ApiextensionsV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)


@check
def kubeconfig_loads_and_namespace_is_created(s):
    ns = s.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)))
    expect(ns.metadata.name == NS, ns.metadata)
    expect(ns.status.phase == "Active", f"phase {ns.status.phase}")
    names = [n.metadata.name for n in s.core.list_namespace().items]
    expect("default" in names and NS in names, names)


@check
def configmap_create_read_replace_patch_delete(s):
    created = s.core.create_namespaced_config_map(NS, configmap("crud", data={"a": "1"}))
    expect(created.metadata.uid and created.metadata.resource_version, created.metadata)
    got = s.core.read_namespaced_config_map("crud", NS)
    expect(got.data == {"a": "1"}, got.data)
    got.data["b"] = "2"
    replaced = s.core.replace_namespaced_config_map("crud", NS, got)
    expect(replaced.data == {"a": "1", "b": "2"}, replaced.data)
    expect(
        int(replaced.metadata.resource_version) > int(created.metadata.resource_version),
        "resourceVersion did not grow",
    )
    # A stale resourceVersion is a 409 Conflict.
    stale = s.core.read_namespaced_config_map("crud", NS)
    stale.metadata.resource_version = created.metadata.resource_version
    expect(api_status(lambda: s.core.replace_namespaced_config_map("crud", NS, stale)) == 409,
           "stale replace was not a conflict")
    patched = s.core.patch_namespaced_config_map("crud", NS, {"data": {"c": "3"}})
    expect(patched.data == {"a": "1", "b": "2", "c": "3"}, patched.data)
    jsonpatch = s.core.patch_namespaced_config_map(
        "crud", NS, [{"op": "remove", "path": "/data/a"}]
    )
    expect(jsonpatch.data == {"b": "2", "c": "3"}, jsonpatch.data)
    status = s.core.delete_namespaced_config_map("crud", NS)
    expect(status is not None, "no delete answer")
    expect(api_status(lambda: s.core.read_namespaced_config_map("crud", NS)) == 404,
           "deleted ConfigMap still readable")
    expect(api_status(lambda: s.core.create_namespaced_config_map(NS, configmap("dup")))
           is None, "create failed")
    expect(api_status(lambda: s.core.create_namespaced_config_map(NS, configmap("dup"))) == 409,
           "a second create was not AlreadyExists")


@check
def secret_string_data_is_stored_as_data(s):
    body = client.V1Secret(
        metadata=client.V1ObjectMeta(name="db"), string_data={"password": "s3cr3t"}
    )
    created = s.core.create_namespaced_secret(NS, body)
    expect(created.type == "Opaque", f"type {created.type}")
    got = s.core.read_namespaced_secret("db", NS)
    expect(got.string_data is None, f"stringData kept: {got.string_data}")
    expect(base64.b64decode(got.data["password"]) == b"s3cr3t", got.data)
    got.data["user"] = base64.b64encode(b"admin").decode()
    replaced = s.core.replace_namespaced_secret("db", NS, got)
    expect(sorted(replaced.data) == ["password", "user"], replaced.data)
    s.core.delete_namespaced_secret("db", NS)
    expect(api_status(lambda: s.core.read_namespaced_secret("db", NS)) == 404, "not deleted")


@check
def deployment_crud_with_server_defaults_and_scale(s):
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            },
        },
    }
    created = s.apps.create_namespaced_deployment(NS, body)
    expect(created.spec.strategy.type == "RollingUpdate", created.spec.strategy)
    expect(created.spec.revision_history_limit == 10, created.spec.revision_history_limit)
    expect(created.spec.template.spec.restart_policy == "Always", "no restartPolicy default")
    expect(created.metadata.generation == 1, created.metadata.generation)
    patched = s.apps.patch_namespaced_deployment(
        "web", NS, {"spec": {"template": {"spec": {"containers": [
            {"name": "web", "image": "nginx:1.28"}]}}}}
    )
    containers = patched.spec.template.spec.containers
    expect([c.image for c in containers] == ["nginx:1.28"], "strategic merge by name failed")
    expect(patched.metadata.generation == 2, patched.metadata.generation)
    scale = s.apps.read_namespaced_deployment_scale("web", NS)
    expect(scale.spec.replicas == 2, scale.spec)
    s.apps.patch_namespaced_deployment_scale("web", NS, {"spec": {"replicas": 3}})
    expect(s.apps.read_namespaced_deployment("web", NS).spec.replicas == 3, "scale not applied")
    listed = s.apps.list_namespaced_deployment(NS).items
    expect([d.metadata.name for d in listed] == ["web"], listed)
    s.apps.delete_namespaced_deployment("web", NS)
    deadline = time.time() + 10
    while api_status(lambda: s.apps.read_namespaced_deployment("web", NS)) != 404:
        expect(time.time() < deadline, "Deployment not deleted")
        time.sleep(0.05)


@check
def server_side_dry_run_stores_nothing(s):
    made = s.core.create_namespaced_config_map(NS, configmap("dry", data={"a": "1"}),
                                               dry_run="All")
    expect(made.metadata.name == "dry", made.metadata)
    expect(api_status(lambda: s.core.read_namespaced_config_map("dry", NS)) == 404,
           "a dry-run create stored the object")
    s.core.create_namespaced_config_map(NS, configmap("dry", data={"a": "1"}))
    s.core.patch_namespaced_config_map("dry", NS, {"data": {"a": "2"}}, dry_run="All")
    expect(s.core.read_namespaced_config_map("dry", NS).data == {"a": "1"},
           "a dry-run patch changed the object")
    s.core.delete_namespaced_config_map("dry", NS, dry_run="All")
    s.core.delete_namespaced_config_map(
        "dry", NS, body=client.V1DeleteOptions(dry_run=["All"]))
    expect(s.core.read_namespaced_config_map("dry", NS).data == {"a": "1"},
           "a dry-run delete removed the object")
    s.core.delete_namespaced_config_map("dry", NS)


@check
def list_with_label_selectors_and_pages(s):
    for i in range(6):
        tier = "front" if i % 2 == 0 else "back"
        s.core.create_namespaced_config_map(NS, configmap(f"sel-{i}", {"tier": tier, "sel": "y"}))

    def names(**kw):
        return sorted(c.metadata.name for c in s.core.list_namespaced_config_map(NS, **kw).items)

    expect(names(label_selector="tier=front") == ["sel-0", "sel-2", "sel-4"],
           names(label_selector="tier=front"))
    expect(names(label_selector="sel,tier!=front") == ["sel-1", "sel-3", "sel-5"], "!=")
    expect(names(label_selector="tier in (back),sel=y") == ["sel-1", "sel-3", "sel-5"], "in")
    expect(names(label_selector="!sel", field_selector="metadata.name=dup") == ["dup"],
           "!label with a field selector")
    page = s.core.list_namespaced_config_map(NS, label_selector="sel", limit=4)
    expect(len(page.items) == 4 and page.metadata._continue, "first page")
    rest = s.core.list_namespaced_config_map(
        NS, label_selector="sel", limit=4, _continue=page.metadata._continue
    )
    expect(len(rest.items) == 2 and not rest.metadata._continue, "second page")
    s.core.delete_collection_namespaced_config_map(NS, label_selector="sel")
    expect(names(label_selector="sel") == [], "deletecollection left objects")


@check
def watch_resumes_from_a_resource_version(s):
    rv = s.core.list_namespaced_config_map(NS).metadata.resource_version
    s.core.create_namespaced_config_map(NS, configmap("w1", {"watch": "me"}))
    s.core.patch_namespaced_config_map("w1", NS, {"data": {"k": "v"}})
    s.core.create_namespaced_config_map(NS, configmap("other"))
    s.core.delete_namespaced_config_map("w1", NS)
    w = watch.Watch()
    seen = []
    for ev in w.stream(s.core.list_namespaced_config_map, NS, label_selector="watch=me",
                       resource_version=rv, timeout_seconds=5):
        seen.append((ev["type"], ev["object"].metadata.name))
        if len(seen) == 3:
            w.stop()
    expect(seen == [("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")], seen)


@check
def watch_from_a_compacted_version_is_410_and_relist_recovers(s):
    rv = s.core.list_namespaced_config_map(NS).metadata.resource_version
    s.core.create_namespaced_config_map(NS, configmap("gone"))
    hook("compact")
    try:
        for _ in watch.Watch().stream(s.core.list_namespaced_config_map, NS,
                                      resource_version=rv, timeout_seconds=5):
            pass
        raise AssertionError("a watch from a compacted resourceVersion did not fail")
    except ApiException as e:
        expect(e.status == 410, f"status {e.status}")
    # Recover as the client's docs say: list, then watch from the list's version.
    listed = s.core.list_namespaced_config_map(NS)
    expect("gone" in [c.metadata.name for c in listed.items], "relist misses the object")
    w = watch.Watch()
    s.core.patch_namespaced_config_map("gone", NS, {"data": {"back": "yes"}})
    for ev in w.stream(s.core.list_namespaced_config_map, NS,
                       resource_version=listed.metadata.resource_version, timeout_seconds=5):
        expect((ev["type"], ev["object"].metadata.name) == ("MODIFIED", "gone"), ev["type"])
        w.stop()
        break
    else:
        raise AssertionError("no event after re-watching")


@check
def watch_retries_an_injected_410_once_then_resumes(s):
    # The client retries one in-stream 410 by itself, from its last version.
    rv = s.core.list_namespaced_config_map(NS).metadata.resource_version
    hook('fault {"verbs": ["watch"], "resource": "configmaps", "times": 1, '
         '"fault": {"kind": "expired"}}')
    s.core.create_namespaced_config_map(NS, configmap("after-410"))
    w = watch.Watch()
    got = None
    for ev in w.stream(s.core.list_namespaced_config_map, NS, resource_version=rv):
        got = (ev["type"], ev["object"].metadata.name)
        w.stop()
    expect(got == ("ADDED", "after-410"), got)
    hook("clear-faults")


@check
def watch_stream_survives_the_server_closing_it(s):
    # Without timeout_seconds the client re-watches from its last version when the stream ends.
    rv = s.core.list_namespaced_config_map(NS).metadata.resource_version
    s.core.create_namespaced_config_map(NS, configmap("before-cut", {"cut": "y"}))
    w = watch.Watch()
    seen = []
    for ev in w.stream(s.core.list_namespaced_config_map, NS, label_selector="cut=y",
                       resource_version=rv):
        seen.append((ev["type"], ev["object"].metadata.name))
        if len(seen) == 1:
            hook("drop-watches")
            s.core.create_namespaced_config_map(NS, configmap("after-cut", {"cut": "y"}))
        else:
            w.stop()
    expect(seen == [("ADDED", "before-cut"), ("ADDED", "after-cut")], seen)


@check
def server_side_apply_with_field_manager_and_conflicts(s):
    dyn = dynamic.DynamicClient(s.api)
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    manifest = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "ssa", "namespace": NS, "labels": {"owner": "py"}},
                "data": {"a": "1", "b": "2"}}
    applied = cms.server_side_apply(body=manifest, namespace=NS, field_manager="py-apply")
    expect(dict(applied.data) == {"a": "1", "b": "2"}, applied.data)
    managers = {(m.manager, m.operation) for m in applied.metadata.managedFields}
    expect(("py-apply", "Apply") in managers, managers)
    # Another manager changing a field it does not own: 409, then forced, it takes it over.
    other = {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "ssa", "namespace": NS}, "data": {"a": "X"}}
    try:
        cms.server_side_apply(body=other, namespace=NS, field_manager="intruder")
        raise AssertionError("conflicting apply was accepted")
    except ApiException as e:
        expect(e.status == 409, f"status {e.status}")
    forced = cms.server_side_apply(body=other, namespace=NS, field_manager="intruder",
                                   force_conflicts=True)
    expect(forced.data["a"] == "X", forced.data)
    # Applying again without a field removes it (the manager owned it alone).
    shrunk = dict(manifest, data={"b": "2"})
    after = cms.server_side_apply(body=shrunk, namespace=NS, field_manager="py-apply")
    expect(dict(after.data) == {"a": "X", "b": "2"}, after.data)
    shrunk["metadata"] = {"name": "ssa", "namespace": NS}
    after = cms.server_side_apply(body=shrunk, namespace=NS, field_manager="py-apply")
    expect(not (after.metadata.labels or {}), f"label kept: {after.metadata.labels}")
    # A Deployment applied with only what the manager cares about gets the server's defaults.
    body = {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "applied", "namespace": NS},
            "spec": {"selector": {"matchLabels": {"app": "a"}},
                     "template": {"metadata": {"labels": {"app": "a"}},
                                  "spec": {"containers": [{"name": "a", "image": "busybox"}]}}}}
    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    d = deployments.server_side_apply(body=body, namespace=NS, field_manager="py-apply")
    expect(d.spec.replicas == 1, f"replicas default {d.spec.replicas}")
    expect(s.apps.read_namespaced_deployment("applied", NS).spec.template.spec.dns_policy
           == "ClusterFirst", "pod template not defaulted")


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "blogs.conformance.weir.dev"},
    "spec": {
        "group": "conformance.weir.dev",
        "scope": "Namespaced",
        "names": {"plural": "blogs", "singular": "blog", "kind": "Blog"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "title": {"type": "string"}, "replicas": {"type": "integer"}}},
                "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
            }}},
        }],
    },
}


@check
def custom_objects_api_on_a_crd(s):
    s.ext.create_custom_resource_definition(CRD)
    deadline = time.time() + 10
    while True:
        crd = s.ext.read_custom_resource_definition(CRD["metadata"]["name"])
        conds = {c.type: c.status for c in (crd.status.conditions or [])} if crd.status else {}
        if conds.get("Established") == "True":
            break
        expect(time.time() < deadline, f"CRD never Established: {conds}")
        time.sleep(0.05)
    group, version, plural = "conformance.weir.dev", "v1", "blogs"
    blog = {"apiVersion": f"{group}/{version}", "kind": "Blog",
            "metadata": {"name": "hello", "labels": {"lang": "en"}},
            "spec": {"title": "Hello", "replicas": 1}}
    created = s.custom.create_namespaced_custom_object(group, version, NS, plural, blog)
    expect(created["metadata"]["generation"] == 1, created["metadata"])
    got = s.custom.get_namespaced_custom_object(group, version, NS, plural, "hello")
    expect(got["spec"] == {"title": "Hello", "replicas": 1}, got["spec"])
    listed = s.custom.list_namespaced_custom_object(group, version, NS, plural,
                                                     label_selector="lang=en")
    expect([o["metadata"]["name"] for o in listed["items"]] == ["hello"], listed["items"])
    expect(s.custom.list_cluster_custom_object(group, version, plural,
                                               label_selector="lang=fr")["items"] == [], "fr")
    patched = s.custom.patch_namespaced_custom_object(group, version, NS, plural, "hello",
                                                      {"spec": {"replicas": 2}})
    expect(patched["spec"] == {"title": "Hello", "replicas": 2}, patched["spec"])
    expect(patched["metadata"]["generation"] == 2, patched["metadata"])
    status = s.custom.patch_namespaced_custom_object_status(
        group, version, NS, plural, "hello", {"status": {"ready": True}, "spec": {"replicas": 9}})
    expect(status["status"] == {"ready": True}, status.get("status"))
    expect(status["spec"]["replicas"] == 2, "a status write changed spec")
    expect(status["metadata"]["generation"] == 2, "a status write bumped generation")
    # Schema validation: a string where an integer belongs is 422.
    bad = dict(blog, metadata={"name": "bad"}, spec={"replicas": "two"})
    expect(api_status(lambda: s.custom.create_namespaced_custom_object(
        group, version, NS, plural, bad)) == 422, "schema violation accepted")
    got["spec"]["title"] = "Replaced"
    replaced = s.custom.replace_namespaced_custom_object(group, version, NS, plural, "hello",
                                                         s.custom.get_namespaced_custom_object(
                                                             group, version, NS, plural, "hello")
                                                         | {"spec": got["spec"]})
    expect(replaced["spec"]["title"] == "Replaced", replaced["spec"])
    s.custom.delete_namespaced_custom_object(group, version, NS, plural, "hello")
    expect(api_status(lambda: s.custom.get_namespaced_custom_object(
        group, version, NS, plural, "hello")) == 404, "custom object not deleted")


@check
def namespace_deletion_removes_its_contents(s):
    s.core.delete_namespace(NS)
    deadline = time.time() + 10
    while api_status(lambda: s.core.read_namespace(NS)) != 404:
        expect(time.time() < deadline, "namespace never went away")
        time.sleep(0.05)
    expect(s.core.list_config_map_for_all_namespaces(
        field_selector=f"metadata.namespace={NS}").items == [], "contents survived")


class CheckTimeout(Exception):
    pass


def on_alarm(_signum, _frame):
    raise CheckTimeout(f"no result after {CHECK_SECONDS} s")


CHECK_SECONDS = 15


def main():
    suite = Suite(sys.argv[1])
    signal.signal(signal.SIGALRM, on_alarm)
    passed = failed = 0
    for fn in CHECKS:
        try:
            signal.alarm(CHECK_SECONDS)
            try:
                fn(suite)
            finally:
                signal.alarm(0)
        except Exception as e:  # noqa: BLE001 - every failure is reported by name
            failed += 1
            detail = f"{type(e).__name__}: {e}".replace("\n", " ")[:600]
            print(f"FAIL {fn.__name__}: {detail}", flush=True)
            traceback.print_exc(file=sys.stderr)
        else:
            passed += 1
            print(f"PASS {fn.__name__}", flush=True)
    print(f"{passed} passed, {failed} failed", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
