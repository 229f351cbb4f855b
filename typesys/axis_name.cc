// axis_name.cc — the intern table of long AxisNames (see axis_name.h).

#include "typesys/axis_name.h"

#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

namespace reshard {

const std::string* AxisName::Intern(std::string_view text) {
  // Leaked on purpose: values anywhere (static types included) may point into it until exit.
  // A node-based set keeps every element's address for good.
  static auto* mutex = new std::mutex;
  static auto* table = new std::set<std::string, std::less<>>;
  const std::lock_guard<std::mutex> lock(*mutex);
  auto it = table->find(text);
  if (it == table->end()) it = table->emplace(text).first;
  return &*it;
}

}  // namespace reshard
