#include "kevo/core/strict_json.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <vector>

namespace kevo {
namespace {

std::string escape_pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

// The value as it appears in the input, shortened for messages.
std::string shown(const nlohmann::json& j) {
  std::string text = j.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

std::string got(const nlohmann::json& j) { return ", got " + shown(j); }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += ", ";
    out += s;
  }
  return out;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string range_text(const char* what, bool has_min, const std::string& min, bool has_max,
                       const std::string& max) {
  std::string out = what;
  if (has_min && has_max) out += " in [" + min + ", " + max + "]";
  else if (has_min) out += " >= " + min;
  else if (has_max) out += " <= " + max;
  return out;
}

std::string number_text(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// Parser callback state: detects duplicate keys (nlohmann keeps the last one
// silently, which would hide a typo'd override) and knows the pointer.
struct Frame {
  bool array = false;
  std::size_t index = 0;
  std::string key;
  std::vector<std::string> keys;
};

std::string frames_pointer(const std::vector<Frame>& frames) {
  std::string p;
  for (const auto& f : frames) {
    if (f.array) p += "/" + std::to_string(f.index);
    else if (!f.key.empty() || !f.keys.empty()) p += "/" + escape_pointer_token(f.key);
  }
  return p;
}

}  // namespace

std::string json_type_name(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return "boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "integer";
    case nlohmann::json::value_t::number_float: return "number";
    case nlohmann::json::value_t::string: return "string";
    case nlohmann::json::value_t::array: return "array";
    case nlohmann::json::value_t::object: return "object";
    default: return "value";
  }
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "a readable JSON file");
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throw InputError(path, "", "a readable JSON file");
  const std::string text = buf.str();

  std::vector<Frame> frames;
  auto callback = [&](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    auto element_done = [&] {
      if (!frames.empty() && frames.back().array) ++frames.back().index;
    };
    switch (event) {
      case E::object_start:
        frames.push_back(Frame{});
        break;
      case E::key: {
        Frame& f = frames.back();
        const std::string k = parsed.get<std::string>();
        if (std::find(f.keys.begin(), f.keys.end(), k) != f.keys.end()) {
          f.key = k;
          throw InputError(path, frames_pointer(frames), "duplicate key; expected each key once per object");
        }
        f.keys.push_back(k);
        f.key = k;
        break;
      }
      case E::object_end:
      case E::array_end:
        frames.pop_back();
        element_done();
        break;
      case E::array_start:
        frames.push_back(Frame{true, 0, {}, {}});
        break;
      case E::value:
        element_done();
        break;
    }
    return true;
  };

  try {
    return nlohmann::json::parse(text, callback);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is the 1-based offset of the offending character.
    const std::size_t byte = std::min<std::size_t>(e.byte == 0 ? 1 : e.byte, text.size() + 1);
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string detail = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ..."
    if (auto p = detail.find("syntax error"); p != std::string::npos) detail = detail.substr(p);
    throw InputError(path, "",
                     "valid JSON; line " + std::to_string(line) + ", column " + std::to_string(column) +
                         ": " + detail);
  }
}

StrictObject::StrictObject(const nlohmann::json& j, std::string file, std::string pointer)
    : j_(j), file_(std::move(file)), pointer_(std::move(pointer)) {
  if (!j_.is_object()) throw InputError(file_, pointer_, "an object" + got(j_));
}

const nlohmann::json& StrictObject::at(const std::string& key) {
  read_.insert(key);
  auto it = j_.find(key);
  if (it == j_.end()) fail(key, "a value (the key is required)");
  return *it;
}

const nlohmann::json* StrictObject::find(const std::string& key) {
  read_.insert(key);
  auto it = j_.find(key);
  return it == j_.end() ? nullptr : &*it;
}

std::string StrictObject::string(const std::string& key) {
  read_.insert(key);
  auto it = j_.find(key);
  if (it == j_.end()) fail(key, "a string (the key is required)");
  if (!it->is_string()) fail(key, "a string" + got(*it));
  return it->get<std::string>();
}

std::string StrictObject::string(const std::string& key, const std::string& def) {
  read_.insert(key);
  auto it = j_.find(key);
  if (it == j_.end()) return def;
  if (!it->is_string()) fail(key, "a string" + got(*it));
  return it->get<std::string>();
}

std::int64_t StrictObject::integer(const std::string& key, std::optional<std::int64_t> def,
                                   std::int64_t min, std::int64_t max) {
  read_.insert(key);
  const std::string what = range_text("an integer", min != INT64_MIN, std::to_string(min),
                                      max != INT64_MAX, std::to_string(max));
  auto it = j_.find(key);
  if (it == j_.end()) {
    if (def) return *def;
    fail(key, what + " (the key is required)");
  }
  std::int64_t v = 0;
  if (it->is_number_unsigned()) {
    const auto u = it->get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(INT64_MAX)) fail(key, what + got(*it));
    v = static_cast<std::int64_t>(u);
  } else if (it->is_number_integer()) {
    v = it->get<std::int64_t>();
  } else if (it->is_number_float()) {
    // 1e6 is a fine way to write a million; 2.5 is not an integer.
    const double d = it->get<double>();
    if (d != std::floor(d) || std::fabs(d) > 9007199254740992.0) fail(key, what + got(*it));
    v = static_cast<std::int64_t>(d);
  } else {
    fail(key, what + got(*it));
  }
  if (v < min || v > max) fail(key, what + got(*it));
  return v;
}

double StrictObject::number(const std::string& key, std::optional<double> def, double min, double max) {
  read_.insert(key);
  const std::string what = range_text("a number", min > -1e308, number_text(min), max < 1e308, number_text(max));
  auto it = j_.find(key);
  if (it == j_.end()) {
    if (def) return *def;
    fail(key, what + " (the key is required)");
  }
  if (!it->is_number()) fail(key, what + got(*it));
  const double v = it->get<double>();
  if (!(v >= min && v <= max)) fail(key, what + got(*it));
  return v;
}

bool StrictObject::boolean(const std::string& key, std::optional<bool> def) {
  read_.insert(key);
  auto it = j_.find(key);
  if (it == j_.end()) {
    if (def) return *def;
    fail(key, "true or false (the key is required)");
  }
  if (!it->is_boolean()) fail(key, "true or false" + got(*it));
  return it->get<bool>();
}

std::string StrictObject::choice(const std::string& key, const std::vector<std::string>& allowed,
                                 std::optional<std::string> def) {
  read_.insert(key);
  const std::string what = "one of: " + join(allowed);
  auto it = j_.find(key);
  if (it == j_.end()) {
    if (def) return *def;
    fail(key, what + " (the key is required)");
  }
  if (!it->is_string()) fail(key, what + got(*it));
  const auto v = it->get<std::string>();
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) fail(key, what + got(*it));
  return v;
}

std::vector<std::string> StrictObject::strings(const std::string& key,
                                               std::optional<std::vector<std::string>> def) {
  read_.insert(key);
  auto it = j_.find(key);
  if (it == j_.end()) {
    if (def) return *def;
    fail(key, "an array of strings (the key is required)");
  }
  if (!it->is_array()) fail(key, "an array of strings" + got(*it));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < it->size(); ++i) {
    const auto& e = (*it)[i];
    if (!e.is_string())
      throw InputError(file_, pointer(key) + "/" + std::to_string(i), "a string" + got(e));
    out.push_back(e.get<std::string>());
  }
  return out;
}

StrictObject StrictObject::object(const std::string& key) {
  read_.insert(key);
  auto it = j_.find(key);
  if (it == j_.end()) fail(key, "an object (the key is required)");
  return StrictObject(*it, file_, pointer(key));
}

std::optional<StrictObject> StrictObject::optional_object(const std::string& key) {
  read_.insert(key);
  auto it = j_.find(key);
  if (it == j_.end()) return std::nullopt;
  return StrictObject(*it, file_, pointer(key));
}

void StrictObject::allow(const std::string& key) { read_.insert(key); }

void StrictObject::finish() const {
  for (auto it = j_.begin(); it != j_.end(); ++it) {
    if (read_.count(it.key())) continue;
    std::string expected = "unknown key; expected ";
    if (read_.empty()) {
      expected += "no keys here";
    } else {
      expected += "one of: " + join(std::vector<std::string>(read_.begin(), read_.end()));
      // Point at the likely typo.
      std::string best;
      std::size_t best_d = 3;
      for (const auto& k : read_) {
        const std::size_t d = edit_distance(it.key(), k);
        if (d < best_d) {
          best_d = d;
          best = k;
        }
      }
      if (!best.empty()) expected += " (did you mean '" + best + "'?)";
    }
    throw InputError(file_, pointer(escape_pointer_token(it.key())), expected);
  }
}

void StrictObject::fail(const std::string& key, const std::string& expected) const {
  throw InputError(file_, key.empty() ? pointer_ : pointer(escape_pointer_token(key)), expected);
}

}  // namespace kevo
