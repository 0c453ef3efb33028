/* Implements: a scratch directory of this test process, made under gtest's TempDir()
   with mkdtemp and removed when the process exits. Fixed names under /tmp collided
   when two builds of the project ran their unit tests on one machine at once (each
   removing or rewriting the other's files). */
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace lmrt_test {

/* "<TempDir>/lmrt_unit.XXXXXX/", the same for every call in one process. */
inline const std::string &processTempDir() {
  static const std::string dir = [] {
    static std::string made = ::testing::TempDir() + "lmrt_unit.XXXXXX";
    if (!mkdtemp(made.data())) {
      std::perror(("mkdtemp " + made).c_str());
      std::abort();
    }
    std::atexit([] { (void)std::system(("rm -rf '" + made + "'").c_str()); });
    return made + "/";
  }();
  return dir;
}

}  // namespace lmrt_test
