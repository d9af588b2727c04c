#pragma once
// The demo's sharded entity: a shopping cart, event-sourced on SQLite. Each add_item persists one
// item_added event and then replies, naming the node whose entity persisted it. The state keeps
// the item numbers in the order they were persisted, which is what the order check reads. Every
// cart also tells an activation_observer when it starts and when it stops, which is how the demo
// counts duplicate activations (activations.hpp).

#include <troupe/persistence/persistent_entity.hpp>

#include "activations.hpp"

#include <boost/describe/class.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace cluster_demo {

// -- commands and replies (they cross nodes: registered in the remote registry) -----------------

struct add_item {
  std::string cart;
  /// 1, 2, 3... per cart: the order the client sent them in.
  std::int64_t item_seq = 0;
  std::string sku;
  std::int32_t qty = 0;
};
BOOST_DESCRIBE_STRUCT(add_item, (), (cart, item_seq, sku, qty))

struct get_cart {
  std::string cart;
};
BOOST_DESCRIBE_STRUCT(get_cart, (), (cart))

using cart_command = std::variant<add_item, get_cart>;

/// The reply to add_item, sent once its event is durable.
struct item_acked {
  std::int64_t item_seq = 0;
  std::string node;
  std::uint32_t shard = 0;
};
BOOST_DESCRIBE_STRUCT(item_acked, (), (item_seq, node, shard))

/// The reply to get_cart.
struct cart_contents {
  std::vector<std::int64_t> item_seqs;
  std::string node;
  std::uint32_t shard = 0;
};
BOOST_DESCRIBE_STRUCT(cart_contents, (), (item_seqs, node, shard))

// -- what is persisted ----------------------------------------------------------------------------

struct item_added {
  std::int64_t item_seq = 0;
  std::string sku;
  std::int32_t qty = 0;
};
BOOST_DESCRIBE_STRUCT(item_added, (), (item_seq, sku, qty))

struct cart_state {
  /// In the order the events were persisted.
  std::vector<std::int64_t> item_seqs;
  std::int64_t quantity = 0;
};
BOOST_DESCRIBE_STRUCT(cart_state, (), (item_seqs, quantity))

// -- the entity -----------------------------------------------------------------------------------

class cart final
    : public troupe::persistence::persistent_entity<cart_command, item_added, cart_state> {
 public:
  cart(std::string node, activation_observer* activations)
      : node_(std::move(node)), activations_(activations) {}

 private:
  void on_start() override {
    id_ = entity_id();
    activations_->enter(id_, node_);
  }
  void post_stop() override {
    if (!id_.empty()) activations_->leave(id_, node_);
  }

  effect_type on_command(const cart_state& s, cart_command& cmd) override {
    return std::visit(troupe::overloaded{
                          [&](add_item& a) -> effect_type {
                            return persist(item_added{a.item_seq, std::move(a.sku), a.qty})
                                .then_reply(item_acked{a.item_seq, node_, entity().shard_id});
                          },
                          [&](const get_cart&) -> effect_type {
                            return reply(cart_contents{s.item_seqs, node_, entity().shard_id});
                          },
                      },
                      cmd);
  }
  cart_state apply(cart_state s, const item_added& e) const override {
    s.item_seqs.push_back(e.item_seq);
    s.quantity += e.qty;
    return s;
  }

  std::string node_;
  activation_observer* activations_;
  std::string id_;
};

}  // namespace cluster_demo
