# -*- Python -*-  lit configuration for LMC.
import os
import lit.formats
from lit.llvm import llvm_config

config.name = "LMC"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".lm", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Unit"]
config.test_source_root = os.path.dirname(__file__)
# Every lit run gets scratch space of its own (each test's %t lives under it), so two
# runs in one build folder (ctest's and a manual one) never remove or rewrite each
# other's files mid-test. Runs whose process is gone are cleared when a new one starts;
# the last run's files stay until then, for a look at a failure.
def _lit_runs_root():
    root = os.path.join(config.lmc_obj_root, "test", "runs")
    os.makedirs(root, exist_ok=True)
    for name in os.listdir(root):
        try:
            os.kill(int(name), 0)  # still running: leave it
        except (ValueError, ProcessLookupError):
            import shutil
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)
        except PermissionError:
            pass
    return os.path.join(root, str(os.getpid()))
config.test_exec_root = _lit_runs_root()

# Our tools first, then LLVM 19's FileCheck/not/count (never the v14 ones on PATH).
# (append_path puts the new folder in front of the existing PATH.)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.lmc_tools_dir, append_path=True)
llvm_config.with_system_environment(["HOME", "TMPDIR", "OMP_NUM_THREADS", "LMC_REQUIRE_REFERENCE", "LMC_CACHE_DIR",
                                     "LMC_HF_VENV", "LMC_HF_PYTHON"])
# lit runs one test per core, and each test's lmrt (OpenMP and OpenBLAS) and PyTorch
# would take every core: twice the threads on the cores, each waiting for the others
# (about 25 % more CPU time a test on the 2-core CI machine). So one thread a process
# unless the caller says otherwise; tests of more threads pass --threads.
if "OMP_NUM_THREADS" not in os.environ:
    config.environment["OMP_NUM_THREADS"] = "1"
config.substitutions.append(("%models", os.path.join(config.lmc_src_root, "models")))
config.substitutions.append(("%python", config.python))
# The fortune files scripts/setup.sh installs; the GPU bundle carries its own copy (fortunes_dir).
config.substitutions.append(("%fortunes", getattr(config, "fortunes_dir", "/usr/share/games/fortunes")))
config.substitutions.append(("%lmc_src", config.lmc_src_root))
config.substitutions.append(("%mlir_include", config.mlir_include_dir))
config.substitutions.append(("%lmc_lib", os.path.join(config.lmc_obj_root, "lib")))  # LMC's shared libraries
llvm_config.add_tool_substitutions(["lm-opt", "lm-tblgen", "lmc", "lmrt"], [config.lmc_tools_dir])
# Several processes on one machine (docs/distributed.md): Open MPI's mpirun as root (CI
# runs as root), more ranks than cores allowed, no core binding (tests run side by
# side), shared memory without cross-memory attach (absent in many containers).
# Each test's mpiruns keep their session directories under the test's own %t.ompi
# (orte_tmpdir_base): by default every mpirun on the machine shares one
# $TMPDIR/ompi.<host>.<uid>, which one mpirun creates while another, ending, removes
# it, and the loser fails to start ("A call to mkdir was unable to create the desired
# directory ... orte_session_dir failed"; scripts/stress-mpirun.sh shows it). A test
# runs its mpiruns one after another, so one folder a test is enough. (lit replaces
# %t after this substitution.)
config.substitutions.append(("%mpirun", "env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                             "OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_orte_tmpdir_base=%t.ompi "
                             "mpirun --oversubscribe --bind-to none"))

# Two "hosts" on one machine: network namespaces (root and CAP_SYS_ADMIN; CI runs
# as root), for the multi-node data-parallel test (test/E2E/Inputs/two_hosts.sh).
import shutil
import subprocess
if os.geteuid() == 0 and shutil.which("ip") and shutil.which("mpirun"):
    probe = f"lmcprobe{os.getpid()}"
    if subprocess.run(["ip", "netns", "add", probe], capture_output=True).returncode == 0:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
        config.available_features.add("netns")

# nvcc compiles every generated CUDA kernel (test/Codegen/kernels-cuda.test).
import shutil
nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
if nvcc:
    config.available_features.add("nvcc")
    config.substitutions.append(("%nvcc", nvcc))
elif os.environ.get("LMC_REQUIRE_NVCC"):
    lit_config.fatal("no nvcc on PATH or in /usr/local/cuda/bin, and LMC_REQUIRE_NVCC is set")
else:
    lit_config.warning("generated CUDA kernels are not compiled: no nvcc on PATH or in /usr/local/cuda/bin")

# GPU tests (test/GPU/, `REQUIRES: cuda-gpu`) run where `lmrt devices` finds a CUDA
# GPU; elsewhere lit reports them UNSUPPORTED and says why here.
import subprocess
try:
    _devices = subprocess.run([os.path.join(config.lmc_tools_dir, "lmrt"), "devices"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    _gpu, _why = _devices.returncode == 0, _devices.stdout.strip()
except OSError as e:
    _gpu, _why = False, "cannot run lmrt devices: " + str(e)
if _gpu:
    config.available_features.add("cuda-gpu")
else:
    lit_config.note("GPU tests are unsupported here: " + _why)

if os.path.exists(config.python) and os.system(config.python + " -c 'import torch' 2>/dev/null") == 0:
    config.available_features.add("torch")
elif os.environ.get("LMC_REQUIRE_REFERENCE"):
    # scripts/test.sh installs python3-torch: the PyTorch parity test must run, not be skipped.
    lit_config.fatal(config.python + " cannot import torch, and LMC_REQUIRE_REFERENCE is set")
else:
    lit_config.warning("PyTorch reference tests are skipped: " + config.python + " cannot import torch")

# The Hugging Face reference (transformers 4.46.3 over the system's torch), in the venv
# scripts/setup.sh --test makes: $LMC_HF_PYTHON, else $LMC_HF_VENV/bin/python, else (with
# neither set) ~/.cache/lmc/venv-hf/bin/python or /work/venv-hf/bin/python.
hf_candidates = [os.environ.get("LMC_HF_PYTHON", "")]
if os.environ.get("LMC_HF_VENV"):
    hf_candidates.append(os.path.join(os.environ["LMC_HF_VENV"], "bin", "python"))
elif not os.environ.get("LMC_HF_PYTHON"):
    hf_candidates += [os.path.expanduser("~/.cache/lmc/venv-hf/bin/python"), "/work/venv-hf/bin/python"]
hf_python = None
for candidate in hf_candidates:
    if candidate and os.path.exists(candidate) and os.system(
            candidate + " -c 'import transformers, sys; sys.exit(transformers.__version__ != \"4.46.3\")' 2>/dev/null") == 0:
        hf_python = candidate
        break
if hf_python:
    config.available_features.add("transformers")
    config.substitutions.append(("%hf_python", hf_python))
elif os.environ.get("LMC_REQUIRE_REFERENCE"):
    # scripts/setup.sh --test installs transformers: the HF parity tests must run, not be skipped.
    lit_config.fatal("no Python with transformers 4.46.3 (looked at " + ", ".join(c for c in hf_candidates if c) +
                     "), and LMC_REQUIRE_REFERENCE is set; run scripts/setup.sh --test")
else:
    lit_config.warning("Hugging Face parity tests are skipped: no Python with transformers 4.46.3 "
                       "(scripts/setup.sh --test makes one)")
# TensorBoard's own reader checks `lmrt run --tensorboard` files (test/E2E/tensorboard.test):
# the `tensorboard` package in the venv that scripts/setup.sh --test makes.
tb_venv = os.environ.get("LMC_TEST_VENV", os.path.expanduser("~/.cache/lmc/venv-test"))
tb_python = os.path.join(tb_venv, "bin", "python")


def venv_feature(feature, modules, substitution, what):
    """`feature` (and %substitution for the venv's python) when it imports `modules`;
    else fatal under LMC_REQUIRE_REFERENCE, a warning otherwise (the tests UNSUPPORTED)."""
    if os.path.exists(tb_python) and os.system(tb_python + " -c 'import " + modules + "' 2>/dev/null") == 0:
        config.available_features.add(feature)
        config.substitutions.append((substitution, tb_python))
    elif os.environ.get("LMC_REQUIRE_REFERENCE"):
        lit_config.fatal(tb_python + " cannot import " + modules +
                         ", and LMC_REQUIRE_REFERENCE is set (run scripts/setup.sh --test)")
    else:
        lit_config.warning(what + " are skipped: " + tb_python + " cannot import " + modules +
                           " (scripts/setup.sh --test installs it)")


venv_feature("tensorboard", "tensorboard", "%tbpython", "TensorBoard reader tests")
# scikit-learn and scipy score the same predictions as `lmrt metrics` (test/Runtime/metrics-sklearn.test),
# in the same venv: scikit-learn 1.3.2 and scipy 1.11.4 over Debian's numpy.
venv_feature("sklearn", "sklearn, scipy", "%sklearn_python", "scikit-learn metric references")
