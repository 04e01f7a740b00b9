import json
import unittest

from weir_reconciler import CONFIG_MAP, DEPLOYMENT, NAMESPACE, Kind, PermanentError, Selection
from weir_reconciler.metacontroller import FINALIZE_RETRY_SECONDS, composite_controller

PARENT = Kind("example.dev", "v1", "Thing", "things")


def thing(**spec):
    return {"apiVersion": "example.dev/v1", "kind": "Thing", "metadata": {"name": "t", "namespace": "ns"}, "spec": spec}


def cm(name, labels=None, **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns", "labels": labels or {}}, "data": data}


class Recorder:
    """Webhook functions as Metacontroller calls them, recording each request."""

    def __init__(self, sync_response=None, finalize_response=None, related_resources=()):
        self.requests = []
        self.sync_response = sync_response if sync_response is not None else {"children": [], "status": None}
        self.finalize_response = finalize_response
        self.related_resources = list(related_resources)

    def sync(self, request):
        self.requests.append(("sync", json.loads(json.dumps(request))))
        return self.sync_response

    def customize(self, request):
        self.requests.append(("customize", json.loads(json.dumps(request))))
        return {"relatedResources": self.related_resources}

    def finalize(self, request):
        self.requests.append(("finalize", json.loads(json.dumps(request))))
        return self.finalize_response


def plugin(hooks, **extra):
    return composite_controller(
        name="thing-controller",
        parent=PARENT,
        children=[CONFIG_MAP, DEPLOYMENT],
        related=[CONFIG_MAP, NAMESPACE],
        sync=hooks.sync,
        customize=hooks.customize,
        **extra,
    )()


class SyncTest(unittest.TestCase):
    def test_the_sync_request_has_metacontrollers_shape_with_every_declared_kind(self):
        hooks = Recorder()
        observed = [cm("t-page", text="x")]
        plugin(hooks).handle_reconcile(json.dumps(thing(a=1)), [json.dumps(o) for o in observed], [json.dumps(cm("theme", css="y"))])
        (_, request) = [r for r in hooks.requests if r[0] == "sync"][0]
        self.assertEqual(request["parent"], thing(a=1))
        self.assertEqual(request["children"], {"ConfigMap.v1": {"t-page": observed[0]}, "Deployment.apps/v1": {}})
        self.assertEqual(request["related"], {"ConfigMap.v1": {"theme": cm("theme", css="y")}, "Namespace.v1": {}})
        self.assertIs(request["finalizing"], False)
        controller = request["controller"]
        self.assertEqual((controller["kind"], controller["metadata"]["name"]), ("CompositeController", "thing-controller"))
        self.assertEqual(controller["spec"]["parentResource"], {"apiVersion": "example.dev/v1", "resource": "things"})
        self.assertEqual(
            controller["spec"]["childResources"],
            [{"apiVersion": "v1", "resource": "configmaps"}, {"apiVersion": "apps/v1", "resource": "deployments"}],
        )

    def test_objects_placed_in_the_parents_cluster_reach_the_hooks_under_the_same_keys(self):
        # Contract 0.4.0 hands every object with its cluster; the hooks' maps read the parent's.
        hooks = Recorder()
        page, theme = cm("t-page", text="x"), cm("theme", css="y")
        plugin(hooks).handle_reconcile(json.dumps(thing(a=1)), [("local", json.dumps(page))], [("local", json.dumps(theme))], "local")
        (_, request) = [r for r in hooks.requests if r[0] == "sync"][0]
        self.assertEqual(request["children"], {"ConfigMap.v1": {"t-page": page}, "Deployment.apps/v1": {}})
        self.assertEqual(request["related"], {"ConfigMap.v1": {"theme": theme}, "Namespace.v1": {}})

    def test_the_response_becomes_children_status_and_requeue(self):
        hooks = Recorder({"children": [cm("t-page", text="x")], "status": {"pages": 1}, "resyncAfterSeconds": 1.5})
        outcome = plugin(hooks).handle_reconcile(json.dumps(thing()), [])
        self.assertEqual(outcome.children, [cm("t-page", text="x")])
        self.assertEqual((outcome.desired_status, outcome.requeue), ({"pages": 1}, 1500))

    def test_no_status_and_no_resync_leave_the_status_alone_and_wait_for_a_change(self):
        outcome = plugin(Recorder({"children": []})).handle_reconcile(json.dumps(thing()), [])
        self.assertEqual((outcome.desired_status, outcome.requeue), (None, "done"))

    def test_a_response_of_the_wrong_shape_is_a_plugin_bug(self):
        for response in ([], {"children": {"a": 1}}, {"resyncAfterSeconds": -1}):
            with self.subTest(response=response), self.assertRaises(TypeError):
                hooks = Recorder()
                hooks.sync_response = response
                plugin(hooks).handle_reconcile(json.dumps(thing()), [])


class CustomizeTest(unittest.TestCase):
    def test_related_resources_become_selections_by_name_and_by_labels(self):
        hooks = Recorder(
            related_resources=[
                {"apiVersion": "v1", "resource": "configmaps", "names": ["a", "b"]},
                {"apiVersion": "v1", "resource": "configmaps", "labelSelector": {"matchLabels": {"x": "y"}}},
                {"apiVersion": "v1", "resource": "namespaces"},
            ]
        )
        self.assertEqual(
            plugin(hooks).handle_select(json.dumps(thing())),
            [
                Selection.by_name(CONFIG_MAP, "a"),
                Selection.by_name(CONFIG_MAP, "b"),
                Selection.by_labels(CONFIG_MAP, {"matchLabels": {"x": "y"}}),
                Selection.by_labels(NAMESPACE, {}),
            ],
        )
        self.assertEqual(hooks.requests[0][1]["parent"], thing())

    def test_a_resource_not_declared_related_is_refused_naming_it(self):
        hooks = Recorder(related_resources=[{"apiVersion": "v1", "resource": "secrets", "names": ["s"]}])
        with self.assertRaises(PermanentError) as caught:
            plugin(hooks).handle_select(json.dumps(thing()))
        self.assertIn("v1 secrets is not a declared related kind", caught.exception.message)

    def test_without_a_customize_hook_nothing_is_selected(self):
        hooks = Recorder()
        bare = composite_controller(name="x", parent=PARENT, sync=hooks.sync)()
        self.assertEqual(bare.handle_select(json.dumps(thing())), [])
        self.assertIsNone(bare.finalizer)

    def test_names_with_a_label_selector_read_only_the_named_objects_that_match(self):
        hooks = Recorder(related_resources=[{"apiVersion": "v1", "resource": "configmaps", "names": ["a", "b"], "labelSelector": {"matchLabels": {"x": "y"}}}])
        related = [cm("a", {"x": "y"}), cm("b", {"x": "z"})]
        plugin(hooks).handle_reconcile(json.dumps(thing()), [], [json.dumps(o) for o in related])
        (_, request) = [r for r in hooks.requests if r[0] == "sync"][0]
        self.assertEqual(list(request["related"]["ConfigMap.v1"]), ["a"])


class FinalizeTest(unittest.TestCase):
    def test_a_finalize_hook_declares_a_finalizer_and_sees_finalizing_true(self):
        hooks = Recorder(finalize_response={"finalized": True})
        p = plugin(hooks, finalize=hooks.finalize)
        self.assertEqual(p.finalizer, "metacontroller.weir.dev/thing-controller")
        self.assertTrue(p.handle_finalize(json.dumps(thing()), [], p.finalizer).is_complete)
        self.assertIs([r for r in hooks.requests if r[0] == "finalize"][0][1]["finalizing"], True)

    def test_a_finalize_responses_children_and_status_are_held_while_the_finalizer_is_until_finalized(self):
        scaled = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "pods"}, "data": {"replicas": "0"}}
        hooks = Recorder(finalize_response={"children": [scaled], "status": {"phase": "ScalingDown"}, "finalized": False})
        p = plugin(hooks, finalize=hooks.finalize)
        step = p.handle_finalize(json.dumps(thing()), [], p.finalizer)
        self.assertEqual((step.children, step.desired_status, step.is_complete), ([scaled], {"phase": "ScalingDown"}, False))
        self.assertEqual(step.again_after_ms, FINALIZE_RETRY_SECONDS * 1000)
        hooks.finalize_response = {"children": [scaled], "finalized": True}
        last = p.handle_finalize(json.dumps(thing()), [], p.finalizer)
        self.assertTrue(last.is_complete)
        self.assertEqual(last.children, [scaled])
        hooks.finalize_response = {"finalized": True}
        self.assertIsNone(p.handle_finalize(json.dumps(thing()), [], p.finalizer).children, "no children: left as they are")

    def test_not_finalized_asks_again_after_the_resync_or_the_default(self):
        hooks = Recorder(finalize_response={"finalized": False, "resyncAfterSeconds": 2})
        p = plugin(hooks, finalize=hooks.finalize)
        self.assertEqual(p.handle_finalize(json.dumps(thing()), [], p.finalizer).again_after_ms, 2000)
        hooks.finalize_response = {}
        self.assertEqual(p.handle_finalize(json.dumps(thing()), [], p.finalizer).again_after_ms, FINALIZE_RETRY_SECONDS * 1000)


if __name__ == "__main__":
    unittest.main()
