#pragma once
// Catch2 for the tests, with Catch's CHECK. LibTorch's logging (glog, or c10's own logging in builds
// without it) defines CHECK as a fatal assertion; a test that included it after Catch would abort on a
// failed CHECK with the condition's text only, losing Catch's expansion of the values and the INFO
// context. Included first, the logging header's guard keeps Catch's definition.
#if __has_include(<c10/util/Logging.h>)
#include <c10/util/Logging.h>
#endif
#include <catch2/catch.hpp>
