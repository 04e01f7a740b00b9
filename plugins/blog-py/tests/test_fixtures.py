"""The shared Blog fixtures (plugins/blog/fixtures), run natively against the Python Blog.

`weir test` is the judge (it runs the built component in the sandbox); the
SDK's native runner (`weir_reconciler.fixtures`) runs the same files in
milliseconds while editing, with the same rules.
"""

import unittest
from pathlib import Path

import yaml

from blog import Blog
from weir_reconciler import fixtures

FIXTURES = Path(__file__).resolve().parents[2] / "blog" / "fixtures"


class BlogFixtures(unittest.TestCase):
    maxDiff = None  # a mismatch shows the whole diff, as `weir test` does

    def test_fixtures_exist(self):
        self.assertTrue(sorted(FIXTURES.glob("*.yaml")), f"no fixtures in {FIXTURES}")

    def test_every_fixture(self):
        for path in sorted(FIXTURES.glob("*.yaml")):
            with self.subTest(fixture=path.name):
                fixtures.check(self, Blog(), yaml.safe_load(path.read_text()))


if __name__ == "__main__":
    unittest.main()
