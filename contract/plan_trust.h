/* Implements: what a site can know about a plan's native code before it runs it
   (docs/plan-format.md, "Trust"). A plan embeds compiled kernels (a shared object
   for the CPU, a fatbin for CUDA) that lmrt maps and runs with the user's rights,
   so a plan is a program: lmrt prints the SHA-256 of each kernel library when it
   loads a plan, and a site that runs only plans it built signs them with an Ed25519
   key (`lmc compile --sign KEY.pem`) and gives lmrt the public key
   (`lmrt --trust-key PUB.pem`, or $LMRT_TRUSTED_KEYS): then a plan without a valid
   signature of a trusted key is refused before any of its code is loaded.
   OpenSSL's libcrypto does the hashing and the signatures. */
#pragma once
#include <string>
#include <vector>

#include "contract/plan.pb.h"

namespace lmrt {

/* "sha256:<64 hex digits>" of the bytes. */
std::string sha256Hex(const std::string &bytes);

/* "cpu-x86-64 sha256:…, cuda sha256:…", or "no generated kernels". */
std::string kernelDigests(const plan::Plan &plan);

/* Signs `plan` in place with the Ed25519 private key in PEM file `keyPath`
   (openssl genpkey -algorithm ed25519). Throws Error naming the file. */
void signPlan(plan::Plan &plan, const std::string &keyPath);

/* The public keys (raw 32 bytes each) in PEM files (openssl pkey -pubout). */
std::vector<std::string> readTrustedKeys(const std::vector<std::string> &paths);

/* "" when `plan` is signed by one of `trusted` with a valid signature, else why
   not ("it is not signed", "it is signed by key … which is not trusted", "its
   signature does not verify: the plan was changed after signing"). */
std::string untrustedReason(const plan::Plan &plan, const std::vector<std::string> &trusted);

/* "ed25519 key 1a2b3c4d…" (the first 8 bytes of the key's SHA-256), or "unsigned". */
std::string signerOf(const plan::Plan &plan);

}  // namespace lmrt
