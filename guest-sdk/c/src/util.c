/* Memory that traps when exhausted, growable text, a call's error, and SHA-256 (FIPS 180-4). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void *weir_xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) abort();
  return p;
}

void *weir_xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) abort();
  return q;
}

char *weir_xstrdup(const char *s) {
  size_t n = strlen(s);
  char *d = weir_xmalloc(n + 1);
  memcpy(d, s, n + 1);
  return d;
}

bool weir_fail(weir_error *err, weir_error_kind kind, const char *format, ...) {
  weir_text t = {0};
  va_list args;
  va_start(args, format);
  int n = vsnprintf(NULL, 0, format, args);
  va_end(args);
  t.ptr = weir_xmalloc(n > 0 ? (size_t)n + 1 : 1);
  t.ptr[0] = '\0';
  if (n > 0) {
    va_start(args, format);
    vsnprintf(t.ptr, (size_t)n + 1, format, args);
    va_end(args);
  }
  /* The first failure is the cause; a later one (a caller adding nothing) does not replace it. */
  if (err->set) {
    free(t.ptr);
    return false;
  }
  err->set = true;
  err->kind = kind;
  err->message = t.ptr;
  return false;
}

void weir_error_free(weir_error *e) {
  free(e->message);
  memset(e, 0, sizeof *e);
}

void weir_text_append(weir_text *t, const char *s, size_t len) {
  if (t->len + len + 1 > t->cap) {
    size_t cap = t->cap ? t->cap : 64;
    while (cap < t->len + len + 1) cap *= 2;
    t->ptr = weir_xrealloc(t->ptr, cap);
    t->cap = cap;
  }
  if (len) memcpy(t->ptr + t->len, s, len);
  t->len += len;
  t->ptr[t->len] = '\0';
}

void weir_text_puts(weir_text *t, const char *s) { weir_text_append(t, s, strlen(s)); }

void weir_text_printf(weir_text *t, const char *format, ...) {
  va_list args;
  va_start(args, format);
  int n = vsnprintf(NULL, 0, format, args);
  va_end(args);
  if (n <= 0) return;
  weir_text_append(t, "", 0);
  if (t->len + (size_t)n + 1 > t->cap) {
    t->cap = t->len + (size_t)n + 1;
    t->ptr = weir_xrealloc(t->ptr, t->cap);
  }
  va_start(args, format);
  vsnprintf(t->ptr + t->len, (size_t)n + 1, format, args);
  va_end(args);
  t->len += (size_t)n;
}

void weir_text_free(weir_text *t) {
  free(t->ptr);
  t->ptr = NULL;
  t->len = t->cap = 0;
}

/* SHA-256: the first 32 bits of the fractional parts of the cube roots of the first 64 primes. */
static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, int n) { return x >> n | x << (32 - n); }

static void compress(uint32_t h[8], const unsigned char block[64]) {
  uint32_t w[64];
  for (int i = 0; i < 16; i++) {
    w[i] = (uint32_t)block[4 * i] << 24 | (uint32_t)block[4 * i + 1] << 16 | (uint32_t)block[4 * i + 2] << 8 |
           (uint32_t)block[4 * i + 3];
  }
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ w[i - 15] >> 3;
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ w[i - 2] >> 10;
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
  for (int i = 0; i < 64; i++) {
    uint32_t t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
    uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    k = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

void weir_sha256_hex(const void *data, size_t len, char hex[65]) {
  /* The first 32 bits of the fractional parts of the square roots of the first 8 primes. */
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const unsigned char *bytes = data;
  size_t full = len / 64 * 64;
  for (size_t i = 0; i < full; i += 64) compress(h, bytes + i);
  /* The tail, a 1 bit, zeros, and the length in bits (big-endian), in one or two blocks. */
  unsigned char last[128] = {0};
  size_t rest = len - full;
  memcpy(last, bytes + full, rest);
  last[rest] = 0x80;
  size_t blocks = rest + 1 + 8 <= 64 ? 1 : 2;
  uint64_t bits = (uint64_t)len * 8;
  for (int i = 0; i < 8; i++) last[blocks * 64 - 1 - i] = (unsigned char)(bits >> (8 * i));
  for (size_t i = 0; i < blocks; i++) compress(h, last + 64 * i);
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    unsigned char byte = (unsigned char)(h[i / 4] >> (24 - 8 * (i % 4)));
    hex[2 * i] = digits[byte >> 4];
    hex[2 * i + 1] = digits[byte & 0xF];
  }
  hex[64] = '\0';
}
