// check.h — the aborting check macro for internal invariants.
//
// Public API functions report bad input through absl::Status. RESHARD_CHECK is for conditions
// that only a bug in reshard itself can violate; it prints the condition and location and aborts.
//
//   RESHARD_CHECK(axis >= 0) << "axis must be resolved before lookup";
#ifndef RESHARD_TYPESYS_CHECK_H_
#define RESHARD_TYPESYS_CHECK_H_

#include <cstdlib>
#include <iostream>
#include <sstream>

namespace reshard::internal {

// Collects an optional message and aborts when destroyed.
class CheckFailure {
 public:
  CheckFailure(const char* condition, const char* file, int line) {
    stream_ << file << ":" << line << ": RESHARD_CHECK failed: " << condition << " ";
  }
  [[noreturn]] ~CheckFailure() {
    std::cerr << stream_.str() << std::endl;
    std::abort();
  }
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

}  // namespace reshard::internal

#define RESHARD_CHECK(condition) \
  if (condition) {               \
  } else                         \
    ::reshard::internal::CheckFailure(#condition, __FILE__, __LINE__).stream()

#endif  // RESHARD_TYPESYS_CHECK_H_
