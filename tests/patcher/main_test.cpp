// doctest entry point for the patcher's fixture, property and file-safety tests.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
