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

A plugin that reads objects it does not own (a ConfigMap the user names, ...)
declares them in `related` and picks them per parent in `select`; they arrive
in `children.related`.

`weir-py build` (or `python -m weir_reconciler.build`) turns it into a component (see README.md).
"""

from .objects import (
    CONFIG_MAP,
    DEPLOYMENT,
    NAMESPACE,
    SECRET,
    SERVICE,
    Children,
    Kind,
    Object,
    Objects,
    condition,
    config_map,
    container,
    deployment,
    in_cluster,
    service,
)
from .outcome import Cleanup, Outcome, PermanentError, ReconcileError, TransientError
from .reconciler import Reconciler
from .selection import LabelSelector, Selection
from . import log

__all__ = [
    "CONFIG_MAP",
    "DEPLOYMENT",
    "NAMESPACE",
    "SECRET",
    "SERVICE",
    "Children",
    "Cleanup",
    "Kind",
    "LabelSelector",
    "Object",
    "Objects",
    "Outcome",
    "PermanentError",
    "ReconcileError",
    "Reconciler",
    "Selection",
    "TransientError",
    "condition",
    "config_map",
    "container",
    "deployment",
    "in_cluster",
    "log",
    "service",
]
