// absl_compat.h — bridging std::string_view to Debian's Abseil.
//
// Debian 12's Abseil is built with ABSL_OPTION_USE_STD_STRING_VIEW=0, so absl::string_view is
// its own type and absl::StrCat/StrSplit/SimpleAtoi do not accept std::string_view. reshard's
// API uses std::string_view (so consumers need not match Abseil's build options); convert at
// the call into Abseil:
//
//   absl::StrCat("unknown axis '", Absl(name), "'");
#ifndef RESHARD_TYPESYS_ABSL_COMPAT_H_
#define RESHARD_TYPESYS_ABSL_COMPAT_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace reshard {

inline absl::string_view Absl(std::string_view s) { return absl::string_view(s.data(), s.size()); }
inline std::string_view Std(absl::string_view s) { return std::string_view(s.data(), s.size()); }

}  // namespace reshard

#endif  // RESHARD_TYPESYS_ABSL_COMPAT_H_
