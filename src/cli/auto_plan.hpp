// Presentation of `--plan auto` (train/auto_plan.hpp): the top plans with predicted step time, memory
// and bytes per tier, why the first won against the runner-up, the winner's explain breakdown, and
// the configuration block that reproduces the choice.
#pragma once

#include <cstdio>

#include "train/auto_plan.hpp"

namespace tz::cli {

void print_auto_plan(std::FILE* out, const Topology& topo, const AutoPlan& choice, int top = 3);

}  // namespace tz::cli
