/* Implements: text files to documents (see corpus.h). */
#include "runtime/data/corpus.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <set>
#include <sys/stat.h>

#include "base/file_io.h"
#include "base/tensor.h"

namespace lmrt {

TextFormat parseTextFormat(const std::string &name) {
  if (name == "auto") return TextFormat::Auto;
  if (name == "fortune") return TextFormat::Fortune;
  if (name == "text") return TextFormat::Text;
  fail("unknown --format '%s' (expected auto, fortune or text)", name.c_str());
}

namespace {

/* Calls f(begin, end) for each line of `text`, `end` past its '\n' if any. */
template <typename F> void forEachLine(const std::string &text, F f) {
  size_t i = 0;
  while (i < text.size()) {
    size_t nl = text.find('\n', i);
    size_t end = nl == std::string::npos ? text.size() : nl + 1;
    f(i, end);
    i = end;
  }
}

/* A line's content without its "\n" or "\r\n". */
std::string lineContent(const std::string &text, size_t b, size_t e) {
  if (e > b && text[e - 1] == '\n') --e;
  if (e > b && text[e - 1] == '\r') --e;
  return text.substr(b, e - b);
}

bool isBlank(const std::string &line) {
  return line.find_first_not_of(" \t") == std::string::npos;
}

}  // namespace

std::vector<std::string> splitFortunes(const std::string &text) {
  std::vector<std::string> docs;
  std::string cur;
  auto flush = [&] {
    docs.push_back(cur);
    cur.clear();
  };
  forEachLine(text, [&](size_t b, size_t e) {
    if (lineContent(text, b, e) == "%")
      flush();
    else
      cur.append(text, b, e - b);
  });
  flush();
  // An empty document, or one of only whitespace lines, is not a fortune.
  docs.erase(std::remove_if(docs.begin(), docs.end(),
                            [](const std::string &d) {
                              return d.find_first_not_of(" \t\r\n") == std::string::npos;
                            }),
             docs.end());
  return docs;
}

std::vector<std::string> splitParagraphs(const std::string &text) {
  std::vector<std::string> docs;
  std::string cur;
  bool inGap = false;  // saw a blank line after some content
  forEachLine(text, [&](size_t b, size_t e) {
    bool blank = isBlank(lineContent(text, b, e));
    bool hasContent = cur.find_first_not_of(" \t\r\n") != std::string::npos;
    if (!blank && inGap && hasContent) {
      docs.push_back(cur);
      cur.clear();
      inGap = false;
    }
    if (blank && hasContent) inGap = true;
    cur.append(text, b, e - b);
  });
  if (!cur.empty()) {
    // Trailing or leading blank-only text joins its neighbour instead of
    // becoming a document of its own.
    if (cur.find_first_not_of(" \t\r\n") == std::string::npos && !docs.empty())
      docs.back() += cur;
    else
      docs.push_back(cur);
  }
  if (docs.size() == 1 && docs[0].find_first_not_of(" \t\r\n") == std::string::npos) docs.clear();
  return docs;
}

TextFormat detectFormat(const std::string &text) {
  bool fortune = false;
  forEachLine(text, [&](size_t b, size_t e) {
    if (!fortune && lineContent(text, b, e) == "%") fortune = true;
  });
  return fortune ? TextFormat::Fortune : TextFormat::Text;
}

std::vector<std::string> splitDocuments(const std::string &text, TextFormat format) {
  if (format == TextFormat::Auto) format = detectFormat(text);
  return format == TextFormat::Fortune ? splitFortunes(text) : splitParagraphs(text);
}

size_t firstBinaryByte(const std::string &data) {
  const unsigned char *s = reinterpret_cast<const unsigned char *>(data.data());
  size_t n = data.size();
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    if (c == 0) return i;
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (len == 0 || c == 0xc0 || c == 0xc1 || c > 0xf4 || i + len > n) return i;
    for (size_t k = 1; k < len; ++k)
      if ((s[i + k] & 0xc0) != 0x80) return i;
    i += len;
  }
  return std::string::npos;
}

std::string readTextFile(const std::string &path) { return readWholeFile(path, "input"); }

namespace {

std::string canonical(const std::string &path) {
  char buf[PATH_MAX];
  if (!::realpath(path.c_str(), buf))
    fail("cannot resolve input '%s': %s", path.c_str(), std::strerror(errno));
  return buf;
}

bool endsWith(const std::string &s, const char *suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

}  // namespace

std::vector<std::string> collectInputFiles(const std::vector<std::string> &inputs,
                                           std::vector<std::string> *skipped) {
  std::vector<std::string> files;
  std::set<std::string> seen;  // canonical paths already taken
  auto skip = [&](const std::string &path, const std::string &why) {
    if (skipped) skipped->push_back(path + " (" + why + ")");
  };
  for (const std::string &input : inputs) {
    struct stat st;
    if (::stat(input.c_str(), &st) != 0)
      fail("input '%s' does not exist or cannot be read: %s", input.c_str(), std::strerror(errno));
    if (S_ISREG(st.st_mode)) {
      std::string c = canonical(input);
      if (seen.insert(c).second) files.push_back(input);
      continue;
    }
    if (!S_ISDIR(st.st_mode)) fail("input '%s' is neither a file nor a directory", input.c_str());
    DIR *dir = ::opendir(input.c_str());
    if (!dir) fail("cannot list input directory '%s': %s", input.c_str(), std::strerror(errno));
    std::vector<std::string> names;
    while (dirent *ent = ::readdir(dir)) {
      std::string name = ent->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(dir);
    std::sort(names.begin(), names.end());
    std::string prefix = input;
    if (!prefix.empty() && prefix.back() != '/') prefix += '/';
    for (const std::string &name : names) {
      std::string path = prefix + name;
      struct stat fst;
      // stat follows a symlink (once, to its final target); a dangling link or a
      // link to a directory is not a corpus file.
      if (::stat(path.c_str(), &fst) != 0) {
        skip(path, "dangling symlink");
        continue;
      }
      if (!S_ISREG(fst.st_mode)) {
        if (S_ISDIR(fst.st_mode)) skip(path, "directory; inputs are not searched recursively");
        continue;
      }
      if (endsWith(name, ".dat")) {
        skip(path, "fortune index");
        continue;
      }
      std::string c = canonical(path);
      if (seen.count(c)) {
        skip(path, "same file as an earlier input");
        continue;
      }
      size_t bad = firstBinaryByte(readTextFile(path));
      if (bad != std::string::npos) {
        skip(path, "binary: not UTF-8 text at byte " + std::to_string(bad));
        continue;
      }
      seen.insert(c);
      files.push_back(path);
    }
  }
  return files;
}

}  // namespace lmrt
