#pragma once
/// The in-process model of etcd with one client per node and the fault hooks a simulated cluster
/// needs: a node cut off from etcd, and compaction on demand. make_in_process_store is the simple
/// form (one model, one client).

#include <troupe/cluster/membership/consensus_store.hpp>
#include <troupe/core/clock.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace troupe::cluster {

/// One etcd as a model on a troupe::clock, shared by any number of clients. The model lives as
/// long as this object or any of its clients.
class in_process_etcd {
 public:
  explicit in_process_etcd(std::shared_ptr<troupe::clock> clock,
                           in_process_store_options options = {});
  ~in_process_etcd();
  in_process_etcd(const in_process_etcd&) = delete;
  in_process_etcd& operator=(const in_process_etcd&) = delete;

  /// A new client whose handlers run on `executor` (one per node, as each node has its own
  /// connection to etcd).
  std::shared_ptr<consensus_store> client(boost::asio::any_io_executor executor);

  /// Cuts `client` off from the store or reconnects it. While cut, its requests are not applied
  /// and fail with errc::store_unavailable after the request timeout on the clock (so its lease
  /// is not renewed), and its watches end with errc::store_unavailable (new ones after the
  /// timeout). Throws std::invalid_argument for a store that is not a client of this model.
  void set_reachable(const consensus_store& client, bool reachable);

  /// Cuts only the way back from the store to `client` (a one-way partition) or restores it.
  /// Its requests are applied, but each answer is lost: the request fails with
  /// errc::store_unavailable after the request timeout, as an etcd client's deadline would, and
  /// its watches end as with set_reachable. Throws as set_reachable does.
  void set_answers_lost(const consensus_store& client, bool lost);

  /// The store's current revision.
  [[nodiscard]] revision current_revision() const;

  /// Drops the history below `rev` (etcd's compaction): watches from an older revision then fail
  /// with errc::compacted.
  void compact(revision rev);

  /// The model's shared state (defined in the source file).
  struct core;

 private:
  void set_fault(std::vector<std::uint64_t>& clients, const consensus_store& client, bool on);

  std::shared_ptr<core> core_;
};

}  // namespace troupe::cluster
