/* The Blog reconciler in C: a ConfigMap with the page, a Deployment serving it, and a Service.
 *
 * A port of the Rust Blog plugin (plugins/blog) to the C guest SDK (guest-sdk/c);
 * plugins/blog/README.md specifies every field and plugins/blog/fixtures pins them, so
 * every port answers the same JSON for the same Blog. The children depend on the spec and
 * the related ConfigMaps the Blog selected (its theme by name, its posts by label selector),
 * never on what was observed, so a child edited by hand is put back at the next reconcile;
 * only the status reads an observed child (the Deployment's `readyReplicas`).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weir.h"

#define FINALIZER "weir.dev/blog-cleanup"
#define DEFAULT_IMAGE "nginx:1.27"
#define PAGE_KEY "index.html"
#define PAGE_HASH_ANNOTATION "weir.dev/page-hash"
#define DOCUMENT_ROOT "/usr/share/nginx/html"
/* The theme's key holding the CSS; a post's keys holding its title (required) and body. */
#define STYLE_KEY "style.css"
#define POST_TITLE_KEY "title"
#define POST_BODY_KEY "body"

const weir_plugin WEIR_PLUGIN = {
    .name = "blog",
    .version = "0.1.0",
    .parent = {"weir.dev", "v1alpha1", "Blog", "blogs", true},
    .children = {WEIR_CONFIG_MAP, WEIR_DEPLOYMENT, WEIR_SERVICE},
    /* The theme and the posts are ConfigMaps the Blog reads but does not own. */
    .related = {WEIR_CONFIG_MAP},
    .finalizer = FINALIZER,
};

/* `spec` after defaulting; the strings point into the parsed parent. */
typedef struct blog_spec {
  const char *title;
  int64_t replicas;
  const char *image;
  const char *theme;          /* NULL: none */
  const weir_json *posts;     /* spec.postsSelector; NULL: none */
} blog_spec;

/* `spec.postsSelector` checked as serde checks the Rust `PostsSelector`. */
static bool check_posts_selector(const weir_json *value, const char *where, weir_error *err) {
  if (weir_type_of(value) != WEIR_OBJECT) return weir_fail(err, WEIR_PERMANENT, "%s: expected an object", where);
  const weir_json *labels = weir_get(value, "matchLabels");
  bool labels_ok = weir_type_of(labels) == WEIR_NULL || weir_type_of(labels) == WEIR_OBJECT;
  for (size_t i = 0; labels_ok && i < weir_len(labels); i++) labels_ok = weir_string(weir_at(labels, i)) != NULL;
  if (!labels_ok) return weir_fail(err, WEIR_PERMANENT, "%s.matchLabels: expected a map of strings", where);
  const weir_json *exprs = weir_get(value, "matchExpressions");
  if (weir_type_of(exprs) != WEIR_NULL && weir_type_of(exprs) != WEIR_ARRAY) {
    return weir_fail(err, WEIR_PERMANENT, "%s.matchExpressions: expected a list", where);
  }
  for (size_t i = 0; i < weir_len(exprs); i++) {
    const weir_json *e = weir_at(exprs, i);
    if (weir_type_of(e) != WEIR_OBJECT) {
      return weir_fail(err, WEIR_PERMANENT, "%s.matchExpressions[%zu]: expected an object", where, i);
    }
    for (const char *const *field = (const char *const[]){"key", "operator", NULL}; *field; field++) {
      if (!weir_get(e, *field)) {
        return weir_fail(err, WEIR_PERMANENT, "%s.matchExpressions[%zu]: missing field `%s`", where, i, *field);
      }
    }
    if (!weir_string(weir_get(e, "key"))) {
      return weir_fail(err, WEIR_PERMANENT, "%s.matchExpressions[%zu].key: expected a string", where, i);
    }
    const char *op = weir_string(weir_get(e, "operator"));
    if (!op || (strcmp(op, "In") && strcmp(op, "NotIn") && strcmp(op, "Exists") && strcmp(op, "DoesNotExist"))) {
      return weir_fail(err, WEIR_PERMANENT,
                       "%s.matchExpressions[%zu].operator: unknown variant, expected one of In, NotIn, Exists, "
                       "DoesNotExist",
                       where, i);
    }
    const weir_json *values = weir_get(e, "values");
    bool values_ok = weir_type_of(values) == WEIR_NULL || weir_type_of(values) == WEIR_ARRAY;
    for (size_t k = 0; values_ok && k < weir_len(values); k++) values_ok = weir_string(weir_at(values, k)) != NULL;
    if (!values_ok) {
      return weir_fail(err, WEIR_PERMANENT, "%s.matchExpressions[%zu].values: expected a list of strings", where, i);
    }
  }
  return true;
}

/* Decodes `spec` with the Rust type's rules: `title` required, the rest defaulted, types strict. */
static bool decode(const weir_json *blog, blog_spec *spec, weir_error *err) {
  const char *ns = weir_string(weir_path(blog, "metadata.namespace"));
  const char *name = weir_string(weir_path(blog, "metadata.name"));
  char where[300];
  snprintf(where, sizeof where, "Blog %s/%s is invalid", ns ? ns : "", name ? name : "");
  const weir_json *s = weir_get(blog, "spec");
  if (weir_type_of(s) == WEIR_NULL) return weir_fail(err, WEIR_PERMANENT, "%s: missing field `spec`", where);
  if (weir_type_of(s) != WEIR_OBJECT) return weir_fail(err, WEIR_PERMANENT, "%s: spec: expected an object", where);
  const weir_json *title = weir_get(s, "title");
  if (!title) return weir_fail(err, WEIR_PERMANENT, "%s: spec: missing field `title`", where);
  spec->title = weir_string(title);
  if (!spec->title) return weir_fail(err, WEIR_PERMANENT, "%s: spec.title: expected a string", where);
  const weir_json *replicas = weir_get(s, "replicas");
  spec->replicas = 1;
  if (replicas && (!weir_int(replicas, &spec->replicas) || spec->replicas < INT32_MIN || spec->replicas > INT32_MAX)) {
    return weir_fail(err, WEIR_PERMANENT, "%s: spec.replicas: expected a 32-bit integer", where);
  }
  const weir_json *image = weir_get(s, "image");
  spec->image = image ? weir_string(image) : DEFAULT_IMAGE;
  if (!spec->image) return weir_fail(err, WEIR_PERMANENT, "%s: spec.image: expected a string", where);
  const weir_json *theme = weir_get(s, "theme");
  spec->theme = weir_string(theme);
  if (weir_type_of(theme) != WEIR_NULL && !spec->theme) {
    return weir_fail(err, WEIR_PERMANENT, "%s: spec.theme: expected a string", where);
  }
  const weir_json *posts = weir_get(s, "postsSelector");
  spec->posts = weir_type_of(posts) == WEIR_NULL ? NULL : posts;
  char at[340];
  snprintf(at, sizeof at, "%s: spec.postsSelector", where);
  return !spec->posts || check_posts_selector(spec->posts, at, err);
}

/* The theme by name, then the posts by selector (README, *select*). */
bool weir_select(const weir_json *parent, weir_selections *out, weir_error *err) {
  blog_spec spec;
  if (!decode(parent, &spec, err)) return false;
  if (spec.theme) weir_select_name(out, "v1", "ConfigMap", NULL, spec.theme);
  return !spec.posts || weir_select_labels(out, "v1", "ConfigMap", NULL, spec.posts, err);
}

/* Rejects what the CRD would, for parents that bypassed it, naming the field. */
static bool validate(const char *name, const blog_spec *spec, weir_error *err) {
  size_t n = strlen(name);
  bool dns1035 = n >= 1 && n <= 63 && name[0] >= 'a' && name[0] <= 'z' &&
                 ((name[n - 1] >= 'a' && name[n - 1] <= 'z') || (name[n - 1] >= '0' && name[n - 1] <= '9'));
  for (size_t i = 0; dns1035 && i < n; i++) {
    char c = name[i];
    dns1035 = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
  }
  if (!dns1035) {
    return weir_fail(err, WEIR_PERMANENT,
                     "metadata.name \"%s\" cannot name a Service: use at most 63 lowercase letters, digits and '-', "
                     "starting with a letter and ending with a letter or digit",
                     name);
  }
  if (!*spec->title) return weir_fail(err, WEIR_PERMANENT, "Blog %s: spec.title must not be empty", name);
  if (spec->replicas < 0) {
    return weir_fail(err, WEIR_PERMANENT, "Blog %s: spec.replicas must be >= 0, not %lld", name,
                     (long long)spec->replicas);
  }
  if (!*spec->image) return weir_fail(err, WEIR_PERMANENT, "Blog %s: spec.image must not be empty", name);
  return true;
}

/* Python's html.escape(s, quote=True). */
static void escape(weir_text *t, const char *s) {
  for (; *s; s++) {
    switch (*s) {
      case '&': weir_text_puts(t, "&amp;"); break;
      case '<': weir_text_puts(t, "&lt;"); break;
      case '>': weir_text_puts(t, "&gt;"); break;
      case '"': weir_text_puts(t, "&quot;"); break;
      case '\'': weir_text_puts(t, "&#x27;"); break;
      default: weir_text_append(t, s, 1);
    }
  }
}

static int by_name(const void *a, const void *b) {
  const char *x = weir_string(weir_path(*(const weir_json *const *)a, "metadata.name"));
  const char *y = weir_string(weir_path(*(const weir_json *const *)b, "metadata.name"));
  return strcmp(x ? x : "", y ? y : "");
}

/* The page: a fixed template with the title HTML-escaped, the theme inlined, the posts listed.
 * `css` NULL: no theme; `posts` the post ConfigMaps in page order. */
static void page(weir_text *t, const char *title, const char *css, const weir_json **posts, size_t n_posts) {
  weir_text_puts(t, "<!DOCTYPE html>\n<html>\n<head><meta charset=\"utf-8\"><title>");
  escape(t, title);
  weir_text_puts(t, "</title>");
  if (css) {
    /* `\3c ` is CSS's own escape of `<`: the CSS means the same and cannot close the element. */
    weir_text_puts(t, "<style>");
    for (const char *c = css; *c; c++) {
      if (*c == '<') {
        weir_text_puts(t, "\\3c ");
      } else {
        weir_text_append(t, c, 1);
      }
    }
    weir_text_puts(t, "</style>");
  }
  weir_text_puts(t, "</head>\n<body><h1>");
  escape(t, title);
  weir_text_puts(t, "</h1>");
  if (n_posts) weir_text_puts(t, "\n");
  for (size_t i = 0; i < n_posts; i++) {
    const char *body = weir_string(weir_get(weir_get(posts[i], "data"), POST_BODY_KEY));
    weir_text_puts(t, "<article><h2>");
    escape(t, weir_string(weir_get(weir_get(posts[i], "data"), POST_TITLE_KEY)));
    weir_text_puts(t, "</h2><p>");
    escape(t, body ? body : "");
    weir_text_puts(t, "</p></article>\n");
  }
  weir_text_puts(t, "</body>\n</html>\n");
}

/* What selectors match (stable for the Blog's life); with `managed`, the labels set on all. */
static void write_labels(weir_writer *w, const char *name, bool managed) {
  weir_begin_object(w);
  weir_key(w, "app.kubernetes.io/name");
  weir_write_string(w, "blog");
  weir_key(w, "app.kubernetes.io/instance");
  weir_write_string(w, name);
  if (managed) {
    weir_key(w, "app.kubernetes.io/managed-by");
    weir_write_string(w, "weir");
  }
  weir_end_object(w);
}

/* apiVersion, kind, and metadata {name, labels}: the head every child shares. */
static void write_head(weir_writer *w, const char *api_version, const char *kind, const char *name,
                       const char *blog) {
  weir_key(w, "apiVersion");
  weir_write_string(w, api_version);
  weir_key(w, "kind");
  weir_write_string(w, kind);
  weir_key(w, "metadata");
  weir_begin_object(w);
  weir_key(w, "name");
  weir_write_string(w, name);
  weir_key(w, "labels");
  write_labels(w, blog, true);
  weir_end_object(w);
}

static void page_config_map(weir_writer *w, const char *name, const weir_text *text) {
  weir_text page_name = {0};
  weir_text_printf(&page_name, "%s-page", name);
  weir_begin_object(w);
  write_head(w, "v1", "ConfigMap", page_name.ptr, name);
  weir_key(w, "data");
  weir_begin_object(w);
  weir_key(w, PAGE_KEY);
  weir_write_string_len(w, text->ptr, text->len);
  weir_end_object(w);
  weir_end_object(w);
  weir_text_free(&page_name);
}

static void web_deployment(weir_writer *w, const char *name, const blog_spec *spec, const char *hash) {
  weir_begin_object(w);
  write_head(w, "apps/v1", "Deployment", name, name);
  weir_key(w, "spec");
  weir_begin_object(w);
  weir_key(w, "replicas");
  weir_write_int(w, spec->replicas);
  weir_key(w, "selector");
  weir_begin_object(w);
  weir_key(w, "matchLabels");
  write_labels(w, name, false);
  weir_end_object(w);
  weir_key(w, "template");
  weir_begin_object(w);
  weir_key(w, "metadata");
  weir_begin_object(w);
  weir_key(w, "labels");
  write_labels(w, name, true);
  weir_key(w, "annotations");
  weir_begin_object(w);
  weir_key(w, PAGE_HASH_ANNOTATION);
  weir_write_string(w, hash);
  weir_end_object(w);
  weir_end_object(w);
  weir_key(w, "spec");
  weir_begin_object(w);
  weir_key(w, "containers");
  weir_begin_array(w);
  weir_begin_object(w);
  weir_key(w, "name");
  weir_write_string(w, "web");
  weir_key(w, "image");
  weir_write_string(w, spec->image);
  weir_key(w, "ports");
  weir_begin_array(w);
  weir_begin_object(w);
  weir_key(w, "name");
  weir_write_string(w, "http");
  weir_key(w, "containerPort");
  weir_write_int(w, 80);
  weir_key(w, "protocol");
  weir_write_string(w, "TCP");
  weir_end_object(w);
  weir_end_array(w);
  weir_key(w, "volumeMounts");
  weir_begin_array(w);
  weir_begin_object(w);
  weir_key(w, "name");
  weir_write_string(w, "page");
  weir_key(w, "mountPath");
  weir_write_string(w, DOCUMENT_ROOT);
  weir_key(w, "readOnly");
  weir_write_bool(w, true);
  weir_end_object(w);
  weir_end_array(w);
  weir_end_object(w);
  weir_end_array(w);
  weir_key(w, "volumes");
  weir_begin_array(w);
  weir_begin_object(w);
  weir_key(w, "name");
  weir_write_string(w, "page");
  weir_key(w, "configMap");
  weir_begin_object(w);
  weir_key(w, "name");
  weir_write_stringf(w, "%s-page", name);
  weir_end_object(w);
  weir_end_object(w);
  weir_end_array(w);
  weir_end_object(w); /* template.spec */
  weir_end_object(w); /* template */
  weir_end_object(w); /* spec */
  weir_end_object(w);
}

static void web_service(weir_writer *w, const char *name) {
  weir_begin_object(w);
  write_head(w, "v1", "Service", name, name);
  weir_key(w, "spec");
  weir_begin_object(w);
  weir_key(w, "selector");
  write_labels(w, name, false);
  weir_key(w, "ports");
  weir_begin_array(w);
  /* `protocol` is a key of the ports list under server-side apply: never left to defaulting. */
  weir_begin_object(w);
  weir_key(w, "name");
  weir_write_string(w, "http");
  weir_key(w, "port");
  weir_write_int(w, 80);
  weir_key(w, "protocol");
  weir_write_string(w, "TCP");
  weir_key(w, "targetPort");
  weir_write_string(w, "http");
  weir_end_object(w);
  weir_end_array(w);
  weir_end_object(w);
  weir_end_object(w);
}

/* `theme_missing` (why the theme is missing, or NULL) takes precedence over the replicas. */
static void blog_status(weir_writer *w, const weir_json *blog, const blog_spec *spec, const weir_json *current,
                        const char *theme_missing) {
  int64_t ready = 0, generation;
  /* Absent or null both mean none ready, as `Option<i32>` does in the Rust port. */
  weir_int(weir_path(current, "status.readyReplicas"), &ready);
  weir_begin_object(w);
  if (weir_int(weir_path(blog, "metadata.generation"), &generation)) {
    weir_key(w, "observedGeneration");
    weir_write_int(w, generation);
  }
  weir_key(w, "readyReplicas");
  weir_write_int(w, ready);
  weir_key(w, "conditions");
  weir_begin_array(w);
  if (theme_missing) {
    weir_write_condition(w, "Ready", false, "ThemeNotFound", theme_missing);
  } else {
    weir_text message = {0};
    weir_text_printf(&message, "%lld of %lld replicas ready", (long long)ready, (long long)spec->replicas);
    bool holds = ready >= spec->replicas;
    weir_write_condition(w, "Ready", holds, holds ? "ReplicasReady" : "ReplicasNotReady", message.ptr);
    weir_text_free(&message);
  }
  weir_end_array(w);
  weir_end_object(w);
}

bool weir_reconcile(const weir_request *req, weir_answer *answer, weir_error *err) {
  blog_spec spec;
  if (!decode(req->parent, &spec, err)) return false;
  const char *name = weir_string(weir_path(req->parent, "metadata.name"));
  if (!validate(name ? name : "", &spec, err)) return false;

  /* The theme's CSS, or why it is missing. */
  const char *css = NULL;
  weir_text theme_missing = {0};
  if (spec.theme) {
    const weir_json *theme = weir_find(req->related, req->n_related, "v1", "ConfigMap", spec.theme);
    css = weir_string(weir_get(weir_get(theme, "data"), STYLE_KEY));
    if (!theme) {
      weir_text_printf(&theme_missing, "theme ConfigMap %s does not exist", spec.theme);
    } else if (!css) {
      weir_text_printf(&theme_missing, "theme ConfigMap %s has no key " STYLE_KEY, spec.theme);
    }
  }
  /* The posts: selected ConfigMaps with a title (the theme arrives in the same list, so match
   * again), in page order by name. */
  const weir_json **posts = malloc((req->n_related + 1) * sizeof *posts);
  if (!posts) abort();
  size_t n_posts = 0;
  for (size_t i = 0; spec.posts && i < req->n_related; i++) {
    const weir_json *cm = req->related[i];
    const char *kind = weir_string(weir_get(cm, "kind"));
    if (kind && strcmp(kind, "ConfigMap") == 0 && weir_labels_match(spec.posts, weir_path(cm, "metadata.labels")) &&
        weir_string(weir_get(weir_get(cm, "data"), POST_TITLE_KEY))) {
      posts[n_posts++] = cm;
    }
  }
  qsort(posts, n_posts, sizeof *posts, by_name);

  weir_text text = {0};
  page(&text, spec.title, css, posts, n_posts);
  char hash[65];
  weir_sha256_hex(text.ptr, text.len, hash);
  hash[16] = '\0'; /* on the pod template, so a new page rolls the pods */

  page_config_map(weir_child(answer), name, &text);
  web_deployment(weir_child(answer), name, &spec, hash);
  web_service(weir_child(answer), name);
  const weir_json *current = weir_find(req->children, req->n_children, "apps/v1", "Deployment", name);
  blog_status(weir_status(answer), req->parent, &spec, current, theme_missing.ptr);
  /* Requeue stays done even while pods start: readiness only changes through the Deployment's
   * status, which the host watches, so polling adds nothing. */
  weir_text_free(&text);
  weir_text_free(&theme_missing);
  free(posts);
  return true;
}

/* Nothing outside the cluster: the children go with the Blog through their owner references.
 * The finalizer makes the host's path run. */
bool weir_finalize(const weir_request *req, weir_answer *answer, weir_error *err) {
  blog_spec spec;
  if (!decode(req->parent, &spec, err)) return false;
  weir_log(WEIR_INFO, "Blog %s deleted; its %zu children are garbage-collected by their owner references",
           weir_string(weir_path(req->parent, "metadata.name")), req->n_children);
  weir_finalized(answer);
  return true;
}
