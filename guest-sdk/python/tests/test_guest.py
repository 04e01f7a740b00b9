"""The component glue against componentize-py's generated bindings, natively.

The bindings are plain Python (`componentize-py bindings`), so the mapping
to WIT types is tested without building a component. They are generated
into target/py-bindings-<contract>-<hash of its WIT> once (a changed contract gets
fresh ones), with componentize-py from PATH or target/venv.
"""

import hashlib
import importlib
import json
import shutil
import subprocess
import sys
import unittest
from pathlib import Path

from weir_reconciler import (
    CONFIG_MAP,
    NAMESPACE,
    Cleanup,
    Kind,
    Outcome,
    PermanentError,
    Reconciler,
    Selection,
    TransientError,
    config_map,
    in_cluster,
    log,
)
from weir_reconciler import log as log_module
from weir_reconciler.build import CONTRACT
from weir_reconciler.guest import export

ROOT = Path(__file__).resolve().parents[3]
WIT = ROOT / "wit" / CONTRACT
WIT_HASH = hashlib.sha256(b"".join(f.read_bytes() for f in sorted(WIT.glob("*.wit")))).hexdigest()[:12]
BINDINGS = ROOT / "target" / f"py-bindings-{CONTRACT}-{WIT_HASH}"


def load_bindings():
    """(wit_world, its types module, Err), generating the bindings if needed."""
    if not (BINDINGS / "wit_world" / "__init__.py").exists():
        tool = shutil.which("componentize-py") or shutil.which("componentize-py", path=str(ROOT / "target" / "venv" / "bin"))
        if tool is None:
            raise RuntimeError("componentize-py not found: run guest-sdk/setup.sh (it creates target/venv)")
        subprocess.run([tool, "-d", str(WIT), "-w", "reconciler", "bindings", str(BINDINGS)], check=True)
    if str(BINDINGS) not in sys.path:
        sys.path.insert(0, str(BINDINGS))
    world = importlib.import_module("wit_world")
    types = importlib.import_module("wit_world.imports.types")
    err = importlib.import_module("componentize_py_types").Err
    return world, types, err


class Plugin(Reconciler):
    name = "glue-test"
    version = "1.2.3"
    parent = Kind("example.dev", "v1", "Thing", "things")
    children = [CONFIG_MAP]
    related = [CONFIG_MAP, NAMESPACE]
    finalizer = "example.dev/cleanup"

    def select(self, parent):
        if parent.spec.get("mode") == "bad-selector":
            return [Selection.by_labels(CONFIG_MAP, {"matchExpressions": [{"key": "k", "operator": "Near"}]})]
        return [
            Selection.by_name(CONFIG_MAP, "theme"),
            Selection.by_labels(
                CONFIG_MAP,
                {"matchLabels": {"b": "2", "a": "1"}, "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["x"]}]},
            ),
            Selection.by_name(NAMESPACE, "default"),
        ]

    def reconcile(self, parent, children):
        mode = parent.spec.get("mode")
        if mode == "related":
            theme = children.related.get(CONFIG_MAP, "theme")
            return Outcome.apply([config_map("c", {"css": theme["data"]["style.css"], "n": str(len(children.related))})])
        log.info(f"mode {mode}")
        if mode == "permanent":
            raise PermanentError("spec is invalid")
        if mode == "transient":
            raise TransientError("not yet")
        if mode == "bug":
            return {}["missing"]
        if mode == "oom":
            raise MemoryError()
        outcome = Outcome.apply([config_map("c", {"k": "ü"})])
        if mode == "status":
            outcome.status({"ok": True}).requeue_after(1.5)
        if mode == "now":
            outcome.requeue_now()
        return outcome

    def finalize(self, parent, children, finalizer):
        if parent.spec.get("mode") == "drain":
            step = Cleanup.apply([config_map("c", {"replicas": "0"})]).status({"phase": "Draining"})
            observed = children.get(CONFIG_MAP, "c")
            return step.finalized() if observed is not None and observed["data"]["replicas"] == "0" else step
        return Cleanup.again_after(2) if parent.spec.get("mode") == "wait" else Cleanup.complete()


class Spread(Reconciler):
    """Places a ConfigMap in each cluster its parent names, and reports what each cluster holds."""

    name = "spread-test"
    parent = Kind("example.dev", "v1", "Thing", "things")
    children = [CONFIG_MAP]
    related = [CONFIG_MAP]

    def select(self, parent):
        return [Selection.by_name(CONFIG_MAP, "settings").in_cluster(c) for c in parent.spec["clusters"]]

    def reconcile(self, parent, children):
        seen = {c: (children.get(CONFIG_MAP, "c", cluster=c) or {}).get("data", {}).get("n") for c in parent.spec["clusters"]}
        settings = {c: (children.related.get(CONFIG_MAP, "settings", cluster=c) or {}).get("data", {}) for c in parent.spec["clusters"]}
        placed = [in_cluster(c, config_map("c", {"n": str(i)})) for i, c in enumerate(parent.spec["clusters"])]
        status = {"here": children.cluster, "seen": seen, "settings": settings, "local": children.get(CONFIG_MAP, "c") is not None}
        return Outcome.apply(placed).status(status)


class ClustersTest(unittest.TestCase):
    """Contract 0.4.0: objects arrive with their clusters, children and selections name theirs."""

    @classmethod
    def setUpClass(cls):
        cls.world, cls.types, cls.err = load_bindings()

    def setUp(self):
        self.world.log = lambda level, message: None
        self.addCleanup(log_module.set_sink, None)
        self.guest = export(Spread(), world=self.world, types=self.types, err=self.err)()
        self.parent = json.dumps({"metadata": {"name": "t", "namespace": "ns"}, "spec": {"clusters": ["member-a", "member-b"]}})

    def test_a_selection_names_the_cluster_it_reads_in(self):
        t = self.types
        self.assertEqual(
            self.guest.select_related(self.parent),
            [t.Selection("v1", "ConfigMap", None, c, t.Selector_Name("settings")) for c in ["member-a", "member-b"]],
        )

    def test_each_object_is_found_in_its_own_cluster_and_each_child_names_its_cluster(self):
        t = self.types
        cm = lambda data: json.dumps(config_map("c", data))  # noqa: E731
        settings = json.dumps(config_map("settings", {"tier": "gold"}))
        request = t.ReconcileRequest(
            self.parent,
            "hub",
            [t.Observed("member-b", cm({"n": "1"})), t.Observed("hub", cm({"n": "hub's own"}))],
            [t.Observed("member-a", settings)],
        )
        response = self.guest.reconcile(request)
        self.assertEqual([c.cluster for c in response.children], ["member-a", "member-b"])
        self.assertEqual([json.loads(c.object)["data"] for c in response.children], [{"n": "0"}, {"n": "1"}])
        status = json.loads(response.status)
        self.assertEqual(status["here"], "hub")
        self.assertEqual(status["seen"], {"member-a": None, "member-b": "1"})
        self.assertEqual(status["settings"], {"member-a": {"tier": "gold"}, "member-b": {}})
        self.assertTrue(status["local"], "a lookup without a cluster reads the parent's")

    def test_a_cleanup_that_acts_places_its_children_too(self):
        class Drain(Spread):
            finalizer = "example.dev/drain"

            def finalize(self, parent, children, finalizer):
                return Cleanup.apply([in_cluster("member-a", config_map("c", {"n": "0"}))])

        t = self.types
        guest = export(Drain(), world=self.world, types=self.types, err=self.err)()
        answer = guest.finalize(t.FinalizeRequest(self.parent, "hub", [], [], "example.dev/drain"))
        self.assertEqual([c.cluster for c in answer.children], ["member-a"])


class GlueTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.world, cls.types, cls.err = load_bindings()

    def setUp(self):
        self.logged = []
        self.world.log = lambda level, message: self.logged.append((level, message))
        self.addCleanup(log_module.set_sink, None)
        self.guest = export(Plugin(), world=self.world, types=self.types, err=self.err)()

    def request(self, mode):
        parent = json.dumps({"apiVersion": "example.dev/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": {"mode": mode}})
        return self.types.ReconcileRequest(parent, "hub", [], [])

    def test_the_class_is_what_componentize_py_looks_for(self):
        cls = export(Plugin(), world=self.world, types=self.types, err=self.err)
        self.assertEqual(cls.__name__, "WitWorld")
        self.assertIn(self.world.WitWorld, cls.__mro__)

    def test_describe_reports_the_class_attributes(self):
        t = self.types
        info = self.guest.describe()
        self.assertEqual((info.name, info.version, info.finalizer, info.crd), ("glue-test", "1.2.3", "example.dev/cleanup", None))
        self.assertEqual(info.parent, t.ResourceKind("example.dev", "v1", "Thing", "things", True))
        self.assertEqual(info.children, [t.ResourceKind("", "v1", "ConfigMap", "configmaps", True)])
        self.assertEqual(
            info.related,
            [t.ResourceKind("", "v1", "ConfigMap", "configmaps", True), t.ResourceKind("", "v1", "Namespace", "namespaces", False)],
        )

    def test_a_plugin_without_related_kinds_declares_none_and_selects_nothing(self):
        class Plain(Reconciler):
            name = "plain"
            parent = Kind("example.dev", "v1", "Thing", "things")

            def reconcile(self, parent, children):
                return Outcome.apply([])

        guest = export(Plain(), world=self.world, types=self.types, err=self.err)()
        self.assertEqual(guest.describe().related, [])
        self.assertEqual(guest.select_related(json.dumps({"metadata": {"name": "t"}})), [])

    def test_select_returns_names_and_label_selectors_in_wit_shape(self):
        t = self.types
        parent = json.dumps({"metadata": {"name": "t", "namespace": "ns"}, "spec": {}})
        self.assertEqual(
            self.guest.select_related(parent),
            [
                t.Selection("v1", "ConfigMap", None, None, t.Selector_Name("theme")),
                t.Selection(
                    "v1",
                    "ConfigMap",
                    None,
                    None,
                    t.Selector_Labels(
                        t.LabelSelector([("a", "1"), ("b", "2")], [t.LabelRequirement("tier", t.SelectorOperator.NOT_IN, ["x"])])
                    ),
                ),
                t.Selection("v1", "Namespace", None, None, t.Selector_Name("default")),
            ],
        )

    def test_an_unknown_selector_operator_is_a_permanent_error(self):
        t = self.types
        with self.assertRaises(self.err) as caught:
            self.guest.select_related(json.dumps({"metadata": {"name": "t"}, "spec": {"mode": "bad-selector"}}))
        self.assertEqual(caught.exception.value.kind, t.ErrorKind.PERMANENT)
        self.assertIn("'Near'", caught.exception.value.message)

    def test_reconcile_finds_the_related_objects_in_children_related(self):
        t = self.types
        parent = json.dumps({"metadata": {"name": "t"}, "spec": {"mode": "related"}})
        theme = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "theme"}, "data": {"style.css": "h1{}"}})
        response = self.guest.reconcile(t.ReconcileRequest(parent, "hub", [], [t.Observed("hub", theme)]))
        self.assertEqual(json.loads(response.children[0].object)["data"], {"css": "h1{}", "n": "1"})

    def test_an_embedded_crd_is_what_describe_reports(self):
        guest = export(Plugin(), world=self.world, types=self.types, err=self.err, crd="kind: CustomResourceDefinition\n")()
        self.assertEqual(guest.describe().crd, "kind: CustomResourceDefinition\n")

    def test_reconcile_returns_children_as_json_and_requeue_as_a_variant(self):
        t = self.types
        response = self.guest.reconcile(self.request("plain"))
        self.assertEqual([json.loads(c.object) for c in response.children], [config_map("c", {"k": "ü"})])
        self.assertEqual([c.cluster for c in response.children], [None], "a child names no cluster unless placed")
        self.assertIsNone(response.status)
        self.assertEqual(response.requeue, t.Requeue_Done())
        response = self.guest.reconcile(self.request("status"))
        self.assertEqual(json.loads(response.status), {"ok": True})
        self.assertEqual(response.requeue, t.Requeue_After(1500))
        self.assertEqual(self.guest.reconcile(self.request("now")).requeue, t.Requeue_Now())

    def test_errors_are_raised_as_err_with_their_kind(self):
        t = self.types
        for mode, kind, text in [("permanent", t.ErrorKind.PERMANENT, "spec is invalid"), ("transient", t.ErrorKind.TRANSIENT, "not yet")]:
            with self.subTest(mode=mode), self.assertRaises(self.err) as caught:
                self.guest.reconcile(self.request(mode))
            self.assertEqual(caught.exception.value, t.ReconcileError(kind, text))

    def test_a_plugin_bug_is_a_transient_error_with_the_traceback_logged(self):
        t = self.types
        with self.assertRaises(self.err) as caught:
            self.guest.reconcile(self.request("bug"))
        self.assertEqual(caught.exception.value.kind, t.ErrorKind.TRANSIENT)
        self.assertIn("KeyError", caught.exception.value.message)
        self.assertTrue(any(level == t.LogLevel.ERROR and "Traceback" in message for level, message in self.logged))

    def test_running_out_of_memory_is_not_turned_into_an_answer(self):
        # Re-raised, so the component traps as a Rust guest would and the host
        # reports its memory limit.
        with self.assertRaises(MemoryError):
            self.guest.reconcile(self.request("oom"))

    def test_logs_go_to_the_host_import(self):
        self.guest.reconcile(self.request("plain"))
        self.assertIn((self.types.LogLevel.INFO, "mode plain"), self.logged)

    def test_finalize_maps_a_cleanup_that_only_waits_or_completes_to_an_answer_that_applies_nothing(self):
        t = self.types
        parent = json.dumps({"metadata": {"name": "t"}, "spec": {"mode": "wait"}})
        self.assertEqual(self.guest.finalize(t.FinalizeRequest(parent, "hub", [], [], "f")), t.FinalizeResponse(None, None, False, t.Requeue_After(2000)))
        parent = json.dumps({"metadata": {"name": "t"}, "spec": {}})
        self.assertEqual(self.guest.finalize(t.FinalizeRequest(parent, "hub", [], [], "f")), t.FinalizeResponse(None, None, True, t.Requeue_Done()))

    def test_finalize_maps_a_cleanup_that_acts_to_its_children_status_and_whether_it_is_done(self):
        t = self.types
        parent = json.dumps({"metadata": {"name": "t"}, "spec": {"mode": "drain"}})
        running = json.dumps(config_map("c", {"replicas": "3"}))
        answer = self.guest.finalize(t.FinalizeRequest(parent, "hub", [t.Observed("hub", running)], [], "f"))
        self.assertEqual([json.loads(c.object) for c in answer.children], [config_map("c", {"replicas": "0"})])
        self.assertEqual(json.loads(answer.status), {"phase": "Draining"})
        self.assertFalse(answer.finalized)
        drained = json.dumps(config_map("c", {"replicas": "0"}))
        self.assertTrue(self.guest.finalize(t.FinalizeRequest(parent, "hub", [t.Observed("hub", drained)], [], "f")).finalized)


if __name__ == "__main__":
    unittest.main()
