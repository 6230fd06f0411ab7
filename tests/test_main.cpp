// The shared Catch2 (v2) main of every coact test binary.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
