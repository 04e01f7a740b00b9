"""ConfigBundle as a Weir plugin: Metacontroller's CompositeController declaration, in a few lines.

`hooks.py` is unchanged from its Metacontroller version; this is what the
CompositeController object said (parent, children, hooks) plus what Weir
asks to be declared (the related kinds the customize hook may select).

    weir-py build plugin:ConfigBundle --path plugins/metacontroller-example \\
        --crd plugins/metacontroller-example/crd.yaml -o target/plugins/metacontroller-example.wasm
"""

from hooks import customize, sync
from weir_reconciler import CONFIG_MAP, Kind
from weir_reconciler.metacontroller import composite_controller

ConfigBundle = composite_controller(
    name="config-bundle",
    parent=Kind("example.weir.dev", "v1alpha1", "ConfigBundle", "configbundles"),
    children=[CONFIG_MAP],
    related=[CONFIG_MAP],
    sync=sync,
    customize=customize,
)
