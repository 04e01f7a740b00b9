"""`async def` hooks: their coroutines are run to their answers, which are checked like plain ones."""

import asyncio
import json
import unittest

from weir_reconciler import CONFIG_MAP, Cleanup, Kind, Outcome, PermanentError, Reconciler, Selection, config_map
from weir_reconciler.metacontroller import composite_controller

PARENT = Kind("example.dev", "v1", "Thing", "things")


def thing(**spec):
    return json.dumps({"apiVersion": "example.dev/v1", "kind": "Thing", "metadata": {"name": "t", "namespace": "ns"}, "spec": spec})


async def later(value):
    """A value from another coroutine, after giving up the turn once."""
    await asyncio.sleep(0)
    return value


class Later(Reconciler):
    """Every hook async; `spec.answer` picks a wrong answer."""

    name = "later"
    parent = PARENT
    children = [CONFIG_MAP]
    related = [CONFIG_MAP]
    finalizer = "example.dev/cleanup"

    async def select(self, parent):
        if parent.spec.get("answer") == "wrong":
            return await later([{"name": "theme"}])
        return await later([Selection.by_name(CONFIG_MAP, "theme")])

    async def reconcile(self, parent, children):
        answer = parent.spec.get("answer")
        if answer == "wrong":
            return {"children": []}
        if answer == "nothing":
            return None
        if answer == "refuse":
            raise PermanentError("spec.answer is not allowed")
        if answer == "timer":
            await asyncio.sleep(1)
        text = await later("later")
        return Outcome.apply([config_map(parent.name, {"text": text})]).status({"ready": True})

    async def finalize(self, parent, children, finalizer):
        if parent.spec.get("answer") == "wait":
            return await later(Cleanup.again_after(3))
        return Cleanup.complete()


class AsyncHookTest(unittest.TestCase):
    def test_an_async_reconcile_is_run_to_its_outcome(self):
        outcome = Later().handle_reconcile(thing(), [])
        self.assertEqual(outcome.children, [config_map("t", {"text": "later"})])
        self.assertEqual(outcome.desired_status, {"ready": True})

    def test_an_async_reconcile_returning_something_else_is_a_type_error_naming_its_coroutine(self):
        with self.assertRaises(TypeError) as caught:
            Later().handle_reconcile(thing(answer="wrong"), [])
        self.assertEqual(str(caught.exception), "reconcile()'s coroutine must return an Outcome, not dict")
        with self.assertRaisesRegex(TypeError, "must return an Outcome, not NoneType"):
            Later().handle_reconcile(thing(answer="nothing"), [])

    def test_an_error_raised_by_an_async_reconcile_is_raised_as_it_is(self):
        with self.assertRaises(PermanentError) as caught:
            Later().handle_reconcile(thing(answer="refuse"), [])
        self.assertEqual(caught.exception.message, "spec.answer is not allowed")

    def test_awaiting_what_needs_an_event_loop_is_refused_loudly(self):
        with self.assertRaises(TypeError) as caught:
            Later().handle_reconcile(thing(answer="timer"), [])
        self.assertIn("reconcile() awaited something that needs an event loop", str(caught.exception))

    def test_an_async_select_and_finalize_are_run_and_checked(self):
        self.assertEqual(Later().handle_select(thing()), [Selection.by_name(CONFIG_MAP, "theme")])
        with self.assertRaisesRegex(TypeError, r"select\(\)'s coroutine must return Selections, not dict"):
            Later().handle_select(thing(answer="wrong"))
        self.assertEqual(Later().handle_finalize(thing(answer="wait"), [], "f").again_after_ms, 3000)
        self.assertTrue(Later().handle_finalize(thing(), [], "f").is_complete)


async def customize(request):
    return {"relatedResources": [{"apiVersion": "v1", "resource": "configmaps", "names": [request["parent"]["spec"].get("theme", "theme")]}]}


async def sync(request):
    if request["parent"]["spec"].get("answer") == "list":
        return await later([])
    theme = request["related"]["ConfigMap.v1"].get(request["parent"]["spec"].get("theme", "theme"))
    css = (theme or {}).get("data", {}).get("css", "none")
    return {"children": [config_map(f"{request['parent']['metadata']['name']}-page", {"css": css})], "status": {"pages": 1}}


async def finalize(request):
    left = len(request["children"]["ConfigMap.v1"])
    return {"finalized": False, "resyncAfterSeconds": 1} if left else {"finalized": True}


def metacontroller():
    return composite_controller(
        name="async-things", parent=PARENT, children=[CONFIG_MAP], related=[CONFIG_MAP], sync=sync, customize=customize, finalize=finalize
    )()


class AsyncMetacontrollerHookTest(unittest.TestCase):
    def test_async_customize_sync_and_finalize_hooks_are_run_to_their_responses(self):
        plugin = metacontroller()
        self.assertEqual(plugin.handle_select(thing(theme="dark")), [Selection.by_name(CONFIG_MAP, "dark")])
        dark = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dark", "namespace": "ns"}, "data": {"css": "body{}"}}
        outcome = plugin.handle_reconcile(thing(theme="dark"), [], [json.dumps(dark)])
        self.assertEqual(outcome.children, [config_map("t-page", {"css": "body{}"})])
        self.assertEqual(outcome.desired_status, {"pages": 1})
        page = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "t-page", "namespace": "ns"}, "data": {}}
        self.assertEqual(plugin.handle_finalize(thing(), [json.dumps(page)], "f").again_after_ms, 1000)
        self.assertTrue(plugin.handle_finalize(thing(), [], "f").is_complete)

    def test_an_async_sync_hook_returning_something_other_than_a_response_is_a_type_error(self):
        with self.assertRaisesRegex(TypeError, "the sync hook must return a dict, not list"):
            metacontroller().handle_reconcile(thing(answer="list"), [])


if __name__ == "__main__":
    unittest.main()
