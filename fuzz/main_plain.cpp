// fuzz/main_plain.cpp — a plain main() for the fuzz targets (simdjson's "link a plain main"):
// runs LLVMFuzzerTestOneInput once over every file named on the command line, directories
// recursively, in sorted order. Ordinary builds link this instead of libFuzzer, so every target is
// compiled by normal CI (it never rots) and `ctest` replays each seed corpus and every saved
// crash, with or without sanitizers, on any compiler.
//
// Exit status: 0 when every input ran; 1 when a path is missing or no input was found at all (a
// replay of an empty or misspelt corpus directory must not pass silently). A failing invariant
// aborts inside the target, like under libFuzzer.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
// Optional in a target, as with libFuzzer.
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    fs::path p(argv[i]);
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      for (const auto& e : fs::recursive_directory_iterator(p, ec))
        if (e.is_regular_file()) files.push_back(e.path());
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      std::fprintf(stderr, "%s: no such file or directory: %s\n", argv[0], argv[i]);
      return 1;
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::fprintf(stderr, "%s: no inputs (usage: %s FILE|DIR...)\n", argv[0], argv[0]);
    return 1;
  }
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "%s: cannot read %s\n", argv[0], f.c_str());
      return 1;
    }
    // A heap copy of exactly `size` bytes, so ASan sees any read past the end as libFuzzer would.
    std::vector<std::uint8_t> buf(bytes.begin(), bytes.end());
    std::fprintf(stderr, "running %s (%zu bytes)\n", f.c_str(), buf.size());
    LLVMFuzzerTestOneInput(buf.empty() ? nullptr : buf.data(), buf.size());
  }
  std::fprintf(stderr, "%s: %zu inputs ran\n", argv[0], files.size());
  return 0;
}
