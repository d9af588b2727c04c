#pragma once
/// INTERNAL. An entity id in 16 bytes: up to 15 bytes inline (most ids), longer ones on the
/// heap. The passivation policy keeps one per tracked entity, so half a std::string matters.

#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>

namespace troupe::sharding::detail {

class compact_id {
 public:
  compact_id() noexcept { bytes_[tag_at] = 0; }
  compact_id(const compact_id&) = delete;
  compact_id& operator=(const compact_id&) = delete;
  compact_id(compact_id&& other) noexcept {
    std::memcpy(bytes_, other.bytes_, sizeof bytes_);
    other.bytes_[tag_at] = 0;  // the heap block, if any, moved with the bytes
  }
  compact_id& operator=(compact_id&& other) noexcept {
    if (this != &other) {
      release();
      std::memcpy(bytes_, other.bytes_, sizeof bytes_);
      other.bytes_[tag_at] = 0;
    }
    return *this;
  }
  ~compact_id() { release(); }

  void assign(std::string_view id) {
    release();
    if (id.size() < sizeof bytes_) {
      if (!id.empty()) std::memcpy(bytes_, id.data(), id.size());
      bytes_[tag_at] = static_cast<unsigned char>(id.size());
      return;
    }
    auto* data = new char[id.size()];
    std::memcpy(data, id.data(), id.size());
    const auto size = static_cast<std::uint32_t>(id.size());
    std::memcpy(bytes_, &data, sizeof data);
    std::memcpy(bytes_ + sizeof data, &size, sizeof size);
    bytes_[tag_at] = on_heap;
  }

  [[nodiscard]] std::string_view view() const noexcept {
    if (bytes_[tag_at] != on_heap) {
      return {reinterpret_cast<const char*>(bytes_), bytes_[tag_at]};
    }
    char* data = nullptr;
    std::uint32_t size = 0;
    std::memcpy(&data, bytes_, sizeof data);
    std::memcpy(&size, bytes_ + sizeof data, sizeof size);
    return {data, size};
  }

 private:
  static constexpr std::size_t tag_at = 15;  // inline length, or on_heap
  static constexpr unsigned char on_heap = 0xFF;

  void release() noexcept {
    if (bytes_[tag_at] != on_heap) return;
    char* data = nullptr;
    std::memcpy(&data, bytes_, sizeof data);
    delete[] data;
    bytes_[tag_at] = 0;
  }

  unsigned char bytes_[16];
};

}  // namespace troupe::sharding::detail
