"""Write Weir reconciler plugins in Python.

A plugin subclasses `Reconciler` and returns an `Outcome`::

    from weir_reconciler import Reconciler, Kind, Outcome, PermanentError, config_map

    class Greeter(Reconciler):
        name = "greeter"
        parent = Kind("example.dev", "v1", "Greeter", "greeters")
        children = [CONFIG_MAP]

        def reconcile(self, parent, children):
            if "text" not in parent.spec:
                raise PermanentError("spec.text is required")
            return Outcome.apply([config_map(parent.name, {"text": parent.spec["text"]})])

`weir-py build` (or `python -m weir_reconciler.build`) turns it into a component (see README.md).
"""

from .objects import (
    CONFIG_MAP,
    DEPLOYMENT,
    SERVICE,
    Children,
    Kind,
    Object,
    condition,
    config_map,
    container,
    deployment,
    service,
)
from .outcome import Cleanup, Outcome, PermanentError, ReconcileError, TransientError
from .reconciler import Reconciler
from . import log

__all__ = [
    "CONFIG_MAP",
    "DEPLOYMENT",
    "SERVICE",
    "Children",
    "Cleanup",
    "Kind",
    "Object",
    "Outcome",
    "PermanentError",
    "ReconcileError",
    "Reconciler",
    "TransientError",
    "condition",
    "config_map",
    "container",
    "deployment",
    "log",
    "service",
]
