// dedup/fingerprint.hpp: chunk fingerprints (SHA-256) and the streaming
// SHA-256 of the archive's trailing checksum.
//
// Provides: sha256() over a buffer, Sha256Stream (incremental), to_hex(),
// and Sha1Fingerprinter: the cheaper chunk fingerprint of `coact-dedup
// archive --fingerprint sha1` (PARSEC's dedup uses SHA-1), a really-faster
// Fingerprinter that `coact-profile validate` measures the profiler against.
// Library: OpenSSL's libcrypto (Debian libssl-dev, EVP interface), chosen
// because libxxhash-dev is not installed on the build machines and a
// dedup index needs a collision-resistant fingerprint: with SHA-256 two
// distinct chunks sharing a fingerprint is a ~2^-128 event for 2^64 chunks
// (birthday bound), so the index trusts equal fingerprints without
// comparing bytes, as PARSEC's dedup (SHA-1) and most dedup stores do.
// Threads: sha256() and to_hex() any thread; a Sha256Stream belongs to one
// thread at a time (movable, not copyable).
// Errors: an OpenSSL failure (allocation) throws dedup_error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "dedup/archive_format.hpp"

struct evp_md_ctx_st;
struct evp_md_st;

namespace coact::dedup {

/// SHA-256 (FIPS 180-4) of `data`.
Fingerprint sha256(std::span<const uint8_t> data);

/// Incremental SHA-256.
class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(Sha256Stream&& o) noexcept;
  Sha256Stream& operator=(Sha256Stream&& o) noexcept;
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;

  void update(const void* data, size_t n);
  /// The digest of everything updated so far; the stream then restarts empty.
  Fingerprint finish();

 private:
  evp_md_ctx_st* ctx_ = nullptr;
};

/// SHA-1 of chunks through one reused OpenSSL context with the digest
/// fetched once (no per-call lookup), the 20-byte digest zero-padded to a
/// Fingerprint. Cheaper than sha256() per chunk; SHA-1 is not collision
/// resistant against an adversary (chosen-prefix collisions are practical),
/// so an archive of untrusted input should keep SHA-256. One owner thread at
/// a time (an actor's member).
class Sha1Fingerprinter {
 public:
  Sha1Fingerprinter();
  ~Sha1Fingerprinter();
  Sha1Fingerprinter(const Sha1Fingerprinter&) = delete;
  Sha1Fingerprinter& operator=(const Sha1Fingerprinter&) = delete;
  Fingerprint operator()(std::span<const uint8_t> data);

 private:
  evp_md_st* md_ = nullptr;
  evp_md_ctx_st* ctx_ = nullptr;
};

/// SHA-1 of `data` zero-padded to a Fingerprint, one call (verify uses it;
/// Sha1Fingerprinter is the fast path of the pipeline).
Fingerprint sha1_fingerprint(std::span<const uint8_t> data);

/// Lower-case hex of a digest.
std::string to_hex(const Fingerprint& fp);

}  // namespace coact::dedup
