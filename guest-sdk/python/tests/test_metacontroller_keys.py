"""How the Metacontroller adapter keys `children` and `related`: Metacontroller's rule, per hook version and parent scope."""

import json
import unittest

from weir_reconciler import CONFIG_MAP, NAMESPACE, Kind
from weir_reconciler.metacontroller import composite_controller, object_key
from weir_reconciler.objects import Object

from .test_metacontroller import Recorder

NAMESPACED = Kind("example.dev", "v1", "Thing", "things")
CLUSTER_SCOPED = Kind("example.dev", "v1", "Propagation", "propagations", namespaced=False)


def parent_of(kind, namespace=None):
    metadata = {"name": "p", **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "example.dev/v1", "kind": kind.kind, "metadata": metadata, "spec": {}}


def cm(namespace, name):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": {"at": f"{namespace}/{name}"}}


def ns(name):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def requests(parent_kind, hook_version, parent, children, related, sync_response=None):
    """The sync and finalize requests a plugin of `hook_version` hands its hooks for `parent`."""
    hooks = Recorder(sync_response=sync_response, finalize_response={"finalized": True})
    plugin = composite_controller(
        name="keys",
        parent=parent_kind,
        children=[CONFIG_MAP],
        related=[CONFIG_MAP, NAMESPACE],
        sync=hooks.sync,
        customize=hooks.customize,
        finalize=hooks.finalize,
        hook_version=hook_version,
    )()
    args = json.dumps(parent), [json.dumps(c) for c in children]
    outcome = plugin.handle_reconcile(*args, [json.dumps(r) for r in related])
    plugin.handle_finalize(*args, "metacontroller.weir.dev/keys", [json.dumps(r) for r in related])
    sync, finalize = ([r for h, r in hooks.requests if h == hook][0] for hook in ("sync", "finalize"))
    return sync, finalize, outcome


class NamespacedParentTest(unittest.TestCase):
    def test_v1_keys_objects_of_the_parents_namespace_by_name_and_others_by_namespace_and_name(self):
        sync, finalize, _ = requests(
            NAMESPACED, "v1", parent_of(NAMESPACED, "team"), [cm("team", "copy")], [cm("team", "local"), cm("shared", "source"), ns("team")]
        )
        for request in (sync, finalize):
            self.assertEqual(request["children"], {"ConfigMap.v1": {"copy": cm("team", "copy")}})
            self.assertEqual(
                request["related"],
                {"ConfigMap.v1": {"local": cm("team", "local"), "shared/source": cm("shared", "source")}, "Namespace.v1": {"team": ns("team")}},
            )

    def test_v2_keys_every_namespaced_object_by_namespace_and_name_and_a_cluster_scoped_one_by_name(self):
        sync, finalize, _ = requests(
            NAMESPACED, "v2", parent_of(NAMESPACED, "team"), [cm("team", "copy")], [cm("team", "local"), cm("shared", "source"), ns("team")]
        )
        for request in (sync, finalize):
            self.assertEqual(request["children"], {"ConfigMap.v1": {"team/copy": cm("team", "copy")}})
            self.assertEqual(
                request["related"],
                {"ConfigMap.v1": {"team/local": cm("team", "local"), "shared/source": cm("shared", "source")}, "Namespace.v1": {"team": ns("team")}},
            )


class ClusterScopedParentTest(unittest.TestCase):
    def test_v1_and_v2_key_namespaced_objects_by_namespace_and_name_and_cluster_scoped_ones_by_name(self):
        children = [cm("team-a", "settings"), cm("team-b", "settings")]
        related = [cm("original", "settings"), ns("team-a")]
        for version in ("v1", "v2"):
            with self.subTest(version=version):
                sync, finalize, _ = requests(CLUSTER_SCOPED, version, parent_of(CLUSTER_SCOPED), children, related)
                for request in (sync, finalize):
                    self.assertEqual(request["children"], {"ConfigMap.v1": {"team-a/settings": children[0], "team-b/settings": children[1]}})
                    self.assertEqual(request["related"], {"ConfigMap.v1": {"original/settings": related[0]}, "Namespace.v1": {"team-a": ns("team-a")}})

    def test_a_v1_hook_written_for_metacontroller_finds_its_source_and_writes_copies_by_namespace(self):
        # Metacontroller's ConfigMap propagation example, in short: v1 hooks, a cluster-scoped parent.
        def sync(request):
            source = request["related"]["ConfigMap.v1"]["original/settings"]
            seen = sorted(request["children"]["ConfigMap.v1"])
            copies = [{**cm(target, "settings"), "data": source["data"]} for target in ("team-a", "team-b")]
            return {"children": copies, "status": {"seen": seen}}

        hooks = Recorder()
        hooks.sync = sync
        plugin = composite_controller(name="propagation", parent=CLUSTER_SCOPED, children=[CONFIG_MAP], related=[CONFIG_MAP], sync=hooks.sync, customize=hooks.customize)()
        outcome = plugin.handle_reconcile(json.dumps(parent_of(CLUSTER_SCOPED)), [json.dumps(cm("team-a", "settings"))], [json.dumps(cm("original", "settings"))])
        # Desired children are read back from their own metadata: each keeps the namespace it names.
        self.assertEqual([(c["metadata"]["namespace"], c["data"]) for c in outcome.children], [("team-a", {"at": "original/settings"}), ("team-b", {"at": "original/settings"})])
        self.assertEqual(outcome.desired_status, {"seen": ["team-a/settings"]})


class ObjectKeyTest(unittest.TestCase):
    def test_the_rule_for_each_scope_and_version(self):
        namespaced, cluster_scoped = Object(cm("a", "x")), Object(ns("x"))
        cases = [
            # (object, parent's namespace, hook version, key)
            (namespaced, "a", "v1", "x"),
            (namespaced, "b", "v1", "a/x"),
            (namespaced, None, "v1", "a/x"),
            (cluster_scoped, "a", "v1", "x"),
            (cluster_scoped, None, "v1", "x"),
            (namespaced, "a", "v2", "a/x"),
            (namespaced, "b", "v2", "a/x"),
            (namespaced, None, "v2", "a/x"),
            (cluster_scoped, "a", "v2", "x"),
            (cluster_scoped, None, "v2", "x"),
        ]
        for obj, parent_namespace, version, key in cases:
            with self.subTest(object=obj.namespace, parent=parent_namespace, version=version):
                self.assertEqual(object_key(obj, parent_namespace, version), key)
