// axis_name.h — AxisName: an axis reference (`x`, `y:(2)4`) as a 16-byte value.
//
// Types, collectives and plans hold their axes as AxisLists, and synthesis copies and compares
// them constantly: as std::strings (32 bytes, a copy loop per list, memcmp per comparison)
// they were a tenth of `normal`'s instructions (docs/benchmarks.md). An AxisName is trivially
// copyable, so lists copy as one memcpy, and equal names have equal bytes, so == is two word
// comparisons:
//
//   reshard::AxisName a = "y:(1)2";        // implicit from text
//   std::string_view v = a;                // "y:(1)2", the bytes held by `a`
//   a == "y:(1)2";                         // true
//
// Names of up to kInlineChars bytes (`data`, `tensor`, atoms such as `tensor:(1)2`) are stored
// in place; longer ones are interned once, process-wide, in a table that is never freed
// (thread-safe), and the value holds a pointer to the interned copy. A name is either short or
// interned, never both, so byte equality of two values is equality of the names. A program
// names few distinct axes; one that builds types from unboundedly many distinct long names
// (say, a service parsing untrusted input) grows the table by each. Mesh::AxisIndex looks text
// up without interning it.
#ifndef RESHARD_TYPESYS_AXIS_NAME_H_
#define RESHARD_TYPESYS_AXIS_NAME_H_

#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

#include "absl/types/span.h"

namespace reshard {

class AxisName {
 public:
  static constexpr size_t kInlineChars = 15;

  AxisName() = default;
  AxisName(std::string_view text) {  // NOLINT(google-explicit-constructor): names are text.
    if (text.size() <= kInlineChars) {
      std::memcpy(bytes_, text.data(), text.size());
      bytes_[kLengthByte] = static_cast<char>(text.size());
    } else {
      const std::string* interned = Intern(text);
      std::memcpy(bytes_, &interned, sizeof(interned));
      bytes_[kLengthByte] = static_cast<char>(kInterned);
    }
  }
  AxisName(const char* text) : AxisName(std::string_view(text)) {}  // NOLINT
  AxisName(const std::string& text) : AxisName(std::string_view(text)) {}  // NOLINT

  std::string_view view() const {
    const auto length = static_cast<unsigned char>(bytes_[kLengthByte]);
    if (length == kInterned) {
      const std::string* interned;
      std::memcpy(&interned, bytes_, sizeof(interned));
      return *interned;
    }
    return std::string_view(bytes_, length);
  }
  operator std::string_view() const { return view(); }  // NOLINT(google-explicit-constructor)
  std::string str() const { return std::string(view()); }
  size_t size() const { return view().size(); }
  bool empty() const { return bytes_[kLengthByte] == 0; }

  friend bool operator==(const AxisName& a, const AxisName& b) {
    return a.Word(0) == b.Word(0) && a.Word(1) == b.Word(1);
  }
  // Against text: without these, `name == "x"` could convert either side.
  friend bool operator==(const AxisName& a, std::string_view b) { return a.view() == b; }
  friend bool operator==(const AxisName& a, const std::string& b) { return a.view() == b; }
  friend bool operator==(const AxisName& a, const char* b) { return a.view() == b; }
  // Byte order of the names (as std::string's <).
  friend bool operator<(const AxisName& a, const AxisName& b) { return a.view() < b.view(); }
  friend std::ostream& operator<<(std::ostream& os, const AxisName& a) { return os << a.view(); }
  template <typename H>
  friend H AbslHashValue(H h, const AxisName& a) {
    return H::combine(std::move(h), a.Word(0), a.Word(1));
  }

 private:
  static constexpr size_t kLengthByte = 15;
  static constexpr unsigned char kInterned = 0xFF;

  // The process-wide copy of `text` (longer than kInlineChars), created on first use.
  static const std::string* Intern(std::string_view text);

  uint64_t Word(int i) const {
    uint64_t word;
    std::memcpy(&word, bytes_ + 8 * i, sizeof(word));
    return word;
  }

  // The name's bytes, zero-padded, and its length in the last byte; or, for an interned name,
  // the pointer to its copy, zeros, and kInterned.
  alignas(8) char bytes_[16] = {};
};

static_assert(sizeof(AxisName) == 16);

// The names joined by `separator` (absl::StrJoin takes no AxisName: Debian's Abseil has its
// own string_view, absl_compat.h).
inline std::string JoinAxes(absl::Span<const AxisName> names, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out.append(separator);
    out.append(names[i].view());
  }
  return out;
}

}  // namespace reshard

#endif  // RESHARD_TYPESYS_AXIS_NAME_H_
