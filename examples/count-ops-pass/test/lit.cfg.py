# -*- Python -*-  lit configuration of the count-ops example.
import os
import lit.formats

config.name = "count-ops"
config.test_format = lit.formats.ShTest(True)
config.suffixes = [".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.path.dirname(config.plugin), "test")

# LMC's installed tools, then LLVM's FileCheck and split-file.
config.environment["PATH"] = os.pathsep.join(
    [config.lmc_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
config.substitutions.append(("%plugin", config.plugin))
config.substitutions.append(("%example_src", config.example_src))
