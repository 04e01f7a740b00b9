"""ConfigBundle's fixtures, natively (`weir test` runs them against the component)."""

import unittest
from pathlib import Path

import yaml

from plugin import ConfigBundle
from weir_reconciler import fixtures

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


class ConfigBundleFixtures(unittest.TestCase):
    maxDiff = None

    def test_every_fixture(self):
        paths = sorted(FIXTURES.glob("*.yaml"))
        self.assertTrue(paths, f"no fixtures in {FIXTURES}")
        for path in paths:
            with self.subTest(fixture=path.name):
                fixtures.check(self, ConfigBundle(), yaml.safe_load(path.read_text()))

    def test_the_hooks_are_plain_functions_of_metacontrollers_request(self):
        # What Metacontroller would POST to the sync webhook: the function needs nothing of Weir.
        from hooks import sync

        request = {
            "controller": {},
            "parent": {"metadata": {"name": "b"}, "spec": {"sources": ["s"]}},
            "children": {"ConfigMap.v1": {}},
            "related": {"ConfigMap.v1": {"s": {"data": {"k": "v"}}}},
            "finalizing": False,
        }
        response = sync(request)
        self.assertEqual(response["children"][0]["data"], {"s.k": "v"})
        self.assertEqual(response["resyncAfterSeconds"], 0)


if __name__ == "__main__":
    unittest.main()
