"""Outcome, Cleanup and the error kinds."""

import unittest
from datetime import timedelta

from weir_reconciler import Cleanup, Outcome, PermanentError, ReconcileError, TransientError


class OutcomeTest(unittest.TestCase):
    def test_apply_then_status_then_requeue_builds_one_outcome(self):
        o = Outcome.apply([{"kind": "ConfigMap"}]).status({"ready": True}).requeue_after(30)
        self.assertEqual(o.children, [{"kind": "ConfigMap"}])
        self.assertEqual(o.desired_status, {"ready": True})
        self.assertEqual(o.requeue, 30_000)

    def test_default_is_done_without_status(self):
        o = Outcome.apply([])
        self.assertEqual(o.requeue, "done")
        self.assertIsNone(o.desired_status)

    def test_requeue_accepts_fractions_and_timedeltas(self):
        self.assertEqual(Outcome.apply([]).requeue_after(0.25).requeue, 250)
        self.assertEqual(Outcome.apply([]).requeue_after(timedelta(minutes=5)).requeue, 300_000)
        self.assertEqual(Outcome.apply([]).requeue_now().requeue, "now")

    def test_negative_requeue_is_refused(self):
        with self.assertRaises(ValueError):
            Outcome.apply([]).requeue_after(-1)


class CleanupTest(unittest.TestCase):
    def test_complete_and_again_after(self):
        self.assertTrue(Cleanup.complete().is_complete)
        again = Cleanup.again_after(5)
        self.assertFalse(again.is_complete)
        self.assertEqual(again.again_after_ms, 5000)


class ErrorTest(unittest.TestCase):
    def test_error_kinds(self):
        self.assertEqual(PermanentError("x").kind, "permanent")
        self.assertEqual(TransientError("x").kind, "transient")
        self.assertIsInstance(PermanentError("x"), ReconcileError)
        self.assertEqual(TransientError("not ready").message, "not ready")


if __name__ == "__main__":
    unittest.main()
