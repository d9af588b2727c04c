// The bar chart of the default run: one row per case, log-scale msgs/s, Troupe beside the
// guide's figure and the best other implementation, with the workload's bound marked.

#pragma once

#include "seed_table.hpp"

#include <string>
#include <vector>

namespace troupe::bench::seed {

/// Writes the chart to `path`; returns false (and says why on stderr) when it cannot.
bool write_svg(const std::string& path, const std::vector<table_row>& rows,
               const std::vector<measurement>& results);

}  // namespace troupe::bench::seed
