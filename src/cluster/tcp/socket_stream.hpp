#pragma once
// One stream over a connected socket, plain (ip::tcp::socket) or TLS (ssl::stream over one):
// a read loop that hands on whatever arrived, one write at a time, and a close that ends both.
// Everything runs on the socket's executor, so the state needs no lock.
//
// The template is instantiated once per socket type, in plain_stream.cpp and tls_stream.cpp.

#include <troupe/cluster/transport.hpp>

#include "cluster/tcp/executor_thread.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <utility>

namespace troupe::cluster::tcp {

template <class Socket>
class socket_stream final : public stream,
                            public std::enable_shared_from_this<socket_stream<Socket>> {
 public:
  /// `keep_alive` holds what the socket needs beyond itself (the TLS context).
  socket_stream(Socket socket, std::string description, std::size_t read_chunk_size,
                std::shared_ptr<const void> keep_alive)
      : socket_(std::move(socket)),
        executor_(socket_.get_executor()),
        description_(std::move(description)),
        read_chunk_size_(read_chunk_size == 0 ? 1 : read_chunk_size),
        keep_alive_(std::move(keep_alive)) {}

  void start(read_handler on_data, done_handler on_closed) override {
    run_on(executor_, [self = this->shared_from_this(), on_data = std::move(on_data),
                       on_closed = std::move(on_closed)]() mutable {
      self->start_here(std::move(on_data), std::move(on_closed));
    });
  }

  void async_write(byte_buffer bytes, done_handler done) override {
    // The hot path: the node layer writes from the executor's thread. Start the write at once,
    // without wrapping it in a task or taking another reference.
    if (running_in_this_thread(executor_)) {
      write_here(std::move(bytes), std::move(done));
      return;
    }
    boost::asio::post(executor_, [self = this->shared_from_this(), bytes = std::move(bytes),
                                  done = std::move(done)]() mutable {
      self->write_here(std::move(bytes), std::move(done));
    });
  }

  void close() override {
    run_on(executor_, [self = this->shared_from_this()] { self->close_here(); });
  }

  [[nodiscard]] std::string describe() const override { return description_; }

 private:
  using error_code = boost::system::error_code;

  static std::error_code as_std(const error_code& ec) { return ec; }

  // -- reading ---------------------------------------------------------------------------------

  void start_here(read_handler on_data, done_handler on_closed) {
    if (started_) return;  // the contract says once; a second call changes nothing
    started_ = true;
    on_data_ = std::move(on_data);
    on_closed_ = std::move(on_closed);
    if (closed_locally_ || read_ended_ || broken_) {
      // Closed or broken before it started: still end through the executor, never inside start().
      boost::asio::post(executor_, [self = this->shared_from_this()] { self->end_reading({}); });
      return;
    }
    read_buffer_.resize(read_chunk_size_);
    read_next();
  }

  void read_next() {
    socket_.async_read_some(boost::asio::buffer(read_buffer_),
                            [self = this->shared_from_this()](const error_code& ec, std::size_t n) {
                              self->on_read(ec, n);
                            });
  }

  void on_read(const error_code& ec, std::size_t n) {
    if (n > 0 && !closed_locally_ && on_data_) {
      on_data_(std::span<const std::byte>(read_buffer_.data(), n));
    }
    // on_data may have closed the stream; then there is nothing more to read.
    if (ec || closed_locally_ || broken_) {
      end_reading(ec);
      return;
    }
    read_next();
  }

  // The read loop is over: the stream is done. on_closed waits for a write in flight, so that
  // the write's done runs first and nothing runs after on_closed.
  void end_reading(const error_code& ec) {
    if (read_ended_) return;
    read_ended_ = true;
    if (closed_locally_) {
      reason_ = as_std(boost::asio::error::operation_aborted);
    } else if (broken_) {
      reason_ = as_std(broken_);
    } else if (ec == boost::asio::ssl::error::stream_truncated) {
      // The peer closed without a TLS close_notify. Frames are length-prefixed, so a cut is
      // visible to the decoder anyway: report it as the end of the stream, as plain TCP does.
      reason_ = as_std(boost::asio::error::eof);
    } else {
      reason_ = as_std(ec);
    }
    close_socket();
    on_data_ = nullptr;
    read_buffer_ = byte_buffer();
    if (!writing_) deliver_closed();
  }

  void deliver_closed() {
    if (!on_closed_) return;
    auto handler = std::move(on_closed_);
    on_closed_ = nullptr;
    handler(reason_);
  }

  // -- writing ---------------------------------------------------------------------------------

  void write_here(byte_buffer bytes, done_handler done) {
    if (writing_ || closed_locally_ || read_ended_ || broken_) {
      const std::error_code refusal =
          as_std(writing_ ? boost::asio::error::in_progress
                          : (closed_locally_ ? boost::asio::error::operation_aborted
                                             : boost::asio::error::not_connected));
      boost::asio::post(executor_, [done = std::move(done), refusal] {
        if (done) done(refusal);
      });
      return;
    }
    writing_ = true;
    write_buffer_ = std::move(bytes);
    write_done_ = std::move(done);
    boost::asio::async_write(socket_, boost::asio::buffer(write_buffer_),
                             [self = this->shared_from_this()](const error_code& ec, std::size_t) {
                               self->on_written(ec);
                             });
  }

  void on_written(const error_code& ec) {
    writing_ = false;
    write_buffer_ = byte_buffer();
    auto done = std::move(write_done_);
    write_done_ = nullptr;
    std::error_code result;
    if (ec) {
      result = as_std(closed_locally_ ? error_code(boost::asio::error::operation_aborted) : ec);
      // A failed write breaks the stream: close it, so the read loop ends and reports why.
      if (!closed_locally_ && !read_ended_ && !broken_) {
        broken_ = ec;
        close_socket();
      }
    }
    if (done) done(result);
    if (read_ended_ && !writing_) deliver_closed();
  }

  // -- closing ---------------------------------------------------------------------------------

  void close_here() {
    if (closed_locally_ || read_ended_) return;
    closed_locally_ = true;
    close_socket();
  }

  // Closing the socket cancels the read and any write in flight; they complete with
  // operation_aborted and the read's completion ends the stream.
  void close_socket() {
    auto& socket = socket_.lowest_layer();
    if (!socket.is_open()) return;
    error_code ignored;
    socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
  }

  Socket socket_;
  boost::asio::any_io_executor executor_;
  const std::string description_;
  const std::size_t read_chunk_size_;
  std::shared_ptr<const void> keep_alive_;

  byte_buffer read_buffer_;
  byte_buffer write_buffer_;  // kept alive until its write completes
  read_handler on_data_;
  done_handler on_closed_;
  done_handler write_done_;
  std::error_code reason_;  // why the stream ended, for on_closed
  error_code broken_;       // the error of a failed write, which ended the stream

  bool started_ = false;
  bool writing_ = false;
  bool closed_locally_ = false;
  bool read_ended_ = false;
};

}  // namespace troupe::cluster::tcp
