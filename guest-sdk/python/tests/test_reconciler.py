"""The JSON-level entry points of `Reconciler`, as the host drives them."""

import json
import unittest

from weir_reconciler import CONFIG_MAP, Cleanup, Kind, Outcome, PermanentError, Reconciler, config_map


class Echo(Reconciler):
    """Writes the parent's spec.text into a ConfigMap; counts its children in the status."""

    name = "echo"
    parent = Kind("example.dev", "v1", "Echo", "echoes")
    children = [CONFIG_MAP]

    def reconcile(self, parent, children):
        if "text" not in parent.spec:
            raise PermanentError("spec.text is required")
        return Outcome.apply([config_map(parent.name, {"text": parent.spec["text"]})]).status({"seen": len(children)})


class Broken(Reconciler):
    name = "broken"
    parent = Echo.parent

    def reconcile(self, parent, children):
        return {"children": []}


def echo(name, text):
    return json.dumps({"apiVersion": "example.dev/v1", "kind": "Echo", "metadata": {"name": name}, "spec": {"text": text}})


class HandleReconcileTest(unittest.TestCase):
    def test_decodes_parent_and_children_and_runs_reconcile(self):
        child = json.dumps(config_map("e", {"text": "old"}))
        outcome = Echo().handle_reconcile(echo("e", "new"), [child])
        self.assertEqual(outcome.children, [config_map("e", {"text": "new"})])
        self.assertEqual(outcome.desired_status, {"seen": 1})

    def test_undecodable_parent_is_a_permanent_error(self):
        for bad in ("{not json", "[1, 2]", '"text"'):
            with self.subTest(bad=bad), self.assertRaises(PermanentError) as caught:
                Echo().handle_reconcile(bad, [])
            self.assertIn("undecodable request", caught.exception.message)

    def test_undecodable_child_is_a_permanent_error(self):
        with self.assertRaises(PermanentError) as caught:
            Echo().handle_reconcile(echo("e", "x"), ["{}", "nope"])
        self.assertIn("undecodable request", caught.exception.message)

    def test_a_reconcile_returning_something_else_is_a_type_error(self):
        with self.assertRaises(TypeError) as caught:
            Broken().handle_reconcile(echo("e", "x"), [])
        self.assertIn("must return an Outcome", str(caught.exception))

    def test_finalize_defaults_to_complete(self):
        cleanup = Echo().handle_finalize(echo("e", "x"), [], "example.dev/cleanup")
        self.assertIsInstance(cleanup, Cleanup)
        self.assertTrue(cleanup.is_complete)


if __name__ == "__main__":
    unittest.main()
