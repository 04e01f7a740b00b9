/* Parses JSON text (RFC 8259) into a read-only tree, and reads values out of it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Deeper nesting than this is refused rather than risking the guest's stack. */
#define MAX_DEPTH 256

struct weir_json {
  weir_type type;
  bool boolean;
  /* Numbers: `integral` when written without fraction or exponent and in int64's range. */
  bool integral;
  int64_t integer;
  double number;
  /* Strings: decoded UTF-8, NUL-terminated, `len` bytes. */
  char *str;
  /* Strings: bytes; arrays and objects: elements. */
  size_t len;
  /* Arrays and objects: the elements (objects: the members' values, `keys` beside them). */
  weir_json *items;
  char **keys;
};

typedef struct parser {
  const char *at;
  const char *end;
  const char *error;
} parser;

static void skip_space(parser *p) {
  while (p->at < p->end && (*p->at == ' ' || *p->at == '\t' || *p->at == '\n' || *p->at == '\r')) p->at++;
}

static bool fail(parser *p, const char *why) {
  if (!p->error) p->error = why;
  return false;
}

static bool literal(parser *p, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(p->end - p->at) < n || memcmp(p->at, word, n) != 0) return fail(p, "invalid literal");
  p->at += n;
  return true;
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Four hex digits after `\u`. */
static bool read_hex4(parser *p, uint32_t *out) {
  if (p->end - p->at < 4) return fail(p, "truncated \\u escape");
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) {
    int d = hex_digit(p->at[i]);
    if (d < 0) return fail(p, "invalid \\u escape");
    v = v << 4 | (uint32_t)d;
  }
  p->at += 4;
  *out = v;
  return true;
}

static void put_utf8(weir_text *t, uint32_t c) {
  char b[4];
  size_t n;
  if (c < 0x80) {
    b[0] = (char)c;
    n = 1;
  } else if (c < 0x800) {
    b[0] = (char)(0xC0 | c >> 6);
    b[1] = (char)(0x80 | (c & 0x3F));
    n = 2;
  } else if (c < 0x10000) {
    b[0] = (char)(0xE0 | c >> 12);
    b[1] = (char)(0x80 | (c >> 6 & 0x3F));
    b[2] = (char)(0x80 | (c & 0x3F));
    n = 3;
  } else {
    b[0] = (char)(0xF0 | c >> 18);
    b[1] = (char)(0x80 | (c >> 12 & 0x3F));
    b[2] = (char)(0x80 | (c >> 6 & 0x3F));
    b[3] = (char)(0x80 | (c & 0x3F));
    n = 4;
  }
  weir_text_append(t, b, n);
}

/* A string after its opening quote, decoded into `t`. */
static bool read_string(parser *p, weir_text *t) {
  weir_text_append(t, "", 0);
  for (;;) {
    const char *run = p->at;
    while (p->at < p->end && *p->at != '"' && *p->at != '\\' && (unsigned char)*p->at >= 0x20) p->at++;
    weir_text_append(t, run, (size_t)(p->at - run));
    if (p->at >= p->end) return fail(p, "unterminated string");
    char c = *p->at++;
    if (c == '"') return true;
    if (c != '\\') return fail(p, "control character in string");
    if (p->at >= p->end) return fail(p, "unterminated string");
    char e = *p->at++;
    switch (e) {
      case '"': weir_text_append(t, "\"", 1); break;
      case '\\': weir_text_append(t, "\\", 1); break;
      case '/': weir_text_append(t, "/", 1); break;
      case 'b': weir_text_append(t, "\b", 1); break;
      case 'f': weir_text_append(t, "\f", 1); break;
      case 'n': weir_text_append(t, "\n", 1); break;
      case 'r': weir_text_append(t, "\r", 1); break;
      case 't': weir_text_append(t, "\t", 1); break;
      case 'u': {
        uint32_t c1, c2;
        if (!read_hex4(p, &c1)) return false;
        if (c1 >= 0xDC00 && c1 <= 0xDFFF) return fail(p, "lone trailing surrogate");
        if (c1 >= 0xD800 && c1 <= 0xDBFF) {
          if (p->end - p->at < 2 || p->at[0] != '\\' || p->at[1] != 'u') return fail(p, "lone leading surrogate");
          p->at += 2;
          if (!read_hex4(p, &c2)) return false;
          if (c2 < 0xDC00 || c2 > 0xDFFF) return fail(p, "lone leading surrogate");
          c1 = 0x10000 + ((c1 - 0xD800) << 10) + (c2 - 0xDC00);
        }
        put_utf8(t, c1);
        break;
      }
      default: return fail(p, "invalid escape");
    }
  }
}

static bool digits(parser *p) {
  const char *start = p->at;
  while (p->at < p->end && *p->at >= '0' && *p->at <= '9') p->at++;
  return p->at > start;
}

static bool read_number(parser *p, weir_json *v) {
  const char *start = p->at;
  bool integral = true;
  if (p->at < p->end && *p->at == '-') p->at++;
  if (p->at < p->end && *p->at == '0') {
    p->at++;
  } else if (!digits(p)) {
    return fail(p, "invalid number");
  }
  if (p->at < p->end && *p->at == '.') {
    p->at++;
    integral = false;
    if (!digits(p)) return fail(p, "invalid number");
  }
  if (p->at < p->end && (*p->at == 'e' || *p->at == 'E')) {
    p->at++;
    integral = false;
    if (p->at < p->end && (*p->at == '+' || *p->at == '-')) p->at++;
    if (!digits(p)) return fail(p, "invalid number");
  }
  /* strtod and strtoll need a terminated copy; numbers are short. */
  size_t n = (size_t)(p->at - start);
  char *copy = weir_xmalloc(n + 1);
  memcpy(copy, start, n);
  copy[n] = '\0';
  v->type = WEIR_NUMBER;
  v->number = strtod(copy, NULL);
  if (integral) {
    errno = 0;
    long long i = strtoll(copy, NULL, 10);
    v->integral = errno == 0;
    v->integer = i;
  }
  free(copy);
  return true;
}

static bool read_value(parser *p, weir_json *v, int depth);

/* Appends `item` to the growable array `v->items` (and `key` to `v->keys` for objects). */
static void push(weir_json *v, size_t *cap, const weir_json *item, char *key) {
  if (v->len == *cap) {
    *cap = *cap ? *cap * 2 : 4;
    v->items = weir_xrealloc(v->items, *cap * sizeof *v->items);
    if (v->type == WEIR_OBJECT) v->keys = weir_xrealloc(v->keys, *cap * sizeof *v->keys);
  }
  v->items[v->len] = *item;
  if (v->type == WEIR_OBJECT) v->keys[v->len] = key;
  v->len++;
}

static bool read_container(parser *p, weir_json *v, int depth, char close) {
  size_t cap = 0;
  v->type = close == ']' ? WEIR_ARRAY : WEIR_OBJECT;
  skip_space(p);
  if (p->at < p->end && *p->at == close) {
    p->at++;
    return true;
  }
  for (;;) {
    char *key = NULL;
    skip_space(p);
    if (v->type == WEIR_OBJECT) {
      if (p->at >= p->end || *p->at != '"') return fail(p, "expected a key");
      p->at++;
      weir_text k = {0};
      if (!read_string(p, &k)) {
        weir_text_free(&k);
        return false;
      }
      key = k.ptr;
      skip_space(p);
      if (p->at >= p->end || *p->at != ':') {
        free(key);
        return fail(p, "expected ':'");
      }
      p->at++;
    }
    weir_json item = {0};
    bool ok = read_value(p, &item, depth + 1);
    push(v, &cap, &item, key);
    if (!ok) return false;
    skip_space(p);
    if (p->at < p->end && *p->at == ',') {
      p->at++;
      continue;
    }
    if (p->at < p->end && *p->at == close) {
      p->at++;
      return true;
    }
    return fail(p, close == ']' ? "expected ',' or ']'" : "expected ',' or '}'");
  }
}

static bool read_value(parser *p, weir_json *v, int depth) {
  if (depth > MAX_DEPTH) return fail(p, "nested too deeply");
  skip_space(p);
  if (p->at >= p->end) return fail(p, "unexpected end of input");
  switch (*p->at) {
    case 'n': v->type = WEIR_NULL; return literal(p, "null");
    case 't': v->type = WEIR_BOOL; v->boolean = true; return literal(p, "true");
    case 'f': v->type = WEIR_BOOL; return literal(p, "false");
    case '"': {
      p->at++;
      weir_text t = {0};
      v->type = WEIR_STRING;
      bool ok = read_string(p, &t);
      v->str = t.ptr;
      v->len = t.len;
      return ok;
    }
    case '[': p->at++; return read_container(p, v, depth, ']');
    case '{': p->at++; return read_container(p, v, depth, '}');
    default: return read_number(p, v);
  }
}

static void release(weir_json *v) {
  for (size_t i = 0; i < v->len && (v->type == WEIR_ARRAY || v->type == WEIR_OBJECT); i++) {
    release(&v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->str);
}

weir_json *weir_parse(const char *text, size_t len, const char **error) {
  parser p = {.at = text, .end = text + len, .error = NULL};
  weir_json *root = weir_xmalloc(sizeof *root);
  memset(root, 0, sizeof *root);
  bool ok = read_value(&p, root, 0);
  if (ok) {
    skip_space(&p);
    if (p.at != p.end) ok = fail(&p, "trailing characters after the value");
  }
  if (!ok) {
    if (error) *error = p.error;
    weir_json_free(root);
    return NULL;
  }
  return root;
}

void weir_json_free(weir_json *value) {
  if (!value) return;
  release(value);
  free(value);
}

weir_type weir_type_of(const weir_json *value) { return value ? value->type : WEIR_NULL; }

const weir_json *weir_get(const weir_json *value, const char *key) {
  if (!value || value->type != WEIR_OBJECT) return NULL;
  /* The last of duplicate keys wins, as in JavaScript's JSON.parse. */
  for (size_t i = value->len; i-- > 0;) {
    if (strcmp(value->keys[i], key) == 0) return &value->items[i];
  }
  return NULL;
}

const weir_json *weir_path(const weir_json *value, const char *path) {
  char step[256];
  while (value && *path) {
    const char *dot = strchr(path, '.');
    size_t n = dot ? (size_t)(dot - path) : strlen(path);
    if (n >= sizeof step) return NULL;
    memcpy(step, path, n);
    step[n] = '\0';
    value = weir_get(value, step);
    path += dot ? n + 1 : n;
  }
  return value;
}

const char *weir_string(const weir_json *value) {
  return value && value->type == WEIR_STRING ? value->str : NULL;
}

size_t weir_string_len(const weir_json *value) {
  return value && value->type == WEIR_STRING ? value->len : 0;
}

bool weir_int(const weir_json *value, int64_t *out) {
  if (!value || value->type != WEIR_NUMBER || !value->integral) return false;
  *out = value->integer;
  return true;
}

double weir_number(const weir_json *value) {
  return value && value->type == WEIR_NUMBER ? value->number : 0;
}

bool weir_bool(const weir_json *value) { return value && value->type == WEIR_BOOL && value->boolean; }

size_t weir_len(const weir_json *value) {
  return value && (value->type == WEIR_ARRAY || value->type == WEIR_OBJECT) ? value->len : 0;
}

const weir_json *weir_at(const weir_json *value, size_t i) {
  return i < weir_len(value) ? &value->items[i] : NULL;
}

const char *weir_key_at(const weir_json *value, size_t i) {
  return value && value->type == WEIR_OBJECT && i < value->len ? value->keys[i] : NULL;
}

bool weir_json_integral(const weir_json *value) {
  return value && value->type == WEIR_NUMBER && value->integral;
}
