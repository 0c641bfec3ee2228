// Content hashes. 64-bit FNV-1a (printed as 16 lowercase hex digits) for
// dedup and lineage keys: fast, not cryptographic, so never where a chosen
// collision would do harm. SHA-256 (FIPS 180-4) where it would: the compile
// cache's keys and its check of an object's content.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kevo {

std::uint64_t fnv1a64(std::string_view data, std::uint64_t basis = 0xcbf29ce484222325ULL);
std::uint64_t fnv1a64(const void* data, std::size_t size,
                      std::uint64_t basis = 0xcbf29ce484222325ULL);
std::string hex64(std::uint64_t v);

// SipHash-2-4 (Aumasson and Bernstein, 2012) under the 128-bit key (k0, k1),
// each half read as the key's bytes in little-endian order: a keyed hash, for
// tables whose keys an adversary writes (the lineage writer's text dedup),
// where finding a collision needs the key.
std::uint64_t siphash24(std::string_view data, std::uint64_t k0, std::uint64_t k1) noexcept;

// Bytes as lowercase hex, two digits a byte.
std::string to_hex(const void* data, std::size_t size);

// SHA-256 over a message given in pieces of any size. finish() pads the
// message, returns its digest and starts the hasher over on an empty message.
class Sha256 {
 public:
  using Digest = std::array<std::uint8_t, 32>;

  Sha256() noexcept { reset(); }
  void update(std::string_view data) noexcept { update(data.data(), data.size()); }
  void update(const void* data, std::size_t size) noexcept;
  Digest finish() noexcept;
  std::string finish_hex();   // finish() as 64 lowercase hex digits

 private:
  void reset() noexcept;
  void compress(const std::uint8_t* block) noexcept;

  std::array<std::uint32_t, 8> state_{};
  std::array<std::uint8_t, 64> block_{};
  std::size_t buffered_ = 0;     // bytes waiting in block_
  std::uint64_t length_ = 0;     // message bytes so far
};

// SHA-256 of `data` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

// Source normalised for dedup: comments removed (not inside literals), runs of
// whitespace collapsed to one space where dropping it could join two tokens
// (identifier characters and quotes, or operator characters: "a - -b") and to
// nothing elsewhere, preprocessor directives kept on their own lines; so that
// reformatting or re-commenting a kernel does not make it a new candidate.
std::string normalise_source(std::string_view source);
std::uint64_t source_hash(std::string_view source);  // fnv1a64(normalise_source(...))

// The dedup keys of a candidate source (engine hot path: one normalisation
// of the body). `body` hashes the source without its kevo:params block;
// `full` combines the normalised params block with it, so two sources share
// `full` exactly when their params blocks and their bodies normalise alike.
struct SourceHashes {
  std::uint64_t full = 0;
  std::uint64_t body = 0;
};
SourceHashes source_hashes(std::string_view source);

// A Python source (a torch task's candidate) normalised for dedup: line ends
// unified, trailing blanks and blank lines dropped, nothing else. The C rules
// of normalise_source would change its meaning: indentation is syntax, `//`
// is floor division (`x // 4` and `x // 8` would be one program) and the
// kernel sources in its strings keep their own comments and directives.
std::string normalise_python_source(std::string_view source);
// The dedup keys of a source in `syntax`. A Python source's `body` hashes it
// without its "# kevo:params" block, normalise_python_source'd; `full`
// combines the normalised block with it, and is `body` when there is none.
enum class SourceSyntax { c_like, python };
SourceHashes source_hashes(std::string_view source, SourceSyntax syntax);

}  // namespace kevo
