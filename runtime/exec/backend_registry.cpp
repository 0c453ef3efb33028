/* Implements: the backend registry and the plugin loader (backend_registry.h). */
#include "runtime/exec/backend_registry.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <map>
#include <mutex>

namespace lmrt {
namespace {

std::map<std::string, BackendProvider> &providers() {
  static std::map<std::string, BackendProvider> registry;
  return registry;
}

std::mutex &registryMutex() {
  static std::mutex m;
  return m;
}

/* lib/ beside the folder of the running executable (build/bin -> build/lib; an
   installed bin/ -> lib/), where the build and the install put the plugins. */
std::string pluginDirectory() {
  char exe[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "lib";
  exe[n] = '\0';
  std::string dir(exe);
  dir = dir.substr(0, dir.rfind('/'));  // bin
  dir = dir.substr(0, dir.rfind('/'));  // its parent
  return dir + "/lib";
}

}  // namespace

void registerBackend(const BackendProvider &provider) {
  std::lock_guard<std::mutex> lock(registryMutex());
  providers()[provider.device] = provider;
}

const BackendProvider &backendProvider(const std::string &device) {
  {
    std::lock_guard<std::mutex> lock(registryMutex());
    auto it = providers().find(device);
    if (it != providers().end()) return it->second;
  }
  // LMRT_PLUGIN_DIR: where a relocated lmrt (the GPU bundle, tests) keeps its plugins.
  const char *env = std::getenv("LMRT_PLUGIN_DIR");
  const std::string path = (env && *env ? std::string(env) : pluginDirectory()) + "/liblmrt_" + device + ".so";
  if (::access(path.c_str(), F_OK) != 0)
    fail("this lmrt was built without the %s backend (%s does not exist; lmrt builds it when CMake finds the CUDA "
         "toolkit with nvcc and cuBLASLt); rebuild it on a machine with the CUDA toolkit, or use --device cpu",
         device.c_str(), path.c_str());
  // RTLD_LOCAL: the plugin's own libraries (cuBLASLt, cudart) stay out of the
  // global namespace; it still resolves lmrt's symbols, which the executable exports.
  void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    fail("no usable %s installation: cannot load lmrt's %s backend %s: %s", device.c_str(), device.c_str(),
         path.c_str(), ::dlerror());
  using Entry = const BackendProvider *(*)();
  auto entry = reinterpret_cast<Entry>(::dlsym(handle, "lmrtBackendProvider"));
  if (!entry) fail("%s is not an lmrt backend plugin (it has no lmrtBackendProvider)", path.c_str());
  const BackendProvider *provider = entry();
  if (!provider || device != provider->device)
    fail("%s provides the '%s' backend, not '%s'", path.c_str(), provider ? provider->device : "(none)",
         device.c_str());
  registerBackend(*provider);  // the handle stays open for the life of the process
  std::lock_guard<std::mutex> lock(registryMutex());
  return providers().at(device);
}

namespace {
contract::StepCheck &stepCheckSlot() {
  static contract::StepCheck check;
  return check;
}
}  // namespace

void registerStepCheck(contract::StepCheck check) { stepCheckSlot() = std::move(check); }

const contract::StepCheck &registeredStepCheck() { return stepCheckSlot(); }

}  // namespace lmrt
