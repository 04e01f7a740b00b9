/* What the SDK's own files share and a plugin does not see: allocation, answers, selections. */
#ifndef WEIR_INTERNAL_H
#define WEIR_INTERNAL_H

#include "../weir.h"

/* malloc and realloc that trap on exhaustion: the host reports the trap as the call's failure. */
void *weir_xmalloc(size_t n);
void *weir_xrealloc(void *p, size_t n);
char *weir_xstrdup(const char *s);

/* Whether a number was written as an integer in int64's range. */
bool weir_json_integral(const weir_json *value);

/* A writer's text, and why it is not one complete JSON value (NULL when it is). */
const char *weir_writer_text(const weir_writer *w, size_t *len);
const char *weir_writer_problem(const weir_writer *w);
weir_writer *weir_writer_new(void);
void weir_writer_free(weir_writer *w);

typedef enum requeue_tag { REQUEUE_DONE, REQUEUE_NOW, REQUEUE_AFTER } requeue_tag;

struct weir_answer {
  weir_writer **children;
  size_t n_children;
  size_t cap_children;
  weir_writer *status;
  requeue_tag requeue;
  uint64_t after_ms;
  bool hold_children;
  bool finalized;
};

struct weir_error {
  bool set;
  weir_error_kind kind;
  char *message;
};

typedef enum selector_op { OP_IN, OP_NOT_IN, OP_EXISTS, OP_DOES_NOT_EXIST } selector_op;

typedef struct requirement {
  char *key;
  selector_op op;
  char **values;
  size_t n_values;
} requirement;

/* A label selector checked for shape; matchLabels sorted by key. */
typedef struct label_selector {
  char **keys;
  char **values;
  size_t n_labels;
  requirement *reqs;
  size_t n_reqs;
} label_selector;

typedef struct selection {
  char *api_version;
  char *kind;
  char *namespace_; /* NULL: the parent's */
  char *name;       /* by name; NULL: by labels */
  label_selector labels;
} selection;

struct weir_selections {
  selection *items;
  size_t len;
  size_t cap;
};

/* Parses a selector's JSON shape; false with `err` set (permanent) when malformed. */
bool weir_selector_parse(const weir_json *json, label_selector *out, weir_error *err);
void weir_selector_free(label_selector *s);
bool weir_selector_matches(const label_selector *s, const weir_json *labels);

void weir_answer_free(weir_answer *a);
void weir_selections_free(weir_selections *s);
void weir_error_free(weir_error *e);

#endif
