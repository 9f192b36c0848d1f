#pragma once
// The Workspace moved to the cost model
// (costmodel/torch/include/splitsim/costmodel/workspace.h); this forwards to
// it for the CLI files that still include "workspace.h".
#include "splitsim/costmodel/workspace.h"
