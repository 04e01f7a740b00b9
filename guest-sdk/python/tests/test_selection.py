import json
import unittest

from weir_reconciler import CONFIG_MAP, NAMESPACE, Kind, LabelSelector, Outcome, PermanentError, Reconciler, Selection


class LabelSelectorTest(unittest.TestCase):
    def test_match_labels_and_every_operator_hold_together(self):
        selector = LabelSelector.parse(
            {
                "matchLabels": {"app": "blog"},
                "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["web", "api"]},
                    {"key": "env", "operator": "NotIn", "values": ["dev"]},
                    {"key": "owner", "operator": "Exists"},
                    {"key": "legacy", "operator": "DoesNotExist"},
                ],
            }
        )
        base = {"app": "blog", "tier": "web", "owner": "me"}
        self.assertTrue(selector.matches(base))
        self.assertTrue(selector.matches({**base, "env": "prod"}))
        self.assertFalse(selector.matches({**base, "env": "dev"}))
        self.assertFalse(selector.matches({**base, "app": "shop"}))
        self.assertFalse(selector.matches({**base, "tier": "db"}))
        self.assertFalse(selector.matches({k: v for k, v in base.items() if k != "owner"}))
        self.assertFalse(selector.matches({**base, "legacy": "yes"}))

    def test_an_empty_selector_selects_everything(self):
        self.assertTrue(LabelSelector.parse({}).matches({}))
        self.assertTrue(LabelSelector.parse(None).matches({"a": "b"}))

    def test_a_malformed_selector_is_a_permanent_error_naming_the_field(self):
        for bad, text in [
            ({"matchLabels": {"a": 1}}, "matchLabels"),
            ({"matchExpressions": [{"key": "a", "operator": "Near", "values": ["x"]}]}, "matchExpressions[0]: operator 'Near'"),
            ({"matchExpressions": [{"key": "a", "operator": "In", "values": "x"}]}, "values must be a list of strings"),
            ({"matchExpressions": [{"operator": "Exists"}]}, "a string key"),
            ("app=blog", "expected an object"),
        ]:
            with self.subTest(bad=bad), self.assertRaises(PermanentError) as caught:
                LabelSelector.parse(bad)
            self.assertIn(text, caught.exception.message)


    def test_what_only_kubernetes_refuses_is_left_to_the_host(self):
        selector = LabelSelector.parse({"matchExpressions": [{"key": "a", "operator": "In"}, {"key": "b", "operator": "Exists", "values": ["x"]}]})
        self.assertEqual([r.values for r in selector.match_expressions], [(), ("x",)])


class SelectionTest(unittest.TestCase):
    def test_builders_name_the_kind_by_api_version_and_kind(self):
        self.assertEqual(Selection.by_name(CONFIG_MAP, "theme"), Selection("v1", "ConfigMap", name="theme"))
        self.assertEqual(Selection.by_name(NAMESPACE, "default").kind, "Namespace")
        matching = Selection.matching(Kind("apps", "v1", "Deployment", "deployments"), {"b": "2", "a": "1"}, namespace="ns")
        self.assertEqual((matching.api_version, matching.namespace), ("apps/v1", "ns"))
        self.assertEqual(matching.labels.match_labels, (("a", "1"), ("b", "2")))

    def test_a_selection_is_by_name_or_by_labels_never_both(self):
        with self.assertRaises(ValueError):
            Selection("v1", "ConfigMap")
        with self.assertRaises(ValueError):
            Selection("v1", "ConfigMap", name="a", labels=LabelSelector())


class Themed(Reconciler):
    name = "themed"
    parent = Kind("example.dev", "v1", "Thing", "things")
    related = [CONFIG_MAP]

    def select(self, parent):
        return [Selection.by_name(CONFIG_MAP, parent.spec["theme"])] if "theme" in parent.spec else []

    def reconcile(self, parent, children):
        theme = children.related.get(CONFIG_MAP, parent.spec.get("theme", ""))
        return Outcome.apply([]).status({"theme": None if theme is None else theme["data"]})


class ReconcilerRelatedTest(unittest.TestCase):
    parent = json.dumps({"metadata": {"name": "t"}, "spec": {"theme": "dark"}})

    def test_handle_select_decodes_the_parent_and_returns_its_selections(self):
        self.assertEqual(Themed().handle_select(self.parent), [Selection.by_name(CONFIG_MAP, "dark")])
        self.assertEqual(Themed().handle_select(json.dumps({"metadata": {"name": "t"}})), [])

    def test_handle_select_refuses_what_is_not_a_selection(self):
        class Wrong(Themed):
            def select(self, parent):
                return [("v1", "ConfigMap", "dark")]

        with self.assertRaises(TypeError):
            Wrong().handle_select(self.parent)

    def test_related_objects_arrive_beside_the_children_and_apart_from_them(self):
        dark = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dark"}, "data": {"style.css": "body{}"}}
        outcome = Themed().handle_reconcile(self.parent, [], [json.dumps(dark)])
        self.assertEqual(outcome.desired_status, {"theme": {"style.css": "body{}"}})
        outcome = Themed().handle_reconcile(self.parent, [json.dumps(dark)])
        self.assertEqual(outcome.desired_status, {"theme": None}, "a child is not a related object")

    def test_an_undecodable_related_object_is_a_permanent_error(self):
        with self.assertRaises(PermanentError) as caught:
            Themed().handle_reconcile(self.parent, [], ["[1]"])
        self.assertIn("related object 0", caught.exception.message)

    def test_a_plugin_that_declares_nothing_related_selects_nothing(self):
        class Plain(Reconciler):
            name = "plain"
            parent = Kind("example.dev", "v1", "Thing", "things")

        self.assertEqual(Plain().handle_select(self.parent), [])
        self.assertEqual(Plain.related, ())


if __name__ == "__main__":
    unittest.main()
