#include "tools/tool_io.h"

#include <fstream>
#include <iostream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "typesys/absl_compat.h"

namespace reshard {

absl::StatusOr<std::string> ReadInputFile(std::string_view flag, const std::string& path) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    file.open(path, std::ios::binary);
    if (!file) {
      return absl::InvalidArgumentError(absl::StrCat(Absl(flag), ": cannot open '", path, "'"));
    }
    in = &file;
  }
  std::string text;
  char chunk[1 << 16];
  while (in->read(chunk, sizeof(chunk)) || in->gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in->gcount()));
    if (text.size() > kMaxInputFileBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(Absl(flag), " '", path, "': larger than ", kMaxInputFileBytes, " bytes"));
    }
  }
  if (in->bad()) {
    return absl::InvalidArgumentError(absl::StrCat(Absl(flag), " '", path, "': read error"));
  }
  return text;
}

}  // namespace reshard
