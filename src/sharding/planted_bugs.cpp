#include "troupe/sharding/detail/planted_bugs.hpp"

namespace troupe::sharding::detail::planted {

std::atomic<bool> skip_flush_before_handoff{false};
std::atomic<bool> bounced_out_of_order{false};

}  // namespace troupe::sharding::detail::planted
