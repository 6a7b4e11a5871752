#define CATCH_CONFIG_MAIN
#include "tests/support/Catch.hpp"
