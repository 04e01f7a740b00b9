/* The {{Kind}} plugin: one ConfigMap per {{Kind}}, holding its message, and a Ready condition. */
#include "weir.h"

const weir_plugin WEIR_PLUGIN = {
    .name = "{{name}}", /* the field manager is weir/{{name}} */
    .version = "0.1.0",
    .parent = {"{{group}}", "v1alpha1", "{{Kind}}", "{{plural}}", true},
    .children = {WEIR_CONFIG_MAP}, /* anything else it returns is refused */
};

bool weir_reconcile(const weir_request *req, weir_answer *answer, weir_error *err) {
  const char *ns = weir_string(weir_path(req->parent, "metadata.namespace"));
  const char *name = weir_string(weir_path(req->parent, "metadata.name"));
  const weir_json *message = weir_path(req->parent, "spec.message");
  if (!message) {
    return weir_fail(err, WEIR_PERMANENT, "{{Kind}} %s/%s is invalid: spec: missing field `message`", ns, name);
  }
  if (!weir_string(message)) {
    return weir_fail(err, WEIR_PERMANENT, "{{Kind}} %s/%s is invalid: spec.message: expected a string", ns, name);
  }

  weir_writer *w = weir_child(answer);
  weir_begin_object(w);
  weir_key(w, "apiVersion");
  weir_write_string(w, "v1");
  weir_key(w, "kind");
  weir_write_string(w, "ConfigMap");
  weir_key(w, "metadata");
  weir_begin_object(w);
  weir_key(w, "name");
  weir_write_string(w, name);
  weir_end_object(w);
  weir_key(w, "data");
  weir_begin_object(w);
  weir_key(w, "message");
  weir_write_string(w, weir_string(message));
  weir_end_object(w);
  weir_end_object(w);

  int64_t generation;
  w = weir_status(answer);
  weir_begin_object(w);
  if (weir_int(weir_path(req->parent, "metadata.generation"), &generation)) {
    weir_key(w, "observedGeneration");
    weir_write_int(w, generation);
  }
  weir_key(w, "conditions");
  weir_begin_array(w);
  weir_text text = {0};
  weir_text_printf(&text, "ConfigMap %s holds the message", name);
  weir_write_condition(w, "Ready", true, "ConfigMapApplied", text.ptr);
  weir_text_free(&text);
  weir_end_array(w);
  weir_end_object(w);
  return true;
}
