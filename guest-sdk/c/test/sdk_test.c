/* The C SDK's JSON reader and writer, selectors, answers and SHA-256, natively. */
#include <stdlib.h>

#include "../src/internal.h"
#include "check.h"

/* The host's `log` import, for code that logs (guest.c carries the real one). */
void weir_log(weir_log_level level, const char *format, ...) {
  (void)level;
  (void)format;
}

static weir_json *parse(const char *text) {
  const char *error = NULL;
  weir_json *v = weir_parse(text, strlen(text), &error);
  if (!v) fprintf(stderr, "parse %s: %s\n", text, error);
  return v;
}

/* The JSON `text` parsed and written back. */
static char *round_trip(const char *text) {
  weir_json *v = parse(text);
  weir_writer *w = weir_writer_new();
  weir_write_json(w, v);
  size_t len;
  char *out = weir_xstrdup(weir_writer_text(w, &len));
  weir_writer_free(w);
  weir_json_free(v);
  return out;
}

static void reading_values_by_key_path_and_index(void) {
  weir_json *v = parse(" {\"metadata\": {\"name\": \"my-blog\", \"generation\": 3},"
                       " \"list\": [1, -2.5, true, null, \"x\"], \"dup\": 1, \"dup\": 2} ");
  CHECK(v != NULL);
  CHECK_STR(weir_string(weir_path(v, "metadata.name")), "my-blog");
  int64_t n = 0;
  CHECK(weir_int(weir_path(v, "metadata.generation"), &n) && n == 3);
  CHECK(weir_path(v, "metadata.missing.deeper") == NULL);
  const weir_json *list = weir_get(v, "list");
  CHECK(weir_len(list) == 5);
  CHECK(!weir_int(weir_at(list, 1), &n) && weir_number(weir_at(list, 1)) == -2.5);
  CHECK(weir_bool(weir_at(list, 2)));
  CHECK(weir_type_of(weir_at(list, 3)) == WEIR_NULL);
  CHECK(weir_at(list, 5) == NULL);
  CHECK(weir_int(weir_get(v, "dup"), &n) && n == 2); /* the last of duplicate keys */
  CHECK_STR(weir_key_at(v, 1), "list");
  weir_json_free(v);
}

static void escapes_decode_to_utf8_and_numbers_keep_their_kind(void) {
  weir_json *v = parse("[\"a\\u00e9\\ud83d\\ude00\\n\\\"\\/\", \"nul\\u0000byte\", 9223372036854775807, "
                       "9223372036854775808, 1e2, -0]");
  CHECK_STR(weir_string(weir_at(v, 0)), "a\xc3\xa9\xf0\x9f\x98\x80\n\"/");
  CHECK(weir_string_len(weir_at(v, 1)) == 8);
  int64_t n;
  CHECK(weir_int(weir_at(v, 2), &n) && n == INT64_MAX);
  CHECK(!weir_int(weir_at(v, 3), &n)); /* out of range: a double only */
  CHECK(!weir_int(weir_at(v, 4), &n) && weir_number(weir_at(v, 4)) == 100);
  CHECK(weir_int(weir_at(v, 5), &n) && n == 0);
  weir_json_free(v);
}

static void text_that_is_not_json_is_refused(void) {
  const char *bad[] = {"", "{", "[1,]", "{\"a\" 1}", "\"\\ud800\"", "\"\\udc00x\"", "01", "1.", "-", "tru",
                       "\"tab\there\"", "[1] 2", "{\"a\":1,}", "\"\\x\"", "nul"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    const char *error = NULL;
    weir_json *v = weir_parse(bad[i], strlen(bad[i]), &error);
    CHECK(v == NULL && error != NULL);
    if (v) fprintf(stderr, "accepted: %s\n", bad[i]);
  }
  /* Nesting past the limit is refused, not a stack overflow. */
  char deep[2001];
  memset(deep, '[', 2000);
  deep[2000] = '\0';
  CHECK(weir_parse(deep, 2000, NULL) == NULL);
}

static void written_json_reads_back_the_same(void) {
  char *out = round_trip("{\"a\": [1, 2.5, {\"b\": null}], \"s\": \"q\\\"\\\\\\u0001\\n\", \"t\": true}");
  CHECK_STR(out, "{\"a\":[1,2.5,{\"b\":null}],\"s\":\"q\\\"\\\\\\u0001\\n\",\"t\":true}");
  free(out);
  out = round_trip("\"\\u00e9\"");
  CHECK_STR(out, "\"\xc3\xa9\"");
  free(out);
}

static void a_writer_says_how_it_was_misused(void) {
  weir_writer *w = weir_writer_new();
  weir_begin_object(w);
  weir_write_string(w, "no key");
  CHECK_STR(weir_writer_problem(w), "a value in an object without weir_key before it");
  weir_writer_free(w);
  w = weir_writer_new();
  weir_begin_array(w);
  CHECK_STR(weir_writer_problem(w), "an object or array is left open");
  weir_end_array(w);
  CHECK(weir_writer_problem(w) == NULL);
  weir_write_int(w, 1);
  CHECK_STR(weir_writer_problem(w), "a second value after the complete one");
  weir_writer_free(w);
  w = weir_writer_new();
  CHECK_STR(weir_writer_problem(w), "nothing was written");
  weir_writer_free(w);
}

static void selectors_match_as_kubernetes_matches(void) {
  weir_json *labels = parse("{\"blog\": \"mine\", \"tier\": \"web\"}");
  struct {
    const char *selector;
    bool matches;
  } cases[] = {
      {"{}", true},
      {"{\"matchLabels\": {\"blog\": \"mine\"}}", true},
      {"{\"matchLabels\": {\"blog\": \"other\"}}", false},
      {"{\"matchExpressions\": [{\"key\": \"tier\", \"operator\": \"In\", \"values\": [\"db\", \"web\"]}]}", true},
      {"{\"matchExpressions\": [{\"key\": \"tier\", \"operator\": \"NotIn\", \"values\": [\"web\"]}]}", false},
      {"{\"matchExpressions\": [{\"key\": \"gone\", \"operator\": \"NotIn\", \"values\": [\"web\"]}]}", true},
      {"{\"matchExpressions\": [{\"key\": \"draft\", \"operator\": \"DoesNotExist\"}]}", true},
      {"{\"matchExpressions\": [{\"key\": \"blog\", \"operator\": \"Exists\"}]}", true},
      {"{\"matchExpressions\": [{\"key\": \"blog\", \"operator\": \"Near\"}]}", false}, /* malformed */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    weir_json *s = parse(cases[i].selector);
    bool got = weir_labels_match(s, labels);
    CHECK(got == cases[i].matches);
    if (got != cases[i].matches) fprintf(stderr, "  selector %s\n", cases[i].selector);
    weir_json_free(s);
  }
  weir_json_free(labels);
}

static void a_malformed_selector_is_a_permanent_error_naming_the_field(void) {
  weir_selections out = {0};
  weir_error err = {0};
  weir_json *s = parse("{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"In\", \"values\": [1]}]}");
  CHECK(!weir_select_labels(&out, "v1", "ConfigMap", NULL, s, &err));
  CHECK(err.set && err.kind == WEIR_PERMANENT && strstr(err.message, "matchExpressions[0]: values") != NULL);
  CHECK(out.len == 0);
  weir_json_free(s);
  weir_error_free(&err);
  s = parse("{\"matchLabels\": {\"z\": \"1\", \"a\": \"2\"}}");
  CHECK(weir_select_labels(&out, "v1", "ConfigMap", NULL, s, &err));
  CHECK(out.len == 1 && out.items[0].labels.n_labels == 2);
  CHECK_STR(out.items[0].labels.keys[0], "a"); /* sorted by key */
  weir_json_free(s);
  weir_selections_free(&out);
}

static void the_first_failure_is_the_one_reported(void) {
  weir_error err = {0};
  CHECK(!weir_fail(&err, WEIR_TRANSIENT, "cause %d", 1));
  CHECK(!weir_fail(&err, WEIR_PERMANENT, "later"));
  CHECK(err.kind == WEIR_TRANSIENT);
  CHECK_STR(err.message, "cause 1");
  weir_error_free(&err);
}

static void sha256_matches_the_fips_vectors(void) {
  char hex[65];
  weir_sha256_hex("abc", 3, hex);
  CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  weir_sha256_hex("", 0, hex);
  CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"; /* 56 bytes: two blocks */
  weir_sha256_hex(two, strlen(two), hex);
  CHECK_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

int main(void) {
  reading_values_by_key_path_and_index();
  escapes_decode_to_utf8_and_numbers_keep_their_kind();
  text_that_is_not_json_is_refused();
  written_json_reads_back_the_same();
  a_writer_says_how_it_was_misused();
  selectors_match_as_kubernetes_matches();
  a_malformed_selector_is_a_permanent_error_naming_the_field();
  the_first_failure_is_the_one_reported();
  sha256_matches_the_fips_vectors();
  return report("c sdk");
}
