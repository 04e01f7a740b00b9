"""Object accessors, child lookup and the manifest builders."""

import unittest

from weir_reconciler import CONFIG_MAP, DEPLOYMENT, Children, Kind, Object, condition, config_map, container, deployment, service


class KindTest(unittest.TestCase):
    def test_api_version_omits_the_empty_core_group(self):
        self.assertEqual(CONFIG_MAP.api_version, "v1")
        self.assertEqual(DEPLOYMENT.api_version, "apps/v1")

    def test_matches_compares_api_version_and_kind(self):
        blog = Kind("weir.dev", "v1alpha1", "Blog", "blogs")
        self.assertTrue(blog.matches({"apiVersion": "weir.dev/v1alpha1", "kind": "Blog"}))
        self.assertFalse(blog.matches({"apiVersion": "weir.dev/v1", "kind": "Blog"}))
        self.assertFalse(blog.matches({"apiVersion": "weir.dev/v1alpha1", "kind": "Post"}))


class ObjectTest(unittest.TestCase):
    def setUp(self):
        self.obj = Object(
            {
                "apiVersion": "weir.dev/v1alpha1",
                "kind": "Blog",
                "metadata": {"name": "b", "namespace": "ns", "uid": "u-1", "generation": 3, "labels": {"a": "1"}},
                "spec": {"title": "T"},
            }
        )

    def test_accessors_read_metadata_and_spec(self):
        o = self.obj
        self.assertEqual((o.name, o.namespace, o.uid, o.generation), ("b", "ns", "u-1", 3))
        self.assertEqual(o.labels, {"a": "1"})
        self.assertEqual(o.spec, {"title": "T"})
        self.assertFalse(o.deleting)

    def test_missing_fields_read_as_empty_not_errors(self):
        o = Object({})
        self.assertIsNone(o.name)
        self.assertEqual(o.annotations, {})
        self.assertEqual(o.status, {})

    def test_path_walks_nested_fields_and_falls_back(self):
        self.assertEqual(self.obj.path("spec.title"), "T")
        self.assertEqual(self.obj.path("status.readyReplicas", 0), 0)
        self.assertEqual(self.obj.path("spec.title.deeper", "x"), "x")

    def test_an_object_is_still_a_dict(self):
        self.assertIsInstance(self.obj, dict)
        self.assertEqual(self.obj["kind"], "Blog")


class ChildrenTest(unittest.TestCase):
    def test_get_finds_a_child_by_kind_and_name(self):
        cm = config_map("b", {"k": "v"})
        dep = deployment("b", replicas=1, selector={"app": "b"}, containers=[container("web", "nginx")])
        children = Children([cm, dep])
        self.assertEqual(children.get(DEPLOYMENT, "b")["spec"]["replicas"], 1)
        self.assertEqual(children.get(CONFIG_MAP, "b").name, "b")
        self.assertIsNone(children.get(CONFIG_MAP, "other"))
        self.assertEqual(len(children.of_kind(DEPLOYMENT)), 1)
        self.assertEqual(len(children), 2)


class BuilderTest(unittest.TestCase):
    def test_deployment_selects_its_pods_and_omits_empty_parts(self):
        d = deployment(
            "web",
            replicas=2,
            selector={"app": "web"},
            pod_labels={"tier": "front"},
            pod_annotations={"h": "1"},
            containers=[container("c", "img", ports=[{"containerPort": 80}])],
        )
        self.assertEqual(d["apiVersion"], "apps/v1")
        self.assertEqual(d["metadata"], {"name": "web"})
        self.assertEqual(d["spec"]["selector"], {"matchLabels": {"app": "web"}})
        self.assertEqual(d["spec"]["template"]["metadata"], {"labels": {"app": "web", "tier": "front"}, "annotations": {"h": "1"}})
        self.assertEqual(d["spec"]["template"]["spec"], {"containers": [{"name": "c", "image": "img", "ports": [{"containerPort": 80}]}]})

    def test_service_and_config_map_carry_labels(self):
        s = service("web", selector={"app": "web"}, ports=[{"port": 80}], labels={"app": "web"}, type="ClusterIP")
        self.assertEqual(s["metadata"], {"name": "web", "labels": {"app": "web"}})
        self.assertEqual(s["spec"], {"selector": {"app": "web"}, "ports": [{"port": 80}], "type": "ClusterIP"})
        cm = config_map("page", {"index.html": "<h1>x</h1>"}, annotations={"a": "b"})
        self.assertEqual(cm, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "page", "annotations": {"a": "b"}}, "data": {"index.html": "<h1>x</h1>"}})

    def test_builders_copy_their_inputs(self):
        labels = {"app": "x"}
        s = service("x", selector=labels, ports=[], labels=labels)
        labels["app"] = "changed"
        self.assertEqual(s["spec"]["selector"], {"app": "x"})

    def test_condition_states_true_or_false_without_a_clock(self):
        self.assertEqual(condition("Ready", True, "Available", "2/2 ready"), {"type": "Ready", "status": "True", "reason": "Available", "message": "2/2 ready"})
        self.assertEqual(condition("Ready", False, "Progressing", "0/2")["status"], "False")


if __name__ == "__main__":
    unittest.main()
