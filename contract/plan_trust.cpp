/* Implements: plan_trust.h with OpenSSL's libcrypto (EVP). */
#include "contract/plan_trust.h"

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <memory>

#include "base/file_io.h"
#include "base/tensor.h"
#include "contract/plan_file.h"

namespace lmrt {
namespace {

struct KeyFree {
  void operator()(EVP_PKEY *k) const { EVP_PKEY_free(k); }
};
struct CtxFree {
  void operator()(EVP_MD_CTX *c) const { EVP_MD_CTX_free(c); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Ctx = std::unique_ptr<EVP_MD_CTX, CtxFree>;

std::string hex(const unsigned char *p, size_t n) {
  static const char *digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s += digits[p[i] >> 4], s += digits[p[i] & 15];
  return s;
}

/* What a signature covers: the plan serialized without its signature. */
std::string signedBytes(const plan::Plan &plan) {
  plan::Plan copy = plan;
  copy.clear_signature();
  return serializePlan(copy);
}

Key readKey(const std::string &path, bool isPrivate) {
  // A key is a few hundred bytes: a FIFO, a device or a huge file is refused, not read.
  const std::string pem = readWholeFile(path, isPrivate ? "signing key" : "trusted key", 1 << 20);
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), (int)pem.size()), BIO_free);
  Key k(!bio ? nullptr
             : isPrivate ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr)
                         : PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
  if (!k)
    fail("'%s' is not a PEM %s key (make one with: openssl genpkey -algorithm ed25519 -out key.pem%s)", path.c_str(),
         isPrivate ? "private" : "public", isPrivate ? "" : "; openssl pkey -in key.pem -pubout -out pub.pem");
  if (EVP_PKEY_get_id(k.get()) != EVP_PKEY_ED25519)
    fail("'%s' is not an Ed25519 key (lmc and lmrt sign and verify plans with Ed25519)", path.c_str());
  return k;
}

std::string rawPublicKey(EVP_PKEY *k) {
  size_t n = 0;
  EVP_PKEY_get_raw_public_key(k, nullptr, &n);
  std::string raw(n, '\0');
  if (EVP_PKEY_get_raw_public_key(k, reinterpret_cast<unsigned char *>(raw.data()), &n) != 1)
    fail("cannot read an Ed25519 public key");
  return raw;
}

std::string keyName(const std::string &raw) {
  return "ed25519 key " + sha256Hex(raw).substr(7, 16);
}

}  // namespace

std::string sha256Hex(const std::string &bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), md, &n, EVP_sha256(), nullptr) != 1) fail("SHA-256 failed");
  return "sha256:" + hex(md, n);
}

std::string kernelDigests(const plan::Plan &plan) {
  std::string s;
  for (const plan::KernelLibrary &lib : plan.kernel_libraries())
    s += (s.empty() ? "" : ", ") + lib.target() + " " + sha256Hex(lib.image());
  return s.empty() ? "no generated kernels" : s;
}

void signPlan(plan::Plan &plan, const std::string &keyPath) {
  Key key = readKey(keyPath, /*isPrivate=*/true);
  const std::string bytes = signedBytes(plan);
  Ctx ctx(EVP_MD_CTX_new());
  size_t n = 0;
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) != 1 ||
      EVP_DigestSign(ctx.get(), nullptr, &n, reinterpret_cast<const unsigned char *>(bytes.data()), bytes.size()) != 1)
    fail("cannot sign with '%s'", keyPath.c_str());
  std::string sig(n, '\0');
  if (EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char *>(sig.data()), &n,
                     reinterpret_cast<const unsigned char *>(bytes.data()), bytes.size()) != 1)
    fail("cannot sign with '%s'", keyPath.c_str());
  sig.resize(n);
  plan::PlanSignature *s = plan.mutable_signature();
  s->set_algorithm("ed25519");
  s->set_public_key(rawPublicKey(key.get()));
  s->set_signature(sig);
}

std::vector<std::string> readTrustedKeys(const std::vector<std::string> &paths) {
  std::vector<std::string> keys;
  for (const std::string &p : paths) keys.push_back(rawPublicKey(readKey(p, /*isPrivate=*/false).get()));
  return keys;
}

std::string untrustedReason(const plan::Plan &plan, const std::vector<std::string> &trusted) {
  if (!plan.has_signature()) return "it is not signed (lmc compile --sign KEY.pem signs a plan)";
  const plan::PlanSignature &s = plan.signature();
  if (s.algorithm() != "ed25519") return "it is signed with '" + s.algorithm() + "', not ed25519";
  bool known = false;
  for (const std::string &k : trusted) known = known || k == s.public_key();
  if (!known) return "it is signed by " + keyName(s.public_key()) + ", which is not a trusted key";
  Key key(EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr,
                                      reinterpret_cast<const unsigned char *>(s.public_key().data()),
                                      s.public_key().size()));
  const std::string bytes = signedBytes(plan);
  Ctx ctx(EVP_MD_CTX_new());
  if (!key || !ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key.get()) != 1 ||
      EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char *>(s.signature().data()), s.signature().size(),
                       reinterpret_cast<const unsigned char *>(bytes.data()), bytes.size()) != 1)
    return "its signature does not verify: the plan was changed after it was signed";
  return "";
}

std::string signerOf(const plan::Plan &plan) {
  return plan.has_signature() ? keyName(plan.signature().public_key()) : "unsigned";
}

}  // namespace lmrt
