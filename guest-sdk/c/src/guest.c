/* Serves the contract's exports (the bindings wit-bindgen generates) with the plugin's functions.
 *
 * Each export parses the JSON it is handed, calls the plugin, and lowers the answer into the
 * bindings' types. The bindings' post-return functions free what an export answers with
 * `free`, so every string and list answered is freshly allocated here; what the export is
 * handed is the export's to free (wit-bindgen's ownership rules for C).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "reconciler.h"

/* The CRD text `weir-c build --crd` embedded (NULL: none). */
extern const char *const weir_crd;

/* The defaults of the optional plugin functions: nothing related, cleanup complete at once. */
__attribute__((weak)) bool weir_select(const weir_json *parent, weir_selections *out, weir_error *err) {
  (void)parent;
  (void)out;
  (void)err;
  return true;
}

__attribute__((weak)) bool weir_finalize(const weir_request *req, weir_answer *answer, weir_error *err) {
  (void)req;
  (void)err;
  weir_finalized(answer);
  return true;
}

/* Declared here, defined by the plugin. */
bool weir_reconcile(const weir_request *req, weir_answer *answer, weir_error *err);

void weir_log(weir_log_level level, const char *format, ...) {
  va_list args;
  va_start(args, format);
  int n = vsnprintf(NULL, 0, format, args);
  va_end(args);
  char *line = weir_xmalloc(n > 0 ? (size_t)n + 1 : 1);
  line[0] = '\0';
  if (n > 0) {
    va_start(args, format);
    vsnprintf(line, (size_t)n + 1, format, args);
    va_end(args);
  }
  reconciler_string_t message = {.ptr = (uint8_t *)line, .len = strlen(line)};
  reconciler_log((reconciler_log_level_t)level, &message);
  free(line);
}

static void dup(reconciler_string_t *out, const char *s) { reconciler_string_dup_n(out, s, strlen(s)); }

static void dup_option(reconciler_option_string_t *out, const char *s) {
  out->is_some = s != NULL;
  if (s) dup(&out->val, s);
}

static void lower_kind(weir_reconciler_types_resource_kind_t *out, const weir_kind *k) {
  dup(&out->group, k->group ? k->group : "");
  dup(&out->version, k->version ? k->version : "");
  dup(&out->kind, k->kind ? k->kind : "");
  dup(&out->plural, k->plural ? k->plural : "");
  out->namespaced = k->namespaced;
}

static void lower_kinds(weir_reconciler_types_list_resource_kind_t *out, const weir_kind kinds[WEIR_MAX_KINDS]) {
  size_t n = 0;
  while (n < WEIR_MAX_KINDS && kinds[n].kind) n++;
  out->len = n;
  out->ptr = n ? weir_xmalloc(n * sizeof *out->ptr) : NULL;
  for (size_t i = 0; i < n; i++) lower_kind(&out->ptr[i], &kinds[i]);
}

void exports_reconciler_describe(reconciler_plugin_info_t *ret) {
  const weir_plugin *p = &WEIR_PLUGIN;
  dup(&ret->name, p->name ? p->name : "");
  dup(&ret->version, p->version ? p->version : "");
  lower_kind(&ret->parent, &p->parent);
  lower_kinds(&ret->children, p->children);
  lower_kinds(&ret->related, p->related);
  dup_option(&ret->finalizer, p->finalizer);
  dup_option(&ret->crd, weir_crd);
}

/* The error `err` as the contract's, freeing it. */
static void lower_error(reconciler_reconcile_error_t *out, weir_error *err) {
  out->kind = err->kind == WEIR_PERMANENT ? WEIR_RECONCILER_TYPES_ERROR_KIND_PERMANENT
                                          : WEIR_RECONCILER_TYPES_ERROR_KIND_TRANSIENT;
  dup(&out->message, err->set && err->message ? err->message : "the plugin failed without saying why (weir_fail)");
  weir_error_free(err);
}

/* Parsed objects handed to one call, freed together. */
typedef struct parsed {
  weir_json *parent;
  weir_json **children;
  size_t n_children;
  weir_json **related;
  size_t n_related;
} parsed;

static void parsed_free(parsed *p) {
  weir_json_free(p->parent);
  for (size_t i = 0; i < p->n_children; i++) weir_json_free(p->children[i]);
  for (size_t i = 0; i < p->n_related; i++) weir_json_free(p->related[i]);
  free(p->children);
  free(p->related);
}

/* Parses one object; a host that hands over text that is not JSON is a transient failure. */
static weir_json *parse_one(const reconciler_string_t *s, const char *what, size_t index, weir_error *err) {
  const char *why = "";
  weir_json *v = weir_parse((const char *)s->ptr, s->len, &why);
  if (!v) weir_fail(err, WEIR_TRANSIENT, "the host's %s %zu is not JSON: %s", what, index, why);
  return v;
}

static bool parse_list(const reconciler_list_string_t *list, const char *what, weir_json ***out, size_t *n,
                       weir_error *err) {
  *out = weir_xmalloc((list->len ? list->len : 1) * sizeof **out);
  for (size_t i = 0; i < list->len; i++) {
    weir_json *v = parse_one(&list->ptr[i], what, i, err);
    if (!v) return false;
    (*out)[(*n)++] = v;
  }
  return true;
}

static bool parse_request(const reconciler_string_t *parent, const reconciler_list_string_t *children,
                          const reconciler_list_string_t *related, parsed *p, weir_error *err) {
  p->parent = parse_one(parent, "parent", 0, err);
  return p->parent && parse_list(children, "child", &p->children, &p->n_children, err) &&
         parse_list(related, "related object", &p->related, &p->n_related, err);
}

static weir_request request_of(const parsed *p, const char *finalizer) {
  return (weir_request){
      .parent = p->parent,
      .children = (const weir_json *const *)p->children,
      .n_children = p->n_children,
      .related = (const weir_json *const *)p->related,
      .n_related = p->n_related,
      .finalizer = finalizer,
  };
}

/* A writer's text as a contract string; false (a permanent error naming `what`) if incomplete. */
static bool lower_written(reconciler_string_t *out, const weir_writer *w, const char *what, size_t index,
                          weir_error *err) {
  const char *problem = weir_writer_problem(w);
  if (problem) return weir_fail(err, WEIR_PERMANENT, "the plugin's %s %zu is not one JSON value: %s", what, index, problem);
  size_t len;
  const char *text = weir_writer_text(w, &len);
  reconciler_string_dup_n(out, text, len);
  return true;
}

static bool lower_children(reconciler_list_string_t *out, const weir_answer *a, weir_error *err) {
  out->len = 0;
  out->ptr = a->n_children ? weir_xmalloc(a->n_children * sizeof *out->ptr) : NULL;
  for (size_t i = 0; i < a->n_children; i++) {
    if (!lower_written(&out->ptr[i], a->children[i], "child", i, err)) {
      reconciler_list_string_free(out);
      return false;
    }
    out->len++;
  }
  return true;
}

static bool lower_status(reconciler_option_string_t *out, const weir_answer *a, weir_error *err) {
  out->is_some = a->status != NULL;
  return !a->status || lower_written(&out->val, a->status, "status", 0, err);
}

static void lower_requeue(weir_reconciler_types_requeue_t *out, const weir_answer *a) {
  out->tag = a->requeue == REQUEUE_AFTER ? WEIR_RECONCILER_TYPES_REQUEUE_AFTER
             : a->requeue == REQUEUE_NOW ? WEIR_RECONCILER_TYPES_REQUEUE_NOW
                                         : WEIR_RECONCILER_TYPES_REQUEUE_DONE;
  out->val.after = a->after_ms;
}

static void lower_selection(reconciler_selection_t *out, const selection *s) {
  dup(&out->api_version, s->api_version);
  dup(&out->kind, s->kind);
  dup_option(&out->namespace_, s->namespace_);
  if (s->name) {
    out->selector.tag = WEIR_RECONCILER_TYPES_SELECTOR_NAME;
    dup(&out->selector.val.name, s->name);
    return;
  }
  const label_selector *l = &s->labels;
  weir_reconciler_types_label_selector_t *sel = &out->selector.val.labels;
  out->selector.tag = WEIR_RECONCILER_TYPES_SELECTOR_LABELS;
  sel->match_labels.len = l->n_labels;
  sel->match_labels.ptr = l->n_labels ? weir_xmalloc(l->n_labels * sizeof *sel->match_labels.ptr) : NULL;
  for (size_t i = 0; i < l->n_labels; i++) {
    dup(&sel->match_labels.ptr[i].f0, l->keys[i]);
    dup(&sel->match_labels.ptr[i].f1, l->values[i]);
  }
  sel->match_expressions.len = l->n_reqs;
  sel->match_expressions.ptr = l->n_reqs ? weir_xmalloc(l->n_reqs * sizeof *sel->match_expressions.ptr) : NULL;
  for (size_t i = 0; i < l->n_reqs; i++) {
    weir_reconciler_types_label_requirement_t *r = &sel->match_expressions.ptr[i];
    dup(&r->key, l->reqs[i].key);
    r->operator_ = (weir_reconciler_types_selector_operator_t)l->reqs[i].op;
    r->values.len = l->reqs[i].n_values;
    r->values.ptr = r->values.len ? weir_xmalloc(r->values.len * sizeof *r->values.ptr) : NULL;
    for (size_t k = 0; k < r->values.len; k++) dup(&r->values.ptr[k], l->reqs[i].values[k]);
  }
}

bool exports_reconciler_select_related(reconciler_string_t *parent, reconciler_list_selection_t *ret,
                                       reconciler_reconcile_error_t *err) {
  weir_error e = {0};
  weir_selections out = {0};
  weir_json *p = parse_one(parent, "parent", 0, &e);
  bool ok = p && weir_select(p, &out, &e);
  if (ok) {
    ret->len = out.len;
    ret->ptr = out.len ? weir_xmalloc(out.len * sizeof *ret->ptr) : NULL;
    for (size_t i = 0; i < out.len; i++) lower_selection(&ret->ptr[i], &out.items[i]);
  } else {
    lower_error(err, &e);
  }
  weir_selections_free(&out);
  weir_json_free(p);
  reconciler_string_free(parent);
  return ok;
}

bool exports_reconciler_reconcile(reconciler_reconcile_request_t *request, reconciler_reconcile_response_t *ret,
                                  reconciler_reconcile_error_t *err) {
  weir_error e = {0};
  weir_answer a = {0};
  parsed p = {0};
  bool ok = parse_request(&request->parent, &request->children, &request->related, &p, &e);
  if (ok) {
    weir_request req = request_of(&p, NULL);
    ok = weir_reconcile(&req, &a, &e);
  }
  ok = ok && lower_children(&ret->children, &a, &e);
  if (ok && !lower_status(&ret->status, &a, &e)) {
    reconciler_list_string_free(&ret->children);
    ok = false;
  }
  if (ok) {
    lower_requeue(&ret->requeue, &a);
  } else {
    lower_error(err, &e);
  }
  weir_answer_free(&a);
  parsed_free(&p);
  reconciler_reconcile_request_free(request);
  return ok;
}

bool exports_reconciler_finalize(reconciler_finalize_request_t *request, reconciler_finalize_response_t *ret,
                                 reconciler_reconcile_error_t *err) {
  weir_error e = {0};
  weir_answer a = {0};
  parsed p = {0};
  bool ok = parse_request(&request->parent, &request->children, &request->related, &p, &e);
  if (ok) {
    char *finalizer = weir_xmalloc(request->finalizer.len + 1);
    memcpy(finalizer, request->finalizer.ptr, request->finalizer.len);
    finalizer[request->finalizer.len] = '\0';
    weir_request req = request_of(&p, finalizer);
    ok = weir_finalize(&req, &a, &e);
    free(finalizer);
  }
  /* Children are answered once the plugin added one or said to hold them (an empty list). */
  ret->children.is_some = ok && (a.n_children > 0 || a.hold_children);
  ok = ok && (!ret->children.is_some || lower_children(&ret->children.val, &a, &e));
  if (ok && !lower_status(&ret->status, &a, &e)) {
    reconciler_option_list_string_free(&ret->children);
    ok = false;
  }
  if (ok) {
    ret->finalized = a.finalized;
    lower_requeue(&ret->requeue, &a);
  } else {
    lower_error(err, &e);
  }
  weir_answer_free(&a);
  parsed_free(&p);
  reconciler_finalize_request_free(request);
  return ok;
}
