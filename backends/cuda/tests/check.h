/*
 * check.h — the CHECK macro of the cuda backend's C test programs: a failed condition is
 * printed with its file and line and counted in g_failures (the program's exit status);
 * the test goes on, so one run reports every failure.
 */
#ifndef NNPLUG_CUDA_TESTS_CHECK_H_
#define NNPLUG_CUDA_TESTS_CHECK_H_

#include <stdio.h>

static int g_failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                            \
    }                                                                          \
  } while (0)

#endif /* NNPLUG_CUDA_TESTS_CHECK_H_ */
