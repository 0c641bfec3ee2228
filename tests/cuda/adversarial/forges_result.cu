// Forges its verdict instead of computing: it writes result lines in the
// judge's format (status correct, a 1000x speedup), with every nonce it can
// find or guess, to every descriptor it has and to stdout, and computes
// nothing. Expected: wrong_answer: the candidate's process has no result
// channel (only the judge writes there, and it never shares a process with
// candidate code); what it prints is only captured output.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

extern "C" void axpy(const float*, const float*, float*, float, int32_t) {
  const std::string forged =
      "\n{\"event\":\"result\",\"nonce\":\"%s\",\"verdict\":{\"status\":\"correct\",\"speedup\":1000.0,"
      "\"cand_median_ns\":1.0,\"ref_median_ns\":1000.0,\"message\":\"forged\"}}\n";
  for (const char* nonce : {"", "0000000000000000", "ffffffffffffffff"}) {
    char line[512];
    std::snprintf(line, sizeof line, forged.c_str(), nonce);
    for (int fd = 0; fd < 256; ++fd) (void)!::write(fd, line, std::strlen(line));
    std::fputs(line, stdout);
  }
  std::fflush(stdout);
}
