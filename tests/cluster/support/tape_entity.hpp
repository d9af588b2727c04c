#pragma once
// "tape", the whole-node simulation's plain entity: it is told numbered notes (no answers, no
// journal) and keeps nothing itself. What each activation hears goes to the world's record,
// which outlives every node, and its start, handling and stop go to the activity log under the
// id "tape:<id>", so the stale-activation checker covers plain entities too.

#include "tally_world.hpp"

namespace troupe::cluster::tally_test {

struct note {
  std::string id;
  int sender = 0;
  int n = 0;
};
BOOST_DESCRIBE_STRUCT(note, (), (id, sender, n))
using tape_command = std::variant<note>;

/// Every note any activation heard, in the order they were heard (one thread runs them all).
using heard_notes = std::vector<note>;

/// The activity log's id of tape `id`: distinct from tally's ids.
inline std::string tape_key(const std::string& id) { return "tape:" + id; }

class tape final : public actor<tape_command> {
 public:
  /// With `planted_loss`, a bug planted on purpose to show the checker finds it: the 30th note
  /// an activation handles is not recorded, as if it had been dropped.
  tape(std::string label, std::shared_ptr<activity> log, std::shared_ptr<heard_notes> heard,
       bool planted_loss = false)
      : label_(std::move(label)),
        log_(std::move(log)),
        heard_(std::move(heard)),
        planted_loss_(planted_loss) {}

 private:
  void pre_start() override {
    log_->record(activity::entry::start, label_, tape_key(context().entity()->entity_id));
  }
  void post_stop() override {
    log_->record(activity::entry::stop, label_, tape_key(context().entity()->entity_id));
  }
  void receive(tape_command& c) override {
    const note& n = std::get<note>(c);
    log_->record(activity::entry::handle, label_, tape_key(n.id),
                 "note " + std::to_string(n.sender) + ":" + std::to_string(n.n));
    if (planted_loss_ && ++notes_ == 30) return;
    heard_->push_back(n);
  }
  std::string label_;
  std::shared_ptr<activity> log_;
  std::shared_ptr<heard_notes> heard_;
  bool planted_loss_;
  int notes_ = 0;
};

}  // namespace troupe::cluster::tally_test
