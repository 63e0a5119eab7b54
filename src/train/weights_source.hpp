// Where `tierzero sample` (and anything else that needs a trained model on one process) gets weights
// from: one function that looks at what PATH is and reads it into the plain form every consumer
// takes, a config and one flat fp32 buffer (model/weights_file.hpp's ModelWeights).
//   PATH + PATH.json    a parameter file (`tierzero train --weights-out`, --init-out)
//   *.safetensors       Hugging Face GPT-2 weights (train/exported_weights.hpp); the shape from
//                       `model`, else the config.json beside the file (as the hub lays them out)
//   llm.c model .bin    llm.c's model file (magic 20240326; its header holds the shape)
//   a directory         a tierzero checkpoint: read_checkpoint_weights
#pragma once

#include <optional>
#include <string>

#include "model/weights_file.hpp"

namespace tz {

// `model`, when given, is the shape the caller expects (a safetensors file needs one); the caller
// checks the result's config against it for the other formats. InputError naming the path and what
// it is when it cannot be read.
ModelWeights load_model_weights(const std::string& path,
                                const std::optional<GptConfig>& model = std::nullopt);

// The master weights of a tierzero checkpoint directory (DIR, its latest checkpoint, or DIR/step_N),
// read on one process by the checkpoint layer (checkpoint/weight_export.hpp), every block checked.
ModelWeights read_checkpoint_weights(const std::string& dir);

}  // namespace tz
