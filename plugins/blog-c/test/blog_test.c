/* The C Blog natively: the README's worked examples and the rules the fixtures do not pin one by one. */
#include <stdlib.h>

#include "../../../guest-sdk/c/src/internal.h"
#include "../../../guest-sdk/c/test/check.h"

/* The host's `log` import (guest.c carries the real one). */
void weir_log(weir_log_level level, const char *format, ...) {
  (void)level;
  (void)format;
}

bool weir_reconcile(const weir_request *req, weir_answer *answer, weir_error *err);
bool weir_select(const weir_json *parent, weir_selections *out, weir_error *err);

static weir_json *parse(const char *text) {
  const char *error = NULL;
  weir_json *v = weir_parse(text, strlen(text), &error);
  if (!v) fprintf(stderr, "parse: %s\n", error);
  return v;
}

/* Reconciles `parent` (with `related` objects); the answer's child `i` parsed, or the error. */
typedef struct outcome {
  bool ok;
  weir_error err;
  weir_json *children[3];
  weir_json *status;
} outcome;

static outcome reconcile(const char *parent, const char *const *related, size_t n_related) {
  outcome o = {0};
  weir_json *p = parse(parent);
  weir_json *rel[8];
  for (size_t i = 0; i < n_related; i++) rel[i] = parse(related[i]);
  weir_request req = {.parent = p, .related = (const weir_json *const *)rel, .n_related = n_related};
  weir_answer answer = {0};
  o.ok = weir_reconcile(&req, &answer, &o.err);
  size_t len;
  for (size_t i = 0; o.ok && i < answer.n_children && i < 3; i++) {
    CHECK(weir_writer_problem(answer.children[i]) == NULL);
    const char *text = weir_writer_text(answer.children[i], &len);
    o.children[i] = weir_parse(text, len, NULL);
  }
  if (o.ok) {
    CHECK(answer.n_children == 3);
    const char *text = weir_writer_text(answer.status, &len);
    o.status = weir_parse(text, len, NULL);
  }
  weir_answer_free(&answer);
  for (size_t i = 0; i < n_related; i++) weir_json_free(rel[i]);
  weir_json_free(p);
  return o;
}

static void outcome_free(outcome *o) {
  for (int i = 0; i < 3; i++) weir_json_free(o->children[i]);
  weir_json_free(o->status);
  weir_error_free(&o->err);
}

#define BLOG(spec) \
  "{\"apiVersion\": \"weir.dev/v1alpha1\", \"kind\": \"Blog\", \"metadata\": {\"name\": \"my-blog\", " \
  "\"namespace\": \"default\", \"generation\": 3}, \"spec\": " spec "}"

static const char *page_hash(const outcome *o) {
  return weir_string(weir_get(weir_path(o->children[1], "spec.template.metadata.annotations"), "weir.dev/page-hash"));
}

static void the_readmes_page_hashes(void) {
  outcome o = reconcile(BLOG("{\"title\": \"My Blog\", \"replicas\": 2}"), NULL, 0);
  CHECK(o.ok);
  CHECK_STR(page_hash(&o), "6d2f490c2a7e4282");
  CHECK_STR(weir_string(weir_path(o.children[0], "metadata.name")), "my-blog-page");
  int64_t n;
  CHECK(weir_int(weir_path(o.status, "observedGeneration"), &n) && n == 3);
  CHECK_STR(weir_string(weir_get(weir_at(weir_get(o.status, "conditions"), 0), "message")), "0 of 2 replicas ready");
  outcome_free(&o);
  o = reconcile(BLOG("{\"title\": \"Hello\"}"), NULL, 0);
  CHECK_STR(page_hash(&o), "f9c59828cafddb46");
  outcome_free(&o);
}

static void the_readmes_themed_page_with_two_posts(void) {
  const char *related[] = {
      "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"second\", \"labels\": {\"blog\": \"b\"}},"
      " \"data\": {\"title\": \"Fish & Chips\"}}",
      "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"theme\"},"
      " \"data\": {\"style.css\": \"h1 { color: red; }\"}}",
      "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"first\", \"labels\": {\"blog\": \"b\"}},"
      " \"data\": {\"title\": \"Hello\", \"body\": \"It works.\"}}",
  };
  outcome o = reconcile(BLOG("{\"title\": \"My Blog\", \"theme\": \"theme\", \"postsSelector\": {\"matchLabels\": {\"blog\": \"b\"}}}"),
                        related, 3);
  CHECK(o.ok);
  CHECK_STR(weir_string(weir_get(weir_get(o.children[0], "data"), "index.html")),
            "<!DOCTYPE html>\n<html>\n<head><meta charset=\"utf-8\"><title>My Blog</title><style>h1 { color: red; }</style></head>\n"
            "<body><h1>My Blog</h1>\n<article><h2>Hello</h2><p>It works.</p></article>\n"
            "<article><h2>Fish &amp; Chips</h2><p></p></article>\n</body>\n</html>\n");
  CHECK_STR(page_hash(&o), "6c770a5379d13bee");
  outcome_free(&o);
}

static void each_check_fails_permanently_naming_its_field(void) {
  struct {
    const char *parent;
    const char *message;
  } cases[] = {
      {BLOG("{\"replicas\": 2}"), "Blog default/my-blog is invalid: spec: missing field `title`"},
      {BLOG("{\"title\": 5}"), "Blog default/my-blog is invalid: spec.title: expected a string"},
      {BLOG("{\"title\": \"t\", \"replicas\": 2.5}"), "Blog default/my-blog is invalid: spec.replicas: expected a 32-bit integer"},
      {BLOG("{\"title\": \"t\", \"replicas\": 4294967296}"), "Blog default/my-blog is invalid: spec.replicas: expected a 32-bit integer"},
      {BLOG("{\"title\": \"\"}"), "Blog my-blog: spec.title must not be empty"},
      {BLOG("{\"title\": \"t\", \"replicas\": -1}"), "Blog my-blog: spec.replicas must be >= 0, not -1"},
      {BLOG("{\"title\": \"t\", \"image\": \"\"}"), "Blog my-blog: spec.image must not be empty"},
      {BLOG("{\"title\": \"t\", \"postsSelector\": {\"matchExpressions\": [{\"key\": \"a\"}]}}"),
       "Blog default/my-blog is invalid: spec.postsSelector.matchExpressions[0]: missing field `operator`"},
      {"{\"metadata\": {\"name\": \"My_Blog\"}, \"spec\": {\"title\": \"t\"}}",
       "metadata.name \"My_Blog\" cannot name a Service: use at most 63 lowercase letters, digits and '-', "
       "starting with a letter and ending with a letter or digit"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    outcome o = reconcile(cases[i].parent, NULL, 0);
    CHECK(!o.ok && o.err.kind == WEIR_PERMANENT);
    CHECK_STR(o.err.message, cases[i].message);
    outcome_free(&o);
  }
}

static void select_reads_the_theme_by_name_then_the_posts_by_labels(void) {
  weir_json *p = parse(BLOG("{\"title\": \"t\", \"theme\": \"look\", \"postsSelector\": {}}"));
  weir_selections out = {0};
  weir_error err = {0};
  CHECK(weir_select(p, &out, &err));
  CHECK(out.len == 2);
  CHECK_STR(out.items[0].name, "look");
  CHECK(out.items[1].name == NULL && out.items[1].labels.n_labels == 0 && out.items[1].labels.n_reqs == 0);
  weir_selections_free(&out);
  weir_json_free(p);
}

int main(void) {
  the_readmes_page_hashes();
  the_readmes_themed_page_with_two_posts();
  each_check_fails_permanently_naming_its_field();
  select_reads_the_theme_by_name_then_the_posts_by_labels();
  return report("c blog");
}
