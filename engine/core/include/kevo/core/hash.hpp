// Content hashes used for dedup, caches and lineage. 64-bit FNV-1a, printed as
// 16 lowercase hex digits. Not cryptographic: keys, not signatures.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kevo {

std::uint64_t fnv1a64(std::string_view data, std::uint64_t basis = 0xcbf29ce484222325ULL);
std::uint64_t fnv1a64(const void* data, std::size_t size,
                      std::uint64_t basis = 0xcbf29ce484222325ULL);
std::string hex64(std::uint64_t v);

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

}  // namespace kevo
