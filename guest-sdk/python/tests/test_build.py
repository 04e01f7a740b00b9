"""The build command's generated app module (componentize-py itself is exercised by plugins/build.sh)."""

import ast
import contextlib
import io
import unittest

from weir_reconciler.build import APP_MODULE, WORLD, app_source, main


class AppSourceTest(unittest.TestCase):
    def test_the_app_module_exports_the_class_as_witworld(self):
        source = app_source("blog", "Blog")
        tree = ast.parse(source)
        self.assertIn("from blog import Blog", source)
        assigned = [node.targets[0].id for node in tree.body if isinstance(node, ast.Assign)]
        self.assertEqual(assigned, ["WitWorld"])
        self.assertIn("crd=None", source)

    def test_the_crd_text_is_embedded_as_a_literal(self):
        crd = "a: 'quoted'\nb: \"double\" \\ 日本\n"
        call = ast.parse(app_source("blog", "Blog", crd)).body[-1].value
        (keyword,) = call.keywords
        self.assertEqual((keyword.arg, ast.literal_eval(keyword.value)), ("crd", crd))

    def test_the_app_module_name_differs_from_the_world(self):
        self.assertNotEqual(APP_MODULE, WORLD)

    def test_a_target_without_a_class_is_refused(self):
        with self.assertRaises(SystemExit) as caught, contextlib.redirect_stderr(io.StringIO()):
            main(["blog", "-o", "/dev/null"])
        self.assertEqual(caught.exception.code, 2)


if __name__ == "__main__":
    unittest.main()
