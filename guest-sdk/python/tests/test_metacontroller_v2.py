import json
import unittest

from weir_reconciler import CONFIG_MAP, NAMESPACE, Kind, PermanentError, Selection
from weir_reconciler.metacontroller import composite_controller

from .test_metacontroller import Recorder

PROPAGATION = Kind("example.dev", "v1", "Propagation", "propagations", namespaced=False)


def propagation(**spec):
    return {"apiVersion": "example.dev/v1", "kind": "Propagation", "metadata": {"name": "p"}, "spec": spec}


def cm(namespace, name, **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data}


def ns(name, **labels):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def plugin(hooks, hook_version="v2", related=(CONFIG_MAP, NAMESPACE)):
    return composite_controller(
        name="propagator",
        parent=PROPAGATION,
        children=[CONFIG_MAP],
        related=list(related),
        sync=hooks.sync,
        customize=hooks.customize,
        hook_version=hook_version,
    )()


def sync_request(hooks):
    return [r for r in hooks.requests if r[0] == "sync"][0][1]


class HookVersionTest(unittest.TestCase):
    def test_v2_keys_namespaced_objects_by_namespace_and_name_and_cluster_scoped_ones_by_name(self):
        hooks = Recorder()
        children = [cm("team-a", "shared"), cm("team-b", "shared")]
        related = [cm("source", "settings", mode="fast"), ns("team-a")]
        plugin(hooks).handle_reconcile(json.dumps(propagation()), [json.dumps(c) for c in children], [json.dumps(r) for r in related])
        request = sync_request(hooks)
        self.assertEqual(list(request["children"]["ConfigMap.v1"]), ["team-a/shared", "team-b/shared"])
        self.assertEqual(request["related"]["ConfigMap.v1"], {"source/settings": related[0]})
        self.assertEqual(list(request["related"]["Namespace.v1"]), ["team-a"])
        self.assertEqual(request["controller"]["spec"]["hooks"]["sync"], {"version": "v2"})

    def test_v1_keys_a_cluster_scoped_parents_namespaced_objects_by_namespace_and_name_too(self):
        hooks = Recorder()
        plugin(hooks, "v1").handle_reconcile(json.dumps(propagation()), [], [json.dumps(cm("source", "settings"))])
        self.assertEqual(list(sync_request(hooks)["related"]["ConfigMap.v1"]), ["source/settings"])
        self.assertEqual(sync_request(hooks)["controller"]["spec"]["hooks"]["sync"], {"version": "v1"})

    def test_an_unknown_hook_version_is_refused_when_declared(self):
        with self.assertRaises(ValueError):
            plugin(Recorder(), "v3")


class NamespaceTest(unittest.TestCase):
    def test_a_rule_in_another_namespace_selects_there(self):
        hooks = Recorder(related_resources=[{"apiVersion": "v1", "resource": "configmaps", "namespace": "source", "names": ["settings"]}])
        self.assertEqual(
            plugin(hooks).handle_select(json.dumps(propagation())),
            [Selection.by_name(CONFIG_MAP, "settings", namespace="source")],
        )

    def test_a_namespace_selector_reads_the_namespaces_labels_and_keeps_objects_in_matching_ones(self):
        rule = {"apiVersion": "v1", "resource": "configmaps", "labelSelector": {"matchLabels": {"shared": "yes"}}, "namespaceSelector": {"matchLabels": {"team": "a"}}}
        hooks = Recorder(related_resources=[rule])
        self.assertEqual(
            plugin(hooks).handle_select(json.dumps(propagation())),
            [Selection.by_labels(CONFIG_MAP, {"matchLabels": {"shared": "yes"}}), Selection.by_labels(NAMESPACE, {"matchLabels": {"team": "a"}})],
        )
        related = [cm("team-a", "x"), cm("team-b", "x"), ns("team-a", team="a"), ns("team-b", team="b")]
        plugin(hooks).handle_reconcile(json.dumps(propagation()), [], [json.dumps(r) for r in related])
        self.assertEqual(list(sync_request(hooks)["related"]["ConfigMap.v1"]), ["team-a/x"])

    def test_a_namespace_selector_without_namespaces_declared_is_a_plugin_bug_naming_the_fix(self):
        rule = {"apiVersion": "v1", "resource": "configmaps", "namespaceSelector": {}}
        with self.assertRaises(PermanentError) as caught:
            plugin(Recorder(related_resources=[rule]), related=[CONFIG_MAP]).handle_select(json.dumps(propagation()))
        self.assertIn("declare NAMESPACE in related", caught.exception.message)
