/* Tests the token stream behind every data format: one file or several
   concatenated (empty ones included), read token by token and in ranges that
   span files, and the range check naming the file and offset within it. */
#include <gtest/gtest.h>

#include <vector>

#include "runtime/data/token_source.h"
#include "base/tensor.h"

using namespace lmrt;

namespace {

/* A stream over `v` (kept alive by the returned source). */
template <typename T>
std::unique_ptr<TokenSource> fromVector(const std::string &name, std::vector<T> v, TokenDType t) {
  auto keep = std::make_shared<std::vector<T>>(std::move(v));
  return std::make_unique<TokenSource>(name, "test", (const unsigned char *)keep->data(), t,
                                       keep->size(), -1, keep, nullptr);
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(TokenSource, ConcatenatesFilesIntoOneStream) {
  auto s = fromVector<uint16_t>("a", {0, 1, 2}, TokenDType::U16);
  s->append(std::move(*fromVector<uint16_t>("empty", {}, TokenDType::U16)));
  s->append(std::move(*fromVector<int32_t>("b", {3, 4}, TokenDType::I32)));
  s->append(std::move(*fromVector<uint8_t>("c", {5, 6, 7, 8}, TokenDType::U8)));
  ASSERT_EQ(s->size(), 9u);
  for (uint64_t i = 0; i < 9; ++i) EXPECT_EQ(s->token(i), (int64_t)i) << i;
  for (uint64_t start = 0; start < 9; ++start)
    for (uint64_t n = 0; start + n <= 9; ++n) {
      std::vector<int32_t> out(n, -1);
      s->copyTokens(start, n, out.data());
      for (uint64_t i = 0; i < n; ++i) EXPECT_EQ(out[i], (int32_t)(start + i));
    }
  std::vector<int32_t> out(3);
  EXPECT_NE(errorOf([&] { s->copyTokens(7, 3, out.data()); }).find("outside its 9 tokens"),
            std::string::npos);
  EXPECT_EQ(s->path(), "a (and 3 more files)");
  EXPECT_EQ(s->format(), "test x 4 files");
}

TEST(TokenSource, RangeCheckNamesTheFileAndItsOffset) {
  auto s = fromVector<uint16_t>("a", {0, 1, 2}, TokenDType::U16);
  s->append(std::move(*fromVector<int64_t>("b", {3, -4}, TokenDType::I64)));
  EXPECT_EQ(errorOf([&] { checkTokenRange(*s, 300); }),
            "data 'b': token -4 at offset 1 is outside the plan's vocabulary (300)");
  EXPECT_EQ(errorOf([&] { checkTokenRange(*fromVector<uint16_t>("a", {0, 7}, TokenDType::U16), 7); }),
            "data 'a': token 7 at offset 1 is outside the plan's vocabulary (7)");
  EXPECT_EQ(errorOf([&] { checkTokenRange(*fromVector<uint16_t>("a", {0, 6}, TokenDType::U16), 7); }), "");
}
