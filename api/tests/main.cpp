// doctest main of the API-level tests (api/tests); the conformance runner has its own main.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
