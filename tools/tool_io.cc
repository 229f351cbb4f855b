#include "tools/tool_io.h"

#include <fstream>
#include <iostream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "typesys/absl_compat.h"
#include "typesys/dist_type.h"
#include "typesys/mesh.h"

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

std::string OneLine(absl::string_view text, size_t max_bytes) {
  std::string out;
  bool pending_space = false;
  size_t i = 0;
  for (; i < text.size() && out.size() < max_bytes; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n' || c == '\r' || c == '\t') {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space && c != ' ') out += ' ';
    pending_space = false;
    if (c < 0x20 || c == 0x7f) {
      absl::StrAppend(&out, "\\x", absl::Hex(c, absl::kZeroPad2));
    } else {
      out += static_cast<char>(c);
    }
  }
  // Not in the middle of a UTF-8 character (continuation bytes are 10xxxxxx).
  while (i > 0 && i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80 &&
         static_cast<unsigned char>(text[i - 1]) >= 0x80) {
    out.pop_back();
    --i;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (i < text.size()) absl::StrAppend(&out, " ... (", text.size() - i, " more bytes)");
  return out;
}

absl::Status CheckPlanMatchesFlags(const Plan& plan, const std::string& mesh,
                                   const std::string& from, const std::string& to) {
  if (!mesh.empty()) {
    absl::StatusOr<Mesh> parsed = ParseMesh(mesh);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--mesh '", mesh, "': ", parsed.status().message()));
    }
    if (!(*parsed == plan.mesh)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--mesh ", parsed->ToString(), " differs from the plan's mesh ", plan.mesh.ToString()));
    }
  }
  const struct {
    std::string_view flag;
    const std::string& text;
    const DistType& type;
  } types[] = {{"--from", from, plan.source}, {"--to", to, plan.target}};
  for (const auto& [flag, text, type] : types) {
    if (text.empty()) continue;
    absl::StatusOr<DistType> parsed = ParseValidType(plan.mesh, text);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Absl(flag), " '", text, "': ", parsed.status().message()));
    }
    if (!(*parsed == type)) {
      return absl::InvalidArgumentError(absl::StrCat(Absl(flag), " ", ToString(*parsed),
                                                     " differs from the plan's ", ToString(type)));
    }
  }
  return absl::OkStatus();
}

}  // namespace reshard
