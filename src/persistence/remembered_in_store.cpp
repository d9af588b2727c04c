#include <troupe/persistence/errc.hpp>
#include <troupe/persistence/persistence_extension.hpp>
#include <troupe/persistence/remembered_in_store.hpp>
#include <troupe/sharding/cluster_sharding.hpp>

#include <exception>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

namespace troupe::persistence {

namespace {

/// What a store call failed with, as an error code (store_failure when it threw something else).
std::error_code code_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::system_error& x) {
    return x.code();
  } catch (...) {
    return make_error_code(errc::store_failure);
  }
}

class remembered_in_plugin final : public sharding::remembered_entities {
 public:
  remembered_in_plugin(std::shared_ptr<plugin> store, std::string type)
      : store_(std::move(store)), type_(std::move(type)) {}

  void list_shards(shards_handler done) override {
    store_->remember_entities().async_list_shards(
        type_, [done = std::move(done)](std::exception_ptr e, std::vector<std::uint32_t> shards) {
          done(e ? code_of(e) : std::error_code{},
               std::vector<sharding::shard_id>(shards.begin(), shards.end()));
        });
  }

  void list(sharding::shard_id shard, ids_handler done) override {
    store_->remember_entities().async_list(
        remember_query{type_, shard},
        [done = std::move(done)](std::exception_ptr e, std::vector<std::string> ids) {
          done(e ? code_of(e) : std::error_code{}, std::move(ids));
        });
  }

  void update(sharding::shard_id shard, sharding::shard_epoch epoch, std::vector<std::string> added,
              std::vector<std::string> removed, done_handler done) override {
    remember_update u;
    u.type_name = type_;
    u.shard = shard;
    u.added = std::move(added);
    u.removed = std::move(removed);
    u.epoch = static_cast<ownership_epoch>(epoch);
    // Placed by a cluster: the owner fence the placement raised before the shard started here
    // must still be this epoch's.
    if (epoch > 0) u.shard_fence = fenced_shard{type_, shard};
    store_->remember_entities().async_update(std::move(u),
                                             [done = std::move(done)](std::exception_ptr e) {
                                               if (!e) {
                                                 done({}, false);
                                                 return;
                                               }
                                               const std::error_code ec = code_of(e);
                                               done(ec, ec == errc::epoch_fenced);
                                             });
  }

 private:
  std::shared_ptr<plugin> store_;
  std::string type_;
};

}  // namespace

std::shared_ptr<sharding::remembered_entities> remembered_in(std::shared_ptr<plugin> store,
                                                             std::string type_name) {
  if (!store) throw std::invalid_argument("remembered_in: a store is required");
  return std::make_shared<remembered_in_plugin>(std::move(store), std::move(type_name));
}

void remember_entities_in_plugins(actor_system& system) {
  sharding::cluster_sharding::get(system).set_remembered_entities_factory(
      [&system](const sharding::region_settings& settings) {
        return remembered_in(persistence_extension::get(system).plugin_for(settings.type_name),
                             settings.type_name);
      });
}

}  // namespace troupe::persistence
