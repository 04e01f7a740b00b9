import tempfile
import unittest
from pathlib import Path

from weir_reconciler.build import DEFAULT_WIT
from weir_reconciler.export_name import ExportNameError, rename_exports, stage_wit

HEADER = b"\x00asm\x0d\x00\x01\x00"


def section(section_id, body):
    assert len(body) < 128  # one-byte LEB128 sizes keep the fixtures readable
    return bytes([section_id, len(body)]) + body


def name(text):
    return b"\x00" + bytes([len(text)]) + text.encode()


class StageWitTest(unittest.TestCase):
    def test_only_the_worlds_select_export_gets_the_stand_in_name(self):
        with tempfile.TemporaryDirectory() as staged:
            renames = stage_wit(DEFAULT_WIT, Path(staged))
            text = Path(staged, "reconciler.wit").read_text(encoding="utf-8")
        self.assertEqual(renames, [("select-related", "select")])
        self.assertIn("export select-related: func(parent: string)", text)
        self.assertNotRegex(text, r"export select:")
        original = (DEFAULT_WIT / "reconciler.wit").read_text(encoding="utf-8")
        self.assertEqual(text.replace("export select-related:", "export select:"), original)

    def test_a_contract_without_select_is_staged_unchanged(self):
        with tempfile.TemporaryDirectory() as staged:
            renames = stage_wit(DEFAULT_WIT.parent, Path(staged))
            text = Path(staged, "reconciler.wit").read_text(encoding="utf-8")
        self.assertEqual(renames, [])
        self.assertEqual(text, (DEFAULT_WIT.parent / "reconciler.wit").read_text(encoding="utf-8"))


class RenameExportsTest(unittest.TestCase):
    renames = [("select-related", "select")]

    def test_the_export_is_renamed_and_its_section_resized_and_nothing_else_touched(self):
        custom = section(0, name("select-related") + b"payload")
        exports = section(11, b"\x02" + name("describe") + b"\x01\x00\x00" + name("select-related") + b"\x01\x01\x00")
        out = rename_exports(HEADER + custom + exports, self.renames)
        self.assertEqual(out, HEADER + custom + section(11, b"\x02" + name("describe") + b"\x01\x00\x00" + name("select") + b"\x01\x01\x00"))

    def test_a_missing_or_repeated_export_is_refused(self):
        with self.assertRaises(ExportNameError):
            rename_exports(HEADER + section(11, b"\x01" + name("describe") + b"\x01\x00\x00"), self.renames)
        twice = section(11, b"\x02" + name("select-related") + b"\x01\x00\x00" + name("select-related") + b"\x01\x01\x00")
        with self.assertRaises(ExportNameError):
            rename_exports(HEADER + twice, self.renames)

    def test_a_core_module_or_a_truncated_file_is_refused(self):
        with self.assertRaises(ExportNameError):
            rename_exports(b"\x00asm\x01\x00\x00\x00", self.renames)
        with self.assertRaises(ExportNameError):
            rename_exports(HEADER + b"\x0b\x7f\x01", self.renames)


if __name__ == "__main__":
    unittest.main()
