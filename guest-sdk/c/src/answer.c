/* What a call answers: children and status writers, requeue, selections, and lookups. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

weir_writer *weir_child(weir_answer *answer) {
  if (answer->n_children == answer->cap_children) {
    answer->cap_children = answer->cap_children ? answer->cap_children * 2 : 4;
    answer->children = weir_xrealloc(answer->children, answer->cap_children * sizeof *answer->children);
  }
  weir_writer *w = weir_writer_new();
  answer->children[answer->n_children++] = w;
  return w;
}

weir_writer *weir_status(weir_answer *answer) {
  if (!answer->status) answer->status = weir_writer_new();
  return answer->status;
}

void weir_requeue_after(weir_answer *answer, uint64_t ms) {
  answer->requeue = REQUEUE_AFTER;
  answer->after_ms = ms;
}

void weir_requeue_now(weir_answer *answer) { answer->requeue = REQUEUE_NOW; }

void weir_hold_children(weir_answer *answer) { answer->hold_children = true; }

void weir_finalized(weir_answer *answer) { answer->finalized = true; }

void weir_answer_free(weir_answer *a) {
  for (size_t i = 0; i < a->n_children; i++) weir_writer_free(a->children[i]);
  free(a->children);
  weir_writer_free(a->status);
  memset(a, 0, sizeof *a);
}

const weir_json *weir_find(const weir_json *const *objects, size_t n, const char *api_version, const char *kind,
                           const char *name) {
  for (size_t i = 0; i < n; i++) {
    const char *a = weir_string(weir_get(objects[i], "apiVersion"));
    const char *k = weir_string(weir_get(objects[i], "kind"));
    const char *m = weir_string(weir_path(objects[i], "metadata.name"));
    if (a && k && m && strcmp(a, api_version) == 0 && strcmp(k, kind) == 0 && strcmp(m, name) == 0) return objects[i];
  }
  return NULL;
}

static selection *push_selection(weir_selections *out, const char *api_version, const char *kind, const char *ns) {
  if (out->len == out->cap) {
    out->cap = out->cap ? out->cap * 2 : 4;
    out->items = weir_xrealloc(out->items, out->cap * sizeof *out->items);
  }
  selection *s = &out->items[out->len++];
  memset(s, 0, sizeof *s);
  s->api_version = weir_xstrdup(api_version);
  s->kind = weir_xstrdup(kind);
  s->namespace_ = ns ? weir_xstrdup(ns) : NULL;
  return s;
}

void weir_select_name(weir_selections *out, const char *api_version, const char *kind, const char *namespace_,
                      const char *name) {
  push_selection(out, api_version, kind, namespace_)->name = weir_xstrdup(name);
}

bool weir_select_labels(weir_selections *out, const char *api_version, const char *kind, const char *namespace_,
                        const weir_json *selector, weir_error *err) {
  label_selector parsed;
  if (!weir_selector_parse(selector, &parsed, err)) return false;
  push_selection(out, api_version, kind, namespace_)->labels = parsed;
  return true;
}

void weir_selections_free(weir_selections *s) {
  for (size_t i = 0; i < s->len; i++) {
    free(s->items[i].api_version);
    free(s->items[i].kind);
    free(s->items[i].namespace_);
    free(s->items[i].name);
    weir_selector_free(&s->items[i].labels);
  }
  free(s->items);
  memset(s, 0, sizeof *s);
}
