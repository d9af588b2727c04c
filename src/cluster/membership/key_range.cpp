// key_range::prefix, shared by both consensus stores.
#include <troupe/cluster/membership/consensus_store.hpp>

namespace troupe::cluster {

key_range key_range::prefix(std::string prefix) {
  // The end is the prefix with its last byte below 0xff raised by one and the rest cut off, as
  // etcd's clientv3.GetPrefixRangeEnd; an empty or all-0xff prefix means "every key from here":
  // the end "\0".
  std::string end = prefix;
  while (!end.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(end.back());
    if (last < 0xff) {
      ++last;
      return {std::move(prefix), std::move(end)};
    }
    end.pop_back();
  }
  return {std::move(prefix), std::string(1, '\0')};
}

}  // namespace troupe::cluster
