#include "shared_tallies.hpp"

#include "bench_support.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <new>

namespace troupe::bench {

namespace {

std::size_t bytes_for(std::size_t entities, std::size_t first_entity) {
  return (first_entity + entities) * sizeof(std::atomic<std::int64_t>);
}

std::atomic<std::int64_t>* zeroed_counters(void* memory, std::size_t count) {
  auto* slots = static_cast<std::atomic<std::int64_t>*>(memory);
  for (std::size_t i = 0; i < count; ++i) new (&slots[i]) std::atomic<std::int64_t>(0);
  return slots;
}

}  // namespace

shared_tallies::shared_tallies(std::size_t entities)
    : entities_(entities), bytes_(bytes_for(entities, first_entity)) {
  void* memory =
      ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) throw bench_failure("mmap of the tallies failed");
  slots_ = zeroed_counters(memory, first_entity + entities);
}

shared_tallies::shared_tallies(std::size_t entities, const std::string& path, bool create)
    : entities_(entities), bytes_(bytes_for(entities, first_entity)) {
  const int fd = ::open(path.c_str(), create ? O_RDWR | O_CREAT | O_TRUNC : O_RDWR, 0600);
  if (fd < 0) throw bench_failure("cannot open the tallies file " + path);
  // A new file's size is made of zeroes: every counter starts at 0.
  if (create && ::ftruncate(fd, static_cast<off_t>(bytes_)) != 0) {
    ::close(fd);
    throw bench_failure("cannot size the tallies file " + path);
  }
  void* memory = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (memory == MAP_FAILED) throw bench_failure("mmap of the tallies file " + path + " failed");
  // The creator constructs the counters; another process uses the ones it finds (lock-free
  // atomics are plain integers in memory).
  slots_ = create ? zeroed_counters(memory, first_entity + entities)
                  : static_cast<std::atomic<std::int64_t>*>(memory);
}

shared_tallies::~shared_tallies() { ::munmap(slots_, bytes_); }

}  // namespace troupe::bench
