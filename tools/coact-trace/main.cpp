// tools/coact-trace/main.cpp: `coact-trace summary FILE [--json]` (CLI11).
// Exit status: 0 ok; 2 usage error or a file that is not a coact trace (one
// line naming the file and what was expected).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "summary.hpp"

int main(int argc, char** argv) {
  CLI::App app{"coact-trace: read a per-mail trace written by a coact runtime (COACT_TRACE=on)"};
  app.set_version_flag("--version", "coact-trace " COACT_VERSION);
  app.require_subcommand(1);
  std::string file;
  bool as_json = false;
  auto* sum = app.add_subcommand("summary",
                                 "per handler region: p50/p90/p99 of the construct, queued, drain and handler spans, "
                                 "the enqueue depth at deposit, burst recruitment (cost vs width gate)");
  sum->add_option("FILE", file, "trace file (COACT_TRACE_OUTPUT)")->required();
  sum->add_flag("--json", as_json, "one JSON object instead of the table");
  if (argc > 1 && argv[1][0] != '-' && std::string(argv[1]) != "summary") {
    std::fprintf(stderr, "coact-trace: unknown command '%s' (commands: summary; see coact-trace --help)\n", argv[1]);
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::fprintf(stderr, "coact-trace: %s (see coact-trace --help)\n", e.what());
    return 2;
  }

  std::ifstream in(file);
  if (!in) {
    std::fprintf(stderr, "coact-trace: %s: cannot read the file\n", file.c_str());
    return 2;
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
    const auto s = coact::trace_tool::summarize(doc);
    if (as_json) {
      std::cout << coact::trace_tool::to_json(s).dump(2) << "\n";
    } else {
      std::cout << coact::trace_tool::to_text(s);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coact-trace: %s: %s (expected a trace written with COACT_TRACE_OUTPUT)\n", file.c_str(),
                 e.what());
    return 2;
  }
  return 0;
}
