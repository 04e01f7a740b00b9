"""The {{Kind}} plugin: one ConfigMap per {{Kind}}, holding its message, and a Ready condition."""

from weir_reconciler import CONFIG_MAP, Children, Kind, Object, Outcome, PermanentError, Reconciler, condition, config_map


class {{Kind}}(Reconciler):
    name = "{{name}}"  # the field manager is weir/{{name}}
    version = "0.1.0"
    parent = Kind("{{group}}", "v1alpha1", "{{Kind}}", "{{plural}}")
    children = [CONFIG_MAP]  # anything else it returns is refused

    def reconcile(self, parent: Object, children: Children) -> Outcome:
        where = f"{{Kind}} {parent.namespace}/{parent.name} is invalid"
        if "message" not in parent.spec:
            raise PermanentError(f"{where}: spec: missing field `message`")
        message = parent.spec["message"]
        if not isinstance(message, str):
            raise PermanentError(f"{where}: spec.message: expected a string")
        status = {
            "observedGeneration": parent.generation,
            "conditions": [condition("Ready", True, "ConfigMapApplied", f"ConfigMap {parent.name} holds the message")],
        }
        # Children land in the parent's cluster; in_cluster("name", manifest) would place one in
        # another cluster the host has engaged (contract 0.4.0).
        return Outcome.apply([config_map(parent.name, {"message": message})]).status(status)
