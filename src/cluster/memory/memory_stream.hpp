#pragma once
// The stream handle one node holds for its end of an in-memory connection. Dropping the handle
// closes that end, as destroying a socket does, but runs none of its handlers: their owner is gone.

#include <troupe/cluster/transport.hpp>

#include "cluster/memory/connection.hpp"

#include <memory>
#include <string>

namespace troupe::cluster::detail {

class memory_stream final : public stream {
 public:
  memory_stream(std::shared_ptr<connection> c, connection::side s)
      : connection_(std::move(c)), side_(s) {}
  ~memory_stream() override { connection_->close(side_, false); }

  void start(read_handler on_data, done_handler on_closed) override {
    connection_->start(side_, std::move(on_data), std::move(on_closed));
  }
  void async_write(byte_buffer bytes, done_handler done) override {
    connection_->write(side_, std::move(bytes), std::move(done));
  }
  void close() override { connection_->close(side_, true); }
  [[nodiscard]] std::string describe() const override { return connection_->describe(side_); }

 private:
  std::shared_ptr<connection> connection_;
  connection::side side_;
};

}  // namespace troupe::cluster::detail
