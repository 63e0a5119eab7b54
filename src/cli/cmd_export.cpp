// `tierzero export CKPT --out FILE [--format safetensors|llmc] [--dtype fp32|bf16]`: a checkpoint's
// master weights as one model file (checkpoint/weight_export.hpp): safetensors with Hugging Face's
// names and layouts for the model's family (GPT-2, Llama, GPT-NeoX), or llm.c's gpt2_124M.bin layout
// (GPT-2). One process, no MPI; CKPT is a step directory or a save directory (its latest checkpoint).
#include <fmt/format.h>

#include "checkpoint/weight_export.hpp"
#include "cli/cli_options.hpp"
#include "cli/command_registry.hpp"
#include "cli/exit_codes.hpp"

namespace tz::cli {
namespace {

struct ExportArgs {
  std::string checkpoint, out, format = "safetensors", dtype = "fp32";
};

int run_export(const ExportArgs& a) {
  try {
    const ExportOptions o{.format = parse_weight_format(a.format, "--format"),
                          .dtype = parse_export_dtype(a.dtype, "--dtype")};
    const ExportResult r = export_checkpoint(a.checkpoint, a.out, o);
    fmt::print("exported {} (step {}) to {}: {}, {} tensors, {} bytes, {}\n", r.checkpoint, r.step, a.out,
               a.format, r.tensors, r.bytes, a.dtype);
    return 0;
  } catch (...) {
    return print_exit_report(report_current_exception());
  }
}

const bool export_registered = register_command(
    {"export",
     "Write a checkpoint's weights as one model file: safetensors (Hugging Face's names for GPT-2, Llama or "
     "GPT-NeoX) or llm.c's gpt2_*.bin",
     [](CLI::App& sub) -> RunFn {
       auto a = std::make_shared<ExportArgs>();
       OptionSet o(sub, "export");
       o.text("checkpoint", a->checkpoint, "a checkpoint (DIR/step_N) or a save directory (its latest)")
           ->required();
       o.text("--out", a->out, "the model file to write")->required();
       o.choice("--format", a->format, {"safetensors", "llmc"},
                "safetensors (Hugging Face's names for the model's family) or llmc (llm.c gpt2_124M.bin "
                "layout, GPT-2)");
       o.choice("--dtype", a->dtype, {"fp32", "bf16"},
                "element type of the file (bf16: rounded to nearest even)");
       return [a] { return run_export(*a); };
     }});

}  // namespace
}  // namespace tz::cli
