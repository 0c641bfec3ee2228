// Strict reading of JSON objects for configs and task manifests: required
// keys via required(), defaults via optional(), and finish() rejects any key
// that was not read, naming its JSON pointer and the allowed keys. Every
// error is an InputError naming the file, the key and what was expected.
#pragma once

#include "kevo/core/error.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kevo {

// Reads a JSON file; a syntax error names the file, line and column.
nlohmann::json read_json_file(const std::string& path);

class StrictObject {
 public:
  // Throws InputError unless j is an object.
  StrictObject(const nlohmann::json& j, std::string file, std::string pointer);
  // It keeps a reference to j: a temporary would dangle.
  StrictObject(nlohmann::json&&, std::string, std::string) = delete;

  const std::string& file() const { return file_; }
  const std::string& pointer() const { return pointer_; }
  std::string pointer(const std::string& key) const { return pointer_ + "/" + key; }
  bool has(const std::string& key) const { return j_.contains(key); }

  // The raw value (marks the key as read). Throws when missing.
  const nlohmann::json& at(const std::string& key);
  const nlohmann::json* find(const std::string& key);   // nullptr when missing

  std::string string(const std::string& key);
  std::string string(const std::string& key, const std::string& def);
  std::int64_t integer(const std::string& key, std::optional<std::int64_t> def = std::nullopt,
                       std::int64_t min = INT64_MIN, std::int64_t max = INT64_MAX);
  double number(const std::string& key, std::optional<double> def = std::nullopt,
                double min = -1e308, double max = 1e308);
  bool boolean(const std::string& key, std::optional<bool> def = std::nullopt);
  std::string choice(const std::string& key, const std::vector<std::string>& allowed,
                     std::optional<std::string> def = std::nullopt);
  std::vector<std::string> strings(const std::string& key,
                                   std::optional<std::vector<std::string>> def = std::nullopt);
  StrictObject object(const std::string& key);                 // required
  std::optional<StrictObject> optional_object(const std::string& key);

  // Marks a key as known without reading it (for finish() and its list of
  // allowed keys), e.g. a key that is read by other code later.
  void allow(const std::string& key);

  // Throws InputError for a key present but never read (accessors mark a key
  // read even when it is absent, so the message lists every allowed key).
  void finish() const;

  [[noreturn]] void fail(const std::string& key, const std::string& expected) const;

 private:
  const nlohmann::json& j_;
  std::string file_, pointer_;
  std::set<std::string> read_;
};

std::string json_type_name(const nlohmann::json& j);

}  // namespace kevo
