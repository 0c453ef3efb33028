/* Tests lmrt's switches from the environment (base/env.h): unset and empty are the
   default, the values a switch takes are read, and any other value is an error
   naming the variable, the value and what it takes. */
#include <gtest/gtest.h>

#include <cstdlib>

#include "base/env.h"
#include "base/tensor.h"

namespace lmrt {
namespace {

constexpr const char *kVar = "LMC_ENV_TEST_SWITCH";

TEST(Env, SwitchReadsZeroAndOne) {
  unsetenv(kVar);
  EXPECT_FALSE(envSwitch(kVar));
  setenv(kVar, "", 1);
  EXPECT_FALSE(envSwitch(kVar));
  setenv(kVar, "0", 1);
  EXPECT_FALSE(envSwitch(kVar));
  setenv(kVar, "1", 1);
  EXPECT_TRUE(envSwitch(kVar));
  // A switch that is on by default: unset and empty are on, "0" turns it off.
  EXPECT_TRUE(envSwitch(kVar, true));
  setenv(kVar, "0", 1);
  EXPECT_FALSE(envSwitch(kVar, true));
  setenv(kVar, "", 1);
  EXPECT_TRUE(envSwitch(kVar, true));
  unsetenv(kVar);
  EXPECT_TRUE(envSwitch(kVar, true));
}

TEST(Env, ChoiceRefusesAValueItDoesNotTake) {
  setenv(kVar, "tensor_cores", 1);
  try {
    envChoice(kVar, {"cuda-cores", "tensor-cores"});
    ADD_FAILURE() << "no error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "LMC_ENV_TEST_SWITCH='tensor_cores': it takes 'cuda-cores', 'tensor-cores' (or unset)");
  }
  setenv(kVar, "tensor-cores", 1);
  EXPECT_EQ(envChoice(kVar, {"cuda-cores", "tensor-cores"}), "tensor-cores");
  unsetenv(kVar);
  EXPECT_EQ(envChoice(kVar, {"cuda-cores", "tensor-cores"}), "");
  setenv(kVar, "yes", 1);
  EXPECT_THROW(envSwitch(kVar), Error);
  unsetenv(kVar);
}

}  // namespace
}  // namespace lmrt
