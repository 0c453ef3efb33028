/* Implements: where backends come from. Each backend registers a provider under
   its device name: the CPU backend is linked into lmrt and registers itself when
   the program starts (runtime/cpu/cpu_backend.cpp); any other device is a plugin,
   lib/liblmrt_<device>.so beside lmrt's bin/ folder, opened the first time the
   device is asked for, so that a CPU run never maps the CUDA libraries. A plugin
   exports `extern "C" const lmrt::BackendProvider *lmrtBackendProvider()` and
   resolves everything else it needs (the contract, lmrt::Error, the Backend
   interface) from the lmrt executable that loads it (docs/architecture.md). */
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "contract/contract.h"
#include "runtime/exec/backend.h"

namespace lmrt {

class Session;

struct BackendProvider {
  const char *device;  // "cpu", "cuda": what --device names
  /* Throws lmrt::Error saying why this machine cannot run on the device (no NVIDIA
     driver, no GPU, no such device index); called before any plan is read. */
  void (*probe)(const DeviceOptions &options);
  /* The backend for a session whose plan is bound and host parameters allocated. */
  std::unique_ptr<Backend> (*create)(Session &session, const DeviceOptions &options);
  /* One line per device of this kind (`lmrt devices`); throws saying why there is none. */
  std::vector<std::string> (*listDevices)();
};

/* Adds a provider (a later one of the same device replaces it). */
void registerBackend(const BackendProvider &provider);
/* The provider of `device`: a registered one, else the plugin's, loaded now.
   Throws naming what is missing (no plugin file: this lmrt was built without that
   backend; a library the plugin needs cannot be found). */
const BackendProvider &backendProvider(const std::string &device);

/* The kernel-level check of a plan step's types and attributes that plan validation
   applies (validate.h): the CPU kernel table's check() functions, registered with the
   CPU backend, which has a kernel for every op. */
void registerStepCheck(contract::StepCheck check);
const contract::StepCheck &registeredStepCheck();

}  // namespace lmrt
