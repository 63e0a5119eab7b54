#include "cli/cli_main.hpp"

#include <fmt/format.h>

#include "cli/cli_options.hpp"
#include "cli/exit_codes.hpp"
#include "cli/run_world.hpp"
#include "core/output_file.hpp"

namespace tz::cli {

std::map<CLI::App*, RunFn> build_app(CLI::App& app) {
  clear_option_rules();
  app.require_subcommand(1);
  std::map<CLI::App*, RunFn> runs;
  for (const auto& cmd : registered_commands()) {
    CLI::App* sub = app.add_subcommand(cmd.name, cmd.help);
    runs[sub] = cmd.setup(*sub);
  }
  return runs;
}

int run_cli(int argc, const char* const* argv) {
  CLI::App app{"tierzero: topology-aware sharded data parallelism for training large language models"};
  std::map<CLI::App*, RunFn> runs = build_app(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // The same command line on every rank gives the same error: the first rank says it.
    return report_before_world(
        {.code = kExitBadInput,
         .message = fmt::format("error: {} (see tierzero {}--help)", e.what(),
                                argc > 1 && argv[1][0] != '-' ? fmt::format("{} ", argv[1]) : "")});
  }
  try {
    for (auto& [sub, run] : runs) {
      if (!sub->parsed()) continue;
      const int code = run();
      // What went to the standard output (a --format json document, a table) must have arrived.
      if (code == 0) check_standard_output();
      return code;
    }
  } catch (...) {
    return print_exit_report(report_current_exception());
  }
  return 0;
}

}  // namespace tz::cli
