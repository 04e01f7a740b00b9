"""The development build: the sources buffer, the patch, and the plugin served from it (natively;
the component itself is built and run by guest-sdk/scaffold-test.sh and tests/save-to-cluster.sh)."""

import json
import sys
import tempfile
import textwrap
import traceback
import unittest
from pathlib import Path

from weir_reconciler import dev
from weir_reconciler.build import buffer_size, dev_app_source, find_buffer, imports_of, own_modules, patch


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


PLUGIN = {
    "greeter.py": """
        import json
        from weir_reconciler import Reconciler, Kind
        from .missing_on_purpose import nothing  # a relative import is the plugin's own
        """,
    "helpers/__init__.py": "from helpers.words import GREETING\n",
    "helpers/words.py": "GREETING = 'hello'\n",
    ".venv/lib/site.py": "import should_not_be_read\n",
    "node_modules/x/y.py": "",
}


class OwnModulesTest(unittest.TestCase):
    def test_modules_are_named_from_their_files_and_hidden_directories_are_left_out(self):
        with tempfile.TemporaryDirectory() as d:
            write(Path(d), PLUGIN)
            modules = own_modules([d])
        self.assertEqual(sorted(modules), ["greeter", "helpers", "helpers.words"])
        file, source, is_package = modules["helpers"]
        self.assertTrue(file.endswith("helpers/__init__.py"), file)
        self.assertIn("GREETING", source)
        self.assertTrue(is_package)
        self.assertFalse(modules["helpers.words"][2])

    def test_imports_are_those_of_other_modules_with_submodules_of_from_imports(self):
        with tempfile.TemporaryDirectory() as d:
            write(Path(d), PLUGIN)
            found = imports_of(own_modules([d]))
        self.assertEqual(found, ["json", "weir_reconciler", "weir_reconciler.Kind", "weir_reconciler.Reconciler"])

    def test_a_source_that_does_not_parse_is_refused_with_its_place(self):
        with tempfile.TemporaryDirectory() as d:
            write(Path(d), {"broken.py": "def f(:\n"})
            with self.assertRaises(SystemExit) as caught:
                imports_of(own_modules([d]))
        self.assertRegex(str(caught.exception), r"broken\.py:1:\d+: ")


class BufferTest(unittest.TestCase):
    def test_the_buffer_is_the_block_repeated_and_found_once_among_other_bytes(self):
        size = 1 << 16
        buffer = dev.Sources(size)
        self.assertEqual(bytes(buffer), dev.BLOCK * (size // len(dev.BLOCK)))
        component = b"\0asm" + dev.BLOCK * 3 + b"x" * 1000 + bytes(buffer) + b"y" * 1000
        at = find_buffer(component, size)
        self.assertEqual(component[at : at + size], bytes(buffer))

    def test_a_runtime_with_two_buffers_or_none_is_refused(self):
        size = 1 << 12
        buffer = bytes(dev.Sources(size))
        for component in [b"\0asm" * 100, buffer + b"z" + buffer]:
            with self.assertRaises(SystemExit):
                find_buffer(component, size)

    def test_the_patch_keeps_the_length_and_the_component_reads_the_payload_back(self):
        size = 1 << 12
        component = b"head" + bytes(dev.Sources(size)) + b"tail"
        payload = json.dumps({"modules": {"m": ["m.py", "X = 1\n", False]}}).encode()
        patched = patch(component, find_buffer(component, size), size, payload)
        self.assertEqual(len(patched), len(component))
        self.assertTrue(patched.startswith(b"head") and patched.endswith(b"tail"))
        buffer = bytearray(patched[4 : 4 + size])
        self.assertEqual(dev.payload(buffer), {"modules": {"m": ["m.py", "X = 1\n", False]}})

    def test_sources_larger_than_the_buffer_get_a_larger_buffer(self):
        self.assertEqual(buffer_size(b"x" * 100), 1 << 20)
        self.assertGreaterEqual(buffer_size(b"x" * (1 << 20)), 2 * (1 << 20))
        with self.assertRaises(ValueError):
            patch(bytes(dev.Sources(1 << 12)), 0, 1 << 12, b"x" * (1 << 12))

    def test_an_unpatched_runtime_says_it_holds_no_source(self):
        with self.assertRaisesRegex(RuntimeError, "holds no plugin source"):
            dev.payload(dev.Sources(1 << 12))


class DeferredTest(unittest.TestCase):
    def tearDown(self):
        for name in ("devplugin", "devplugin.words"):
            sys.modules.pop(name, None)
        sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "_Finder"]

    def buffer(self, modules: dict) -> bytearray:
        size = 1 << 12
        component = bytes(dev.Sources(size))
        return bytearray(patch(component, 0, size, json.dumps({"modules": modules}).encode()))

    def test_the_plugin_is_imported_from_the_buffer_on_first_use_with_its_own_packages(self):
        buffer = self.buffer({
            "devplugin": ["src/devplugin/__init__.py", "from devplugin.words import WORD\nclass P:\n    name = WORD\n", True],
            "devplugin.words": ["src/devplugin/words.py", "WORD = 'from the buffer'\n", False],
        })
        deferred = dev.Deferred(buffer, "devplugin", "P")
        self.assertNotIn("devplugin", sys.modules, "nothing is read before first use")
        self.assertEqual(deferred.name, "from the buffer")
        self.assertEqual(sys.modules["devplugin"].__file__, "src/devplugin/__init__.py")

    def test_an_error_in_the_source_names_its_file_and_line(self):
        buffer = self.buffer({"devplugin": ["src/devplugin.py", "class P:\n    name = undefined_name\n", False]})
        try:
            dev.Deferred(buffer, "devplugin", "P").name
        except NameError as e:
            frames = [(f.filename, f.lineno) for f in traceback.extract_tb(e.__traceback__)]
        else:
            self.fail("no NameError")
        self.assertIn(("src/devplugin.py", 2), frames)


class DevAppSourceTest(unittest.TestCase):
    def test_the_runtime_app_preloads_the_imports_and_defers_the_plugin(self):
        source = dev_app_source("greeter", "Greeter", "kind: CRD\n", ["json"], 1 << 20)
        self.assertIn("dev.preload(['json'])", source)
        self.assertIn(f"dev.Sources({1 << 20})", source)
        self.assertIn("dev.Deferred(SOURCES, 'greeter', 'Greeter')", source)
        self.assertNotIn("import greeter", source)
        compile(source, "app", "exec")


if __name__ == "__main__":
    unittest.main()
