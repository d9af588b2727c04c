#include <troupe/core/actor_system.hpp>

int main() {
  troupe::actor_system sys;
  return 0;
}
