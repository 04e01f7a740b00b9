"""ConfigPropagation as a Weir plugin: Metacontroller's CompositeController declaration, in a few lines.

`hooks.py` is as Metacontroller would serve it (hooks of version v1, the
default); this is what the CompositeController object said (parent, children)
plus what Weir asks to be declared (the related kinds the customize hook
selects). The parent is cluster-scoped and its children land in other
namespaces, so the host serves it only under a policy with an entry for
`config-propagation` (README.md).

    weir-py build plugin:ConfigPropagation --path plugins/metacontroller-propagation \\
        --crd plugins/metacontroller-propagation/crd.yaml -o target/plugins/metacontroller-propagation.wasm
"""

from hooks import customize, sync
from weir_reconciler import CONFIG_MAP, NAMESPACE, Kind
from weir_reconciler.metacontroller import composite_controller

ConfigPropagation = composite_controller(
    name="config-propagation",
    parent=Kind("example.weir.dev", "v1alpha1", "ConfigPropagation", "configpropagations", namespaced=False),
    children=[CONFIG_MAP],
    related=[CONFIG_MAP, NAMESPACE],
    sync=sync,
    customize=customize,
)
