// The shared Catch2 (v2) main of every coact test binary. A filter that
// matches no test case fails the run (exit 2, as --warn NoTests would; Catch2
// v2 takes one --warn, which the ctest entries spend on NoAssertions), so a
// ctest entry cannot pass in 0.00 s having run nothing.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

int main(int argc, char** argv) {
  Catch::Session session;
  if (const int rc = session.applyCommandLine(argc, argv); rc != 0) return rc;
  auto& warnings = session.configData().warnings;
  warnings = static_cast<Catch::WarnAbout::What>(warnings | Catch::WarnAbout::NoTests);
  return session.run();
}
