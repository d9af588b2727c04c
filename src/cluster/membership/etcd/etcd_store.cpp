// make_etcd_store: the consensus store on etcd 3.4's /v3/ JSON gateway. Each call is one
// exchange (its own connection, so calls from any thread share nothing but the endpoint set);
// replies are decoded by codec.hpp. See docs/adr/0002-etcd-through-the-json-gateway.md.
#include <troupe/cluster/errc.hpp>
#include <troupe/cluster/membership/consensus_store.hpp>

#include "cluster/membership/etcd/codec.hpp"
#include "cluster/membership/etcd/exchange.hpp"

#include <boost/asio/post.hpp>

#include <atomic>
#include <memory>
#include <utility>

namespace troupe::cluster {
namespace {

namespace json = boost::json;

// The state a watch shares between its handle and its exchange's handlers.
struct watch_state {
  consensus_store::watch_handler on_batch;
  std::atomic<bool> cancelled{false};
  // Set once the handler got the error that ends the watch (touched only on the strand).
  bool ended = false;

  void deliver(std::error_code ec, watch_batch batch) {
    if (cancelled.load(std::memory_order_acquire) || ended) return;
    if (ec) ended = true;
    on_batch(ec, std::move(batch));
  }
};

class etcd_watch final : public watch_handle {
 public:
  etcd_watch(std::shared_ptr<watch_state> state, std::shared_ptr<etcd::exchange> exchange)
      : state_(std::move(state)), exchange_(std::move(exchange)) {}
  ~etcd_watch() override { cancel(); }
  etcd_watch(const etcd_watch&) = delete;
  etcd_watch& operator=(const etcd_watch&) = delete;

  void cancel() noexcept override {
    state_->cancelled.store(true, std::memory_order_release);
    if (exchange_) exchange_->cancel();
    exchange_.reset();
  }

 private:
  std::shared_ptr<watch_state> state_;
  std::shared_ptr<etcd::exchange> exchange_;
};

class etcd_store final : public consensus_store {
 public:
  etcd_store(boost::asio::any_io_executor executor, std::shared_ptr<etcd::endpoint_set> endpoints)
      : executor_(std::move(executor)), endpoints_(std::move(endpoints)) {}

  void range(key_range range, handler<range_result> done) override {
    unary<range_result>("/v3/kv/range", etcd::encode_range(range), etcd::decode_range,
                        std::move(done));
  }

  void txn(txn_request request, handler<txn_result> done) override {
    unary<txn_result>("/v3/kv/txn", etcd::encode_txn(request), etcd::decode_txn, std::move(done));
  }

  void grant_lease(duration ttl, handler<lease_grant> done) override {
    unary<lease_grant>("/v3/lease/grant", etcd::encode_grant(ttl), etcd::decode_grant,
                       std::move(done));
  }

  void keep_alive(lease_id lease, handler<duration> done) override {
    // The gateway streams keepalives; one POST per renewal pairs each reply with its send, and
    // the first message of the reply is the answer.
    unary<duration>("/v3/lease/keepalive", etcd::encode_lease_id(lease), etcd::decode_keep_alive,
                    std::move(done));
  }

  void revoke_lease(lease_id lease, handler<revision> done) override {
    unary<revision>("/v3/lease/revoke", etcd::encode_lease_id(lease), etcd::decode_revoke,
                    std::move(done));
  }

  std::unique_ptr<watch_handle> watch(key_range range, revision start,
                                      watch_handler on_batch) override {
    auto state = std::make_shared<watch_state>();
    state->on_batch = std::move(on_batch);
    if (start <= 0) {
      // etcd would read 0 as "from now"; the interface asks for an explicit revision.
      boost::asio::post(executor_, [state] { state->deliver(errc::invalid_store_request, {}); });
      return std::make_unique<etcd_watch>(state, nullptr);
    }
    auto on_object = [state](json::object& message) {
      etcd::watch_message decoded;
      if (auto ec = etcd::decode_watch(message, decoded)) {
        state->deliver(ec, {});
        return false;
      }
      if (!decoded.created) state->deliver({}, std::move(decoded.batch));
      return true;
    };
    auto on_done = [state](std::error_code ec) {
      state->deliver(ec ? ec : std::error_code(errc::store_unavailable), {});
    };
    auto exchange =
        etcd::start_exchange(executor_, endpoints_, "/v3/watch", etcd::encode_watch(range, start),
                             true, std::move(on_object), std::move(on_done));
    return std::make_unique<etcd_watch>(std::move(state), std::move(exchange));
  }

  [[nodiscard]] boost::asio::any_io_executor executor() const override { return executor_; }

 private:
  // One request, one reply object, decoded by `decode`.
  template <class T, class Decode>
  void unary(const char* target, std::string body, Decode decode, handler<T> done) {
    auto reply = std::make_shared<json::object>();
    auto on_object = [reply](json::object& object) {
      *reply = std::move(object);
      return false;
    };
    auto on_done = [reply, decode, done = std::move(done)](std::error_code ec) {
      T result{};
      if (!ec) ec = decode(*reply, result);
      done(ec, std::move(result));
    };
    etcd::start_exchange(executor_, endpoints_, target, std::move(body), false,
                         std::move(on_object), std::move(on_done));
  }

  boost::asio::any_io_executor executor_;
  std::shared_ptr<etcd::endpoint_set> endpoints_;
};

}  // namespace

std::shared_ptr<consensus_store> make_etcd_store(boost::asio::any_io_executor executor,
                                                 etcd_store_options options) {
  if (options.endpoints.empty()) {
    throw cluster_error(errc::invalid_address, "make_etcd_store: no etcd endpoint given");
  }
  auto endpoints = std::make_shared<etcd::endpoint_set>();
  for (const auto& text : options.endpoints) {
    endpoints->endpoints.push_back(etcd::parse_endpoint(text));
  }
  endpoints->connect_timeout = options.connect_timeout;
  endpoints->request_timeout = options.request_timeout;
  return std::make_shared<etcd_store>(std::move(executor), std::move(endpoints));
}

}  // namespace troupe::cluster
