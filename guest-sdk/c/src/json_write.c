/* Writes one JSON value as text, placing commas and colons, and says when it is incomplete. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Deeper nesting than any Kubernetes object needs is a plugin bug, reported as one. */
#define MAX_DEPTH 64

struct weir_writer {
  weir_text text;
  /* Per open container: is it an object, and has it no element yet? */
  bool object[MAX_DEPTH];
  bool empty[MAX_DEPTH];
  int depth;
  /* An object's key was written and waits for its value. */
  bool keyed;
  /* A whole top-level value was written. */
  bool complete;
  /* The first misuse, if any. */
  const char *problem;
};

weir_writer *weir_writer_new(void) {
  weir_writer *w = weir_xmalloc(sizeof *w);
  memset(w, 0, sizeof *w);
  weir_text_append(&w->text, "", 0);
  return w;
}

void weir_writer_free(weir_writer *w) {
  if (!w) return;
  weir_text_free(&w->text);
  free(w);
}

const char *weir_writer_text(const weir_writer *w, size_t *len) {
  *len = w->text.len;
  return w->text.ptr;
}

const char *weir_writer_problem(const weir_writer *w) {
  if (w->problem) return w->problem;
  if (!w->complete) return w->depth > 0 ? "an object or array is left open" : "nothing was written";
  return NULL;
}

static void misuse(weir_writer *w, const char *why) {
  if (!w->problem) w->problem = why;
}

/* Before a value: the separator its position needs; false if no value may go here. */
static bool before_value(weir_writer *w) {
  if (w->problem) return false;
  if (w->depth == 0) {
    if (w->complete) {
      misuse(w, "a second value after the complete one");
      return false;
    }
    return true;
  }
  if (w->object[w->depth - 1]) {
    if (!w->keyed) {
      misuse(w, "a value in an object without weir_key before it");
      return false;
    }
    w->keyed = false;
    return true;
  }
  if (!w->empty[w->depth - 1]) weir_text_append(&w->text, ",", 1);
  w->empty[w->depth - 1] = false;
  return true;
}

static void after_value(weir_writer *w) {
  if (w->depth == 0) w->complete = true;
}

static void quoted(weir_text *t, const char *s, size_t len) {
  static const char hex[] = "0123456789abcdef";
  weir_text_append(t, "\"", 1);
  size_t run = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    const char *esc = NULL;
    char u[6];
    switch (c) {
      case '"': esc = "\\\""; break;
      case '\\': esc = "\\\\"; break;
      case '\n': esc = "\\n"; break;
      case '\r': esc = "\\r"; break;
      case '\t': esc = "\\t"; break;
      case '\b': esc = "\\b"; break;
      case '\f': esc = "\\f"; break;
      default:
        if (c < 0x20) {
          memcpy(u, "\\u00", 4);
          u[4] = hex[c >> 4];
          u[5] = hex[c & 0xF];
        }
    }
    if (!esc && c >= 0x20) continue;
    weir_text_append(t, s + run, i - run);
    if (esc) {
      weir_text_puts(t, esc);
    } else {
      weir_text_append(t, u, 6);
    }
    run = i + 1;
  }
  weir_text_append(t, s + run, len - run);
  weir_text_append(t, "\"", 1);
}

static void open_container(weir_writer *w, bool object) {
  if (!before_value(w)) return;
  if (w->depth == MAX_DEPTH) {
    misuse(w, "nested too deeply");
    return;
  }
  w->object[w->depth] = object;
  w->empty[w->depth] = true;
  w->depth++;
  weir_text_append(&w->text, object ? "{" : "[", 1);
}

static void close_container(weir_writer *w, bool object) {
  if (w->problem) return;
  if (w->depth == 0 || w->object[w->depth - 1] != object) {
    misuse(w, object ? "weir_end_object without its weir_begin_object" : "weir_end_array without its weir_begin_array");
    return;
  }
  if (w->keyed) {
    misuse(w, "a key without a value");
    return;
  }
  w->depth--;
  weir_text_append(&w->text, object ? "}" : "]", 1);
  after_value(w);
}

void weir_begin_object(weir_writer *w) { open_container(w, true); }
void weir_end_object(weir_writer *w) { close_container(w, true); }
void weir_begin_array(weir_writer *w) { open_container(w, false); }
void weir_end_array(weir_writer *w) { close_container(w, false); }

void weir_key(weir_writer *w, const char *key) {
  if (w->problem) return;
  if (w->depth == 0 || !w->object[w->depth - 1]) {
    misuse(w, "weir_key outside an object");
    return;
  }
  if (w->keyed) {
    misuse(w, "two keys without a value between them");
    return;
  }
  if (!w->empty[w->depth - 1]) weir_text_append(&w->text, ",", 1);
  w->empty[w->depth - 1] = false;
  quoted(&w->text, key, strlen(key));
  weir_text_append(&w->text, ":", 1);
  w->keyed = true;
}

void weir_write_string_len(weir_writer *w, const char *s, size_t len) {
  if (!before_value(w)) return;
  quoted(&w->text, s, len);
  after_value(w);
}

void weir_write_string(weir_writer *w, const char *s) { weir_write_string_len(w, s, strlen(s)); }

void weir_write_stringf(weir_writer *w, const char *format, ...) {
  weir_text t = {0};
  va_list args;
  va_start(args, format);
  int n = vsnprintf(NULL, 0, format, args);
  va_end(args);
  if (n > 0) {
    char *buf = weir_xmalloc((size_t)n + 1);
    va_start(args, format);
    vsnprintf(buf, (size_t)n + 1, format, args);
    va_end(args);
    t.ptr = buf;
    t.len = (size_t)n;
  }
  weir_write_string_len(w, t.ptr ? t.ptr : "", t.len);
  free(t.ptr);
}

void weir_write_int(weir_writer *w, int64_t n) {
  if (!before_value(w)) return;
  weir_text_printf(&w->text, "%" PRId64, n);
  after_value(w);
}

void weir_write_bool(weir_writer *w, bool b) {
  if (!before_value(w)) return;
  weir_text_puts(&w->text, b ? "true" : "false");
  after_value(w);
}

void weir_write_null(weir_writer *w) {
  if (!before_value(w)) return;
  weir_text_puts(&w->text, "null");
  after_value(w);
}

void weir_write_json(weir_writer *w, const weir_json *value) {
  int64_t i;
  switch (weir_type_of(value)) {
    case WEIR_NULL: weir_write_null(w); break;
    case WEIR_BOOL: weir_write_bool(w, weir_bool(value)); break;
    case WEIR_STRING: weir_write_string_len(w, weir_string(value), weir_string_len(value)); break;
    case WEIR_NUMBER:
      if (weir_int(value, &i)) {
        weir_write_int(w, i);
      } else if (before_value(w)) {
        /* 17 significant digits read back as the same double. */
        weir_text_printf(&w->text, "%.17g", weir_number(value));
        after_value(w);
      }
      break;
    case WEIR_ARRAY:
      weir_begin_array(w);
      for (size_t k = 0; k < weir_len(value); k++) weir_write_json(w, weir_at(value, k));
      weir_end_array(w);
      break;
    case WEIR_OBJECT:
      weir_begin_object(w);
      for (size_t k = 0; k < weir_len(value); k++) {
        weir_key(w, weir_key_at(value, k));
        weir_write_json(w, weir_at(value, k));
      }
      weir_end_object(w);
      break;
  }
}

void weir_write_condition(weir_writer *w, const char *type, bool holds, const char *reason, const char *message) {
  weir_begin_object(w);
  weir_key(w, "type");
  weir_write_string(w, type);
  weir_key(w, "status");
  weir_write_string(w, holds ? "True" : "False");
  weir_key(w, "reason");
  weir_write_string(w, reason);
  weir_key(w, "message");
  weir_write_string(w, message);
  weir_end_object(w);
}
