/* The Weir guest SDK for C: write a reconciler plugin as four C functions.
 *
 * A plugin is a WebAssembly component implementing `weir:reconciler@0.3.0`
 * (wit/0.3.0/reconciler.wit). This header is all a plugin author includes;
 * `weir-c build` (beside it) compiles the plugin, this SDK and the contract's
 * C bindings (wit-bindgen's, kept in bindings/) with clang for wasm32-wasi and
 * links a component with wasm-component-ld (WASI preview 1 adapted to preview 2).
 *
 * The plugin defines:
 *
 *   const weir_plugin WEIR_PLUGIN = { ... };          who it is, what it reads and writes
 *   bool weir_reconcile(const weir_request *, weir_answer *, weir_error *);
 *   bool weir_select(const weir_json *parent, weir_selections *, weir_error *);   optional
 *   bool weir_finalize(const weir_request *, weir_answer *, weir_error *);        optional
 *
 * Each returns true with its answer filled, or false after `weir_fail` said why.
 * A plugin without `weir_select` reads nothing beyond its children; one without
 * `weir_finalize` lets its parent go at once (the SDK's defaults, weak symbols).
 *
 * Objects cross the boundary as JSON text: the SDK parses the parent, children
 * and related objects into read-only `weir_json` trees (`weir_get`, `weir_path`,
 * `weir_string`, `weir_int`...) and the plugin writes its children and status
 * with a `weir_writer` (`weir_begin_object`, `weir_key`, `weir_write_string`...).
 * Every string is UTF-8; every pointer the SDK hands out lives until the call
 * returns (the host runs each call in a fresh instance). An allocation that
 * fails traps: the host reports the call as failed.
 */
#ifndef WEIR_H
#define WEIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The SDK's version: its major.minor is the contract it implements. */
#define WEIR_SDK_VERSION "0.3.0"

/* ---- Who the plugin is (describe) ------------------------------------- */

/** A Kubernetes resource type: `group` is "" for the core group. */
typedef struct weir_kind {
  const char *group;
  const char *version;
  const char *kind;
  const char *plural;
  bool namespaced;
} weir_kind;

/** Kinds every plugin meets, as initializers: `.children = {WEIR_CONFIG_MAP, WEIR_SERVICE}`. */
#define WEIR_CONFIG_MAP {"", "v1", "ConfigMap", "configmaps", true}
#define WEIR_DEPLOYMENT {"apps", "v1", "Deployment", "deployments", true}
#define WEIR_SERVICE {"", "v1", "Service", "services", true}
#define WEIR_SECRET {"", "v1", "Secret", "secrets", true}
#define WEIR_NAMESPACE {"", "v1", "Namespace", "namespaces", false}

/** Most kinds a plugin declares as children or as related. */
#define WEIR_MAX_KINDS 16

/** What `describe` answers. Unused kind slots stay zero (`kind == NULL` ends a list). */
typedef struct weir_plugin {
  /** Plugin name: logs, metrics and the field manager `weir/<name>`. */
  const char *name;
  /** Plugin version (semver). */
  const char *version;
  /** The kind it reconciles. */
  weir_kind parent;
  /** The kinds it may create; anything else it answers is refused. */
  weir_kind children[WEIR_MAX_KINDS];
  /** The kinds it may read beyond its children (read-only). */
  weir_kind related[WEIR_MAX_KINDS];
  /** If set, the host holds this finalizer on every parent and calls `weir_finalize`. */
  const char *finalizer;
} weir_plugin;

/** Defined by the plugin. The CRD comes from `weir-c build --crd FILE`. */
extern const weir_plugin WEIR_PLUGIN;

/* ---- Reading JSON ------------------------------------------------------ */

/** The type of a JSON value. */
typedef enum weir_type { WEIR_NULL, WEIR_BOOL, WEIR_NUMBER, WEIR_STRING, WEIR_ARRAY, WEIR_OBJECT } weir_type;

/** A parsed JSON value (read-only; owned by the SDK). */
typedef struct weir_json weir_json;

/** Parses `len` bytes of JSON text; NULL (and `*error` set to a static message) if it is not JSON. */
weir_json *weir_parse(const char *text, size_t len, const char **error);
/** Frees a tree from `weir_parse`. */
void weir_json_free(weir_json *value);

/** The value's type; WEIR_NULL for a NULL pointer (an absent value reads as null). */
weir_type weir_type_of(const weir_json *value);
/** The member `key` of an object; NULL if `value` is not an object or has no such member. */
const weir_json *weir_get(const weir_json *value, const char *key);
/** Members by a dotted path, e.g. "status.readyReplicas"; NULL where a step is missing (or
 * longer than 255 bytes). Keys containing dots (labels, `style.css`) need `weir_get`. */
const weir_json *weir_path(const weir_json *value, const char *path);
/** A string's text (NUL-terminated); NULL unless `value` is a string. */
const char *weir_string(const weir_json *value);
/** A string's length in bytes (it may hold NUL bytes); 0 unless a string. */
size_t weir_string_len(const weir_json *value);
/** Stores an integral number in `*out`; false if `value` is not a number without fraction
 * or exponent that fits in 64 bits. */
bool weir_int(const weir_json *value, int64_t *out);
/** A number as a double; 0 unless a number. */
double weir_number(const weir_json *value);
/** A boolean's value; false unless `true`. */
bool weir_bool(const weir_json *value);
/** The number of elements of an array or members of an object; 0 otherwise. */
size_t weir_len(const weir_json *value);
/** Element `i` of an array, or the value of member `i` of an object; NULL past the end. */
const weir_json *weir_at(const weir_json *value, size_t i);
/** The key of member `i` of an object; NULL past the end or for a non-object. */
const char *weir_key_at(const weir_json *value, size_t i);

/* ---- Writing JSON ------------------------------------------------------ */

/** Writes one JSON value as text; commas are placed for you. */
typedef struct weir_writer weir_writer;

void weir_begin_object(weir_writer *w);
void weir_end_object(weir_writer *w);
void weir_begin_array(weir_writer *w);
void weir_end_array(weir_writer *w);
/** The key of the next member of the open object. */
void weir_key(weir_writer *w, const char *key);
void weir_write_string(weir_writer *w, const char *s);
/** A string of `len` bytes (may hold NUL bytes). */
void weir_write_string_len(weir_writer *w, const char *s, size_t len);
/** A string from a printf format. */
void weir_write_stringf(weir_writer *w, const char *format, ...) __attribute__((format(printf, 2, 3)));
void weir_write_int(weir_writer *w, int64_t n);
void weir_write_bool(weir_writer *w, bool b);
void weir_write_null(weir_writer *w);
/** A copy of a parsed value (a selector from the spec, a label map...). */
void weir_write_json(weir_writer *w, const weir_json *value);

/* ---- One call's input and answer -------------------------------------- */

/** The input of `weir_reconcile` and `weir_finalize`: the present, as cached. */
typedef struct weir_request {
  const weir_json *parent;
  const weir_json *const *children;
  size_t n_children;
  /** The selected related objects that exist (Secrets without their data). */
  const weir_json *const *related;
  size_t n_related;
  /** The finalizer held on the parent (finalize only; NULL in reconcile). */
  const char *finalizer;
} weir_request;

/** The object of `api_version`/`kind` named `name` in `objects`, or NULL. */
const weir_json *weir_find(const weir_json *const *objects, size_t n, const char *api_version,
                           const char *kind, const char *name);

/** The answer being built: children, status, requeue (and, in finalize, `finalized`). */
typedef struct weir_answer weir_answer;

/** A writer for one more child manifest (an object with apiVersion, kind, metadata.name).
 * In finalize, adding a child answers `some(children)`: see `weir_hold_children`. */
weir_writer *weir_child(weir_answer *answer);
/** A writer for the parent's desired `status` object; every call returns the same writer (the
 * status is one JSON value: a second one written is the plugin's error). */
weir_writer *weir_status(weir_answer *answer);
/** Ask again after `ms` milliseconds (default: done, wait for the next change). */
void weir_requeue_after(weir_answer *answer, uint64_t ms);
/** Ask again as soon as the host's hot-loop guard allows. */
void weir_requeue_now(weir_answer *answer);
/** Finalize only: answer the children list even if empty (no child added: delete them all).
 * Without a child or this call, finalize leaves the children as they are. */
void weir_hold_children(weir_answer *answer);
/** Finalize only: cleanup is complete; the host releases its finalizer. */
void weir_finalized(weir_answer *answer);

/* ---- Errors and logs --------------------------------------------------- */

/** Whether retrying can help. */
typedef enum weir_error_kind { WEIR_TRANSIENT, WEIR_PERMANENT } weir_error_kind;

/** Why a call failed; set it with `weir_fail`. */
typedef struct weir_error weir_error;

/** Records the error and returns false, for `return weir_fail(err, WEIR_PERMANENT, ...)`. */
bool weir_fail(weir_error *err, weir_error_kind kind, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/** Log levels of the host's `log` import. */
typedef enum weir_log_level { WEIR_TRACE, WEIR_DEBUG, WEIR_INFO, WEIR_WARN, WEIR_ERROR } weir_log_level;

/** A log line in the span of the running reconcile. */
void weir_log(weir_log_level level, const char *format, ...) __attribute__((format(printf, 2, 3)));

/* ---- Related objects (select) ------------------------------------------ */

/** The selections being built by `weir_select`. */
typedef struct weir_selections weir_selections;

/** Reads the object `api_version`/`kind` named `name` (existing or not yet).
 * `namespace` NULL: the parent's (cluster-wide for a cluster-scoped kind). */
void weir_select_name(weir_selections *out, const char *api_version, const char *kind,
                      const char *namespace_, const char *name);
/** Reads every object whose labels match `selector`, a Kubernetes label selector in its JSON
 * shape (`matchLabels`, `matchExpressions`; NULL or `{}` selects every object). False, with
 * `err` set (permanent, naming the field), if the selector is malformed. */
bool weir_select_labels(weir_selections *out, const char *api_version, const char *kind,
                        const char *namespace_, const weir_json *selector, weir_error *err);

/** Whether `labels` (an object of strings, or NULL) match `selector` as the host matches them.
 * A malformed selector matches nothing. */
bool weir_labels_match(const weir_json *selector, const weir_json *labels);

/* ---- Helpers ----------------------------------------------------------- */

/** Writes a condition object {type, status "True"/"False", reason, message}. */
void weir_write_condition(weir_writer *w, const char *type, bool holds, const char *reason,
                          const char *message);

/** The SHA-256 of `len` bytes as 64 lowercase hex digits and a NUL, into `hex[65]`. */
void weir_sha256_hex(const void *data, size_t len, char hex[65]);

/** A growable text buffer, for pages and messages built piece by piece. */
typedef struct weir_text {
  char *ptr;
  size_t len;
  size_t cap;
} weir_text;

/** Appends `len` bytes (NUL-terminated after each append). */
void weir_text_append(weir_text *t, const char *s, size_t len);
/** Appends a NUL-terminated string. */
void weir_text_puts(weir_text *t, const char *s);
/** Appends printf output. */
void weir_text_printf(weir_text *t, const char *format, ...) __attribute__((format(printf, 2, 3)));
/** Frees the buffer and empties it. */
void weir_text_free(weir_text *t);

#ifdef __cplusplus
}
#endif

#endif /* WEIR_H */
