/* Implements: turning text files into documents, the unit the train/validation
   split and the shard document index work on.
   - fortune files: documents are separated by lines that are exactly "%"
     (the separator lines themselves are dropped, empty documents skipped);
   - plain text: documents are blank-line-separated paragraphs; the blank lines
     stay attached to the paragraph before them, so the documents concatenate
     back to the file byte for byte. */
#pragma once
#include <string>
#include <vector>

namespace lmrt {

enum class TextFormat { Auto, Fortune, Text };

/* "auto" | "fortune" | "text"; throws Error otherwise. */
TextFormat parseTextFormat(const std::string &name);

std::vector<std::string> splitFortunes(const std::string &text);
std::vector<std::string> splitParagraphs(const std::string &text);
/* Auto picks Fortune when some line is exactly "%", Text otherwise. */
TextFormat detectFormat(const std::string &text);
std::vector<std::string> splitDocuments(const std::string &text, TextFormat format);

/* The offset of the first byte that makes `data` look binary (a NUL byte or a
   malformed UTF-8 sequence), or npos if it reads as UTF-8 text. */
size_t firstBinaryByte(const std::string &data);

/* Expands the --input paths into the files to read, in order: a file is taken
   as given; a directory contributes every regular file directly in it, sorted
   by name, skipping fortune index files (*.dat) and binaries. Symlinks are
   followed once, and a file reached twice (fortune's "x.u8 -> x") is read once.
   `skipped` receives "path (reason)" for every file left out. */
std::vector<std::string> collectInputFiles(const std::vector<std::string> &inputs,
                                           std::vector<std::string> *skipped);

std::string readTextFile(const std::string &path);

}  // namespace lmrt
