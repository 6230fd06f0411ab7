// dedup/chunker.cpp: FastCDC (Xia et al., USENIX ATC 2016), see chunker.hpp.
#include "dedup/chunker.hpp"

#include <array>
#include <bit>
#include <cstring>
#include <string>

#include "dedup/archive_format.hpp"

namespace coact::dedup {
namespace {

constexpr uint64_t kGearSeed = 0x0636f6163746464ULL;

/// splitmix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014): any fixed table of random 64-bit values serves
/// as FastCDC's Gear table; a generator keeps it reproducible and short.
constexpr std::array<uint64_t, 256> make_gear() {
  std::array<uint64_t, 256> t{};
  uint64_t x = kGearSeed;
  for (auto& v : t) {
    x += 0x9e3779b97f4a7c15ULL;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    v = z ^ (z >> 31);
  }
  return t;
}
constexpr std::array<uint64_t, 256> kGear = make_gear();

// FastCDC's masks for an 8 KiB average (paper, section 3.3 / Algorithm 1).
constexpr uint64_t kPaperMaskS = 0x0003590703530000ULL;  // 15 bits: harder, before avg
constexpr uint64_t kPaperMaskL = 0x0000d90003530000ULL;  // 11 bits: easier, after avg
static_assert(std::popcount(kPaperMaskS) == 15 && std::popcount(kPaperMaskL) == 11);

/// A mask of `bits` one-bits spread evenly over bits 16..49 (where the
/// paper's masks lie: each bit there depends on the last 17..50 bytes, so
/// the effective window is ~48 bytes).
constexpr uint64_t spread_mask(int bits) {
  if (bits <= 0) return 0;
  if (bits == 1) return 1ULL << 32;
  uint64_t m = 0;
  for (int j = 0; j < bits; ++j) m |= 1ULL << (16 + (j * 33 + (bits - 1) / 2) / (bits - 1));
  return m;
}

struct Masks {
  uint64_t small;  // used before avg
  uint64_t large;  // used from avg on
};

Masks masks_for(uint32_t avg) {
  if (avg == 8192) return {kPaperMaskS, kPaperMaskL};
  const int b = std::countr_zero(avg);
  return {spread_mask(b + 2), spread_mask(b - 2)};
}

}  // namespace

void ChunkParams::validate() const {
  if (min_bytes < 64) throw dedup_error("chunking: min size " + std::to_string(min_bytes) + " < 64");
  if (!(min_bytes < avg_bytes && avg_bytes < max_bytes))
    throw dedup_error("chunking: need min < avg < max, got " + std::to_string(min_bytes) + "/" +
                      std::to_string(avg_bytes) + "/" + std::to_string(max_bytes));
  if (!std::has_single_bit(avg_bytes) || avg_bytes < 256)
    throw dedup_error("chunking: avg size " + std::to_string(avg_bytes) + " is not a power of two >= 256");
  if (max_bytes > 16u * 1024 * 1024) throw dedup_error("chunking: max size " + std::to_string(max_bytes) + " > 16 MiB");
}

const uint64_t* gear_table() noexcept { return kGear.data(); }

CutResult fastcdc_cut(std::span<const uint8_t> data, const ChunkParams& params) noexcept {
  const size_t n = data.size();
  if (n <= params.min_bytes) return {n, false};
  const size_t limit = n < params.max_bytes ? n : params.max_bytes;
  const size_t normal = params.avg_bytes < limit ? params.avg_bytes : limit;
  const Masks m = masks_for(params.avg_bytes);
  const uint8_t* p = data.data();
  uint64_t fp = 0;
  size_t i = params.min_bytes;  // cut-point skipping: bytes before min are not hashed
  for (; i < normal; ++i) {
    fp = (fp << 1) + kGear[p[i]];
    if ((fp & m.small) == 0) return {i + 1, true};
  }
  for (; i < limit; ++i) {
    fp = (fp << 1) + kGear[p[i]];
    if ((fp & m.large) == 0) return {i + 1, true};
  }
  if (limit == params.max_bytes) return {limit, true};  // forced cut at max
  return {n, false};
}

namespace {

// Gear-hashes p[i..end) from `fp`, stopping after the first position whose
// hash has no bit of `mask` set: returns that position + 1, or 0 if none (fp
// is then the hash after end - 1). Eight positions per iteration: the
// masks lie below bit 50, so (h & mask) - 1 has bit 63 set exactly when
// h & mask == 0, and one OR over the eight tells whether any cut is there.
inline size_t scan_unrolled(const uint8_t* p, size_t i, size_t end, uint64_t& fp, uint64_t mask) noexcept {
  const uint64_t* g = kGear.data();
  for (; i + 8 <= end; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    const uint64_t f0 = (fp << 1) + g[w & 255];
    const uint64_t f1 = (f0 << 1) + g[(w >> 8) & 255];
    const uint64_t f2 = (f1 << 1) + g[(w >> 16) & 255];
    const uint64_t f3 = (f2 << 1) + g[(w >> 24) & 255];
    const uint64_t f4 = (f3 << 1) + g[(w >> 32) & 255];
    const uint64_t f5 = (f4 << 1) + g[(w >> 40) & 255];
    const uint64_t f6 = (f5 << 1) + g[(w >> 48) & 255];
    const uint64_t f7 = (f6 << 1) + g[w >> 56];
    const uint64_t any = ((f0 & mask) - 1) | ((f1 & mask) - 1) | ((f2 & mask) - 1) | ((f3 & mask) - 1) |
                         ((f4 & mask) - 1) | ((f5 & mask) - 1) | ((f6 & mask) - 1) | ((f7 & mask) - 1);
    if ((any >> 63) != 0) [[unlikely]] {
      const uint64_t f[8] = {f0, f1, f2, f3, f4, f5, f6, f7};
      for (size_t k = 0; k < 8; ++k) {
        if ((f[k] & mask) == 0) return i + k + 1;
      }
    }
    fp = f7;
  }
  for (; i < end; ++i) {
    fp = (fp << 1) + g[p[i]];
    if ((fp & mask) == 0) return i + 1;
  }
  return 0;
}

}  // namespace

CutResult fastcdc_cut_unrolled(std::span<const uint8_t> data, const ChunkParams& params) noexcept {
  const size_t n = data.size();
  if (n <= params.min_bytes) return {n, false};
  const size_t limit = n < params.max_bytes ? n : params.max_bytes;
  const size_t normal = params.avg_bytes < limit ? params.avg_bytes : limit;
  const Masks m = masks_for(params.avg_bytes);
  static_assert(kPaperMaskS < (1ULL << 63) && kPaperMaskL < (1ULL << 63));  // the bit-63 test in scan_unrolled
  uint64_t fp = 0;
  if (const size_t cut = scan_unrolled(data.data(), params.min_bytes, normal, fp, m.small); cut != 0) return {cut, true};
  if (const size_t cut = scan_unrolled(data.data(), normal, limit, fp, m.large); cut != 0) return {cut, true};
  if (limit == params.max_bytes) return {limit, true};  // forced cut at max
  return {n, false};
}

std::vector<size_t> chunk_lengths(std::span<const uint8_t> data, const ChunkParams& params) {
  std::vector<size_t> out;
  size_t pos = 0;
  while (pos < data.size()) {
    const CutResult r = fastcdc_cut(data.subspan(pos), params);
    out.push_back(r.length);
    pos += r.length;
  }
  return out;
}

}  // namespace coact::dedup
