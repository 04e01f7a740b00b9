"""The build command's generated app module (componentize-py itself is exercised by plugins/build.sh)."""

import ast
import contextlib
import io
import unittest
from unittest import mock

from weir_reconciler import cli
from pathlib import Path

from weir_reconciler.build import APP_MODULE, CONTRACT, DEFAULT_WIT, WORLD, app_source, componentize_env, main


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


class ComponentizeEnvTest(unittest.TestCase):
    def test_componentize_py_is_told_the_virtual_environment_the_build_runs_in(self):
        with mock.patch("sys.prefix", "/work/venv"), mock.patch("sys.base_prefix", "/usr"), \
                mock.patch.dict("os.environ", {"VIRTUAL_ENV": "/elsewhere", "PATH": "/bin"}, clear=True):
            env = componentize_env()
        self.assertEqual(env["VIRTUAL_ENV"], "/work/venv", "not another one, nor pipenv's or PATH's python")
        self.assertEqual(env["PATH"], "/bin", "the rest of the environment is passed on")

    def test_outside_a_virtual_environment_the_environment_is_passed_on_unchanged(self):
        with mock.patch("sys.prefix", "/usr"), mock.patch("sys.base_prefix", "/usr"), \
                mock.patch.dict("os.environ", {"PATH": "/bin"}, clear=True):
            self.assertEqual(componentize_env(), {"PATH": "/bin"})


class WeirPyTest(unittest.TestCase):
    def test_an_unknown_command_is_refused(self):
        with contextlib.redirect_stderr(io.StringIO()) as err:
            self.assertEqual(cli.main(["frobnicate"]), 2)
        self.assertIn("unknown command", err.getvalue())

    def test_build_passes_its_arguments_to_the_build_command(self):
        with self.assertRaises(SystemExit) as caught, contextlib.redirect_stderr(io.StringIO()) as err:
            cli.main(["build", "blog", "-o", "/dev/null"])
        self.assertEqual(caught.exception.code, 2)
        self.assertIn("weir-py build", err.getvalue())

    def test_the_contract_is_found_in_the_package_or_the_checkout(self):
        self.assertTrue((DEFAULT_WIT / "reconciler.wit").is_file(), DEFAULT_WIT)

    def test_components_are_built_against_the_contract_the_package_version_follows(self):
        wit = (DEFAULT_WIT / "reconciler.wit").read_text(encoding="utf-8")
        self.assertIn(f"package weir:reconciler@{CONTRACT};", wit)
        pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text(encoding="utf-8")
        (version,) = [line.split('"')[1] for line in pyproject.splitlines() if line.startswith("version = ")]
        self.assertEqual(version.split(".")[:2], CONTRACT.split(".")[:2])


if __name__ == "__main__":
    unittest.main()
