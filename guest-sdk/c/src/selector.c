/* Kubernetes label selectors: their JSON shape checked, and matched against labels as the host does. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static const char *const OPERATORS[] = {"In", "NotIn", "Exists", "DoesNotExist"};

static int by_key(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

bool weir_selector_parse(const weir_json *json, label_selector *out, weir_error *err) {
  memset(out, 0, sizeof *out);
  if (weir_type_of(json) == WEIR_NULL) return true;
  if (weir_type_of(json) != WEIR_OBJECT) return weir_fail(err, WEIR_PERMANENT, "label selector: expected an object");
  const weir_json *labels = weir_get(json, "matchLabels");
  if (weir_type_of(labels) != WEIR_NULL) {
    if (weir_type_of(labels) != WEIR_OBJECT) {
      return weir_fail(err, WEIR_PERMANENT, "label selector: matchLabels must map strings to strings");
    }
    size_t n = weir_len(labels);
    /* Sorted by key: pairs of (key, value) in one array, then split. */
    char **pairs = weir_xmalloc(2 * n * sizeof *pairs);
    for (size_t i = 0; i < n; i++) {
      const char *v = weir_string(weir_at(labels, i));
      if (!v) {
        free(pairs);
        return weir_fail(err, WEIR_PERMANENT, "label selector: matchLabels must map strings to strings");
      }
      pairs[2 * i] = (char *)weir_key_at(labels, i);
      pairs[2 * i + 1] = (char *)v;
    }
    qsort(pairs, n, 2 * sizeof *pairs, by_key);
    out->keys = weir_xmalloc(n * sizeof *out->keys);
    out->values = weir_xmalloc(n * sizeof *out->values);
    for (size_t i = 0; i < n; i++) {
      out->keys[i] = weir_xstrdup(pairs[2 * i]);
      out->values[i] = weir_xstrdup(pairs[2 * i + 1]);
    }
    out->n_labels = n;
    free(pairs);
  }
  const weir_json *exprs = weir_get(json, "matchExpressions");
  if (weir_type_of(exprs) == WEIR_NULL) return true;
  if (weir_type_of(exprs) != WEIR_ARRAY) {
    weir_selector_free(out);
    return weir_fail(err, WEIR_PERMANENT, "label selector: matchExpressions must be a list");
  }
  out->reqs = weir_xmalloc(weir_len(exprs) * sizeof *out->reqs);
  for (size_t i = 0; i < weir_len(exprs); i++) {
    const weir_json *e = weir_at(exprs, i);
    const char *key = weir_string(weir_get(e, "key"));
    const char *op = weir_string(weir_get(e, "operator"));
    const weir_json *values = weir_get(e, "values");
    int found = -1;
    for (int k = 0; op && k < 4; k++) {
      if (strcmp(op, OPERATORS[k]) == 0) found = k;
    }
    bool values_ok = weir_type_of(values) == WEIR_NULL || weir_type_of(values) == WEIR_ARRAY;
    for (size_t k = 0; values_ok && k < weir_len(values); k++) values_ok = weir_string(weir_at(values, k)) != NULL;
    if (!key || found < 0 || !values_ok) {
      weir_selector_free(out);
      if (!key) return weir_fail(err, WEIR_PERMANENT, "label selector: matchExpressions[%zu]: expected an object with a string key", i);
      if (found < 0) {
        return weir_fail(err, WEIR_PERMANENT,
                         "label selector: matchExpressions[%zu]: operator is not In, NotIn, Exists or DoesNotExist", i);
      }
      return weir_fail(err, WEIR_PERMANENT, "label selector: matchExpressions[%zu]: values must be a list of strings", i);
    }
    requirement *r = &out->reqs[out->n_reqs++];
    r->key = weir_xstrdup(key);
    r->op = (selector_op)found;
    r->n_values = weir_len(values);
    r->values = weir_xmalloc(r->n_values * sizeof *r->values);
    for (size_t k = 0; k < r->n_values; k++) r->values[k] = weir_xstrdup(weir_string(weir_at(values, k)));
  }
  return true;
}

void weir_selector_free(label_selector *s) {
  for (size_t i = 0; i < s->n_labels; i++) {
    free(s->keys[i]);
    free(s->values[i]);
  }
  for (size_t i = 0; i < s->n_reqs; i++) {
    for (size_t k = 0; k < s->reqs[i].n_values; k++) free(s->reqs[i].values[k]);
    free(s->reqs[i].values);
    free(s->reqs[i].key);
  }
  free(s->keys);
  free(s->values);
  free(s->reqs);
  memset(s, 0, sizeof *s);
}

bool weir_selector_matches(const label_selector *s, const weir_json *labels) {
  for (size_t i = 0; i < s->n_labels; i++) {
    const char *v = weir_string(weir_get(labels, s->keys[i]));
    if (!v || strcmp(v, s->values[i]) != 0) return false;
  }
  for (size_t i = 0; i < s->n_reqs; i++) {
    const requirement *r = &s->reqs[i];
    const char *v = weir_string(weir_get(labels, r->key));
    bool listed = false;
    for (size_t k = 0; v && k < r->n_values; k++) listed = listed || strcmp(v, r->values[k]) == 0;
    bool holds = false;
    switch (r->op) {
      case OP_IN: holds = v && listed; break;
      case OP_NOT_IN: holds = !v || !listed; break;
      case OP_EXISTS: holds = v != NULL; break;
      case OP_DOES_NOT_EXIST: holds = v == NULL; break;
    }
    if (!holds) return false;
  }
  return true;
}

bool weir_labels_match(const weir_json *selector, const weir_json *labels) {
  label_selector parsed;
  weir_error err = {0};
  if (!weir_selector_parse(selector, &parsed, &err)) {
    weir_error_free(&err);
    return false;
  }
  bool matches = weir_selector_matches(&parsed, labels);
  weir_selector_free(&parsed);
  return matches;
}
