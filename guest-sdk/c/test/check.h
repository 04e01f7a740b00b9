/* A few lines of test harness: CHECK records a failure with its line; main prints the tally. */
#ifndef WEIR_CHECK_H
#define WEIR_CHECK_H

#include <stdio.h>
#include <string.h>

static int checks_passed, checks_failed;

#define CHECK(cond)                                                   \
  do {                                                                \
    if (cond) {                                                       \
      checks_passed++;                                                \
    } else {                                                          \
      checks_failed++;                                                \
      fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                 \
  } while (0)

#define CHECK_STR(got, want)                                                               \
  do {                                                                                     \
    const char *g_ = (got), *w_ = (want);                                                  \
    if (g_ && strcmp(g_, w_) == 0) {                                                       \
      checks_passed++;                                                                     \
    } else {                                                                               \
      checks_failed++;                                                                     \
      fprintf(stderr, "%s:%d: %s is \"%s\", not \"%s\"\n", __FILE__, __LINE__, #got, g_ ? g_ : "(null)", w_); \
    }                                                                                      \
  } while (0)

/* The closing line test runners read; the exit status says the same. */
static int report(const char *suite) {
  printf("%s: %d passed, %d failed\n", suite, checks_passed, checks_failed);
  return checks_failed ? 1 : 0;
}

#endif
