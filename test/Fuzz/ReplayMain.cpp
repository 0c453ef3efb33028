/* Implements: a main for the fuzz targets where libFuzzer is not linked (the
   normal build, any compiler): runs LLVMFuzzerTestOneInput once on each file
   named, or on each file in each directory named, in name order. ctest replays
   every target's regression inputs this way (test/Fuzz/CMakeLists.txt), so a bug
   a fuzzer found stays fixed in every build, with or without clang. */
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

int main(int argc, char **argv) {
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    if (fs::is_directory(argv[i], ec)) {
      std::vector<std::string> in;
      for (const fs::directory_entry &e : fs::directory_iterator(argv[i]))
        if (e.is_regular_file()) in.push_back(e.path().string());
      std::sort(in.begin(), in.end());
      files.insert(files.end(), in.begin(), in.end());
    } else if (fs::is_regular_file(argv[i], ec)) {
      files.push_back(argv[i]);
    } else {
      std::fprintf(stderr, "%s: '%s' is neither a file nor a directory\n", argv[0], argv[i]);
      return 2;
    }
  }
  for (const std::string &f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    std::fprintf(stderr, "replaying %s (%zu bytes)\n", f.c_str(), bytes.size());
    // A heap copy of exactly its size (never a null pointer), as libFuzzer passes it.
    std::unique_ptr<uint8_t[]> data(new uint8_t[bytes.size()]);
    std::copy(bytes.begin(), bytes.end(), data.get());
    LLVMFuzzerTestOneInput(data.get(), bytes.size());
  }
  std::printf("replayed %zu inputs\n", files.size());
  return 0;
}
