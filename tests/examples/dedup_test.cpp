// coact-dedup (examples/dedup): FastCDC boundaries, round trips across
// worker counts, deterministic output, real deduplication, and rejection of
// corrupt archives and escaping paths.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "support/temp_dir.hpp"
#include <coact/runtime/runtime.hpp>

#include "dedup/archive_format.hpp"
#include "dedup/chunker.hpp"
#include "dedup/extract.hpp"
#include "dedup/fingerprint.hpp"
#include "dedup/pipeline.hpp"
#include "support/runtime_fixture.hpp"
#include "support/watchdog.hpp"

namespace fs = std::filesystem;
namespace dd = coact::dedup;
using coact::test::tuning_for;
using coact::test::Watchdog;

using coact::test::TempDir;

namespace {

std::vector<uint8_t> random_bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t x = rng();
    for (size_t j = 0; j < 8 && i + j < n; ++j) v[i + j] = static_cast<uint8_t>(x >> (8 * j));
  }
  return v;
}

// Compressible, repetitive-but-not-periodic text.
std::vector<uint8_t> text_bytes(size_t n, uint64_t seed) {
  static const char* words[] = {"actor ", "mailbox ", "causal ", "profile ", "chunk ", "dedup ", "the ", "of ",
                                "worker ", "\n", "speedup ", "virtual ", "delay "};
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v;
  v.reserve(n);
  while (v.size() < n) {
    const char* w = words[rng() % (sizeof words / sizeof *words)];
    for (const char* p = w; *p && v.size() < n; ++p) v.push_back(static_cast<uint8_t>(*p));
  }
  return v;
}

void write_file(const fs::path& p, const std::vector<uint8_t>& data, fs::perms mode = fs::perms(0644)) {
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  f.close();
  fs::permissions(p, mode);
}

std::vector<uint8_t> read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

/// A fresh directory under the temp dir, removed (with its contents) at scope exit.
/// Every entry of a tree: type, permission bits, contents or link target.
std::map<std::string, std::string> snapshot(const fs::path& root) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const fs::path& p = it->path();
    const std::string rel = fs::relative(p, root).generic_string();
    struct stat st {};
    REQUIRE(::lstat(p.c_str(), &st) == 0);
    std::string desc = std::to_string(st.st_mode & 07777) + ":";
    if (S_ISLNK(st.st_mode)) {
      desc += "link:" + fs::read_symlink(p).string();
    } else if (S_ISDIR(st.st_mode)) {
      desc += "dir";
    } else {
      const auto data = read_file(p);
      desc += "file:" + std::string(data.begin(), data.end());
    }
    out[rel] = std::move(desc);
  }
  return out;
}

/// The tree of the round-trip test: random and text files, duplicates, an
/// empty file, nested and empty directories, a 5 MB file, modes, a symlink.
void make_tree(const fs::path& root) {
  write_file(root / "a.txt", text_bytes(10'000, 1));
  write_file(root / "empty", {});
  write_file(root / "tiny", {'x'});
  write_file(root / "exec.sh", text_bytes(3'000, 2), fs::perms(0755));
  write_file(root / "private", random_bytes(20'000, 3), fs::perms(0600));
  write_file(root / "big.bin", random_bytes(5 * 1000 * 1000, 4));
  for (int i = 0; i < 12; ++i)
    write_file(root / "rand" / ("r" + std::to_string(i)), random_bytes(1000 + 7919 * static_cast<size_t>(i), 100 + i));
  const auto dup = text_bytes(150'000, 5);
  write_file(root / "dup1", dup);
  write_file(root / "deep" / "er" / "still" / "dup2", dup);
  write_file(root / "deep" / "er" / "note", text_bytes(777, 6));
  fs::create_directories(root / "emptydir");
  fs::create_directories(root / "ro");
  write_file(root / "ro" / "inside", text_bytes(100, 7));
  fs::permissions(root / "ro", fs::perms(0555));
  fs::create_symlink("a.txt", root / "link-to-a");
  fs::create_symlink("../a.txt", root / "deep" / "uplink");
}

dd::ArchiveStats run_archive(const fs::path& in, const fs::path& out, uint32_t workers, uint32_t compressors = 4,
                             std::vector<std::string>* warnings = nullptr) {
  coact::Runtime rt(tuning_for(workers));
  dd::ArchiveOptions opt;
  opt.input = in;
  opt.output = out;
  opt.compressors = compressors;
  opt.fingerprinters = workers;
  opt.inflight_bytes = 2 << 20;  // small budget: exercises backpressure on the 5 MB file
  opt.warn = [warnings](const std::string& w) {
    if (warnings) warnings->push_back(w);
  };
  return dd::archive(rt, opt);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const dd::dedup_error& e) {
    return e.what();
  }
  return "(no error)";
}

/// Writes a well-formed archive (valid checksum) whose metadata is `m`, with
/// `data` as its chunk data section.
void write_raw_archive(const fs::path& p, dd::Metadata m, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> bytes = dd::encode_header();
  bytes.insert(bytes.end(), data.begin(), data.end());
  const uint64_t meta_offset = bytes.size();
  const auto meta = dd::encode_metadata(m);
  bytes.insert(bytes.end(), meta.begin(), meta.end());
  const auto foot = dd::encode_footer({meta_offset, meta.size()});
  bytes.insert(bytes.end(), foot.begin(), foot.end());
  const auto sum = dd::sha256(bytes);
  bytes.insert(bytes.end(), sum.begin(), sum.end());
  write_file(p, bytes);
}

/// One regular file `path` holding `content` (stored raw as chunk 0).
dd::Metadata one_file_metadata(const std::string& path, const std::vector<uint8_t>& content) {
  dd::Metadata m;
  m.chunk_min = 2048;
  m.chunk_avg = 8192;
  m.chunk_max = 65536;
  dd::FileRecord f;
  f.type = dd::EntryType::regular;
  f.mode = 0644;
  f.size = content.size();
  f.chunk_count = 1;
  f.path = path;
  m.files.push_back(f);
  m.chunks.push_back(dd::ChunkRecord{dd::kHeaderBytes, static_cast<uint32_t>(content.size()),
                                     static_cast<uint32_t>(content.size()), dd::ChunkMethod::raw, dd::sha256(content)});
  m.chunk_lists.push_back({0});
  return m;
}

}  // namespace

// ---- chunker ----------------------------------------------------------------

TEST_CASE("SHA-256 fingerprints match the FIPS 180-4 known answer", "[dedup]") {
  const std::string abc = "abc";
  CHECK(dd::to_hex(dd::sha256({reinterpret_cast<const uint8_t*>(abc.data()), abc.size()})) ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  dd::Sha256Stream s;
  s.update("a", 1);
  s.update("bc", 2);
  CHECK(dd::to_hex(s.finish()) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("FastCDC chunk sizes stay within min/max and average near the target", "[dedup][chunker]") {
  const dd::ChunkParams params;
  const auto data = random_bytes(8 << 20, 42);
  const auto lens = dd::chunk_lengths(data, params);
  REQUIRE(lens.size() > 100);
  size_t total = 0;
  for (size_t i = 0; i < lens.size(); ++i) {
    total += lens[i];
    CHECK(lens[i] <= params.max_bytes);
    if (i + 1 < lens.size()) CHECK(lens[i] > params.min_bytes);
  }
  CHECK(total == data.size());
  // Normalized chunking (level 2) with 2 KiB cut-point skipping lands the mean
  // a little above avg on random data; assert a generous band around it.
  const double mean = double(total) / double(lens.size());
  CHECK(mean > 6 * 1024);
  CHECK(mean < 14 * 1024);
  // All-zero data never satisfies the mask: every cut is forced at max.
  const std::vector<uint8_t> zeros(300'000, 0);
  for (size_t l : dd::chunk_lengths(zeros, params)) CHECK(l <= params.max_bytes);
}

TEST_CASE("FastCDC boundaries are content-defined: a byte inserted at the front leaves most chunks unchanged",
          "[dedup][chunker]") {
  const dd::ChunkParams params;
  const auto data = random_bytes(4 << 20, 7);
  auto shifted = data;
  shifted.insert(shifted.begin(), 0x5a);

  auto chunk_set = [&](const std::vector<uint8_t>& d) {
    std::set<std::string> s;
    size_t pos = 0;
    for (size_t l : dd::chunk_lengths(d, params)) {
      s.insert(dd::to_hex(dd::sha256(std::span<const uint8_t>(d).subspan(pos, l))));
      pos += l;
    }
    return s;
  };
  const auto a = chunk_set(data);
  const auto b = chunk_set(shifted);
  size_t common = 0;
  for (const auto& h : b) common += a.count(h);
  // Only the first chunk or two can differ (the cut resynchronises within a chunk).
  CHECK(common + 3 >= b.size());
  CHECK(double(common) / double(b.size()) > 0.95);

  // Streaming equivalence: cutting with the data split at arbitrary points
  // (what the Chunker actor sees block by block) gives the same boundaries.
  std::vector<size_t> streamed;
  std::vector<uint8_t> pending;
  const size_t block = 100'003;
  for (size_t off = 0; off < data.size(); off += block) {
    const size_t n = std::min(block, data.size() - off);
    pending.insert(pending.end(), data.begin() + static_cast<ptrdiff_t>(off), data.begin() + static_cast<ptrdiff_t>(off + n));
    const bool last = off + n == data.size();
    size_t pos = 0;
    while (pos < pending.size()) {
      const auto r = dd::fastcdc_cut(std::span<const uint8_t>(pending).subspan(pos), params);
      if (!r.hash_cut && !last) break;
      streamed.push_back(r.length);
      pos += r.length;
    }
    pending.erase(pending.begin(), pending.begin() + static_cast<ptrdiff_t>(pos));
  }
  CHECK(streamed == dd::chunk_lengths(data, params));
}

// ---- round trip ---------------------------------------------------------------

TEST_CASE("archive -> extract restores a tree byte for byte across worker counts, deterministically", "[dedup]") {
  Watchdog wd(120, "dedup round trip");
  TempDir tmp("roundtrip");
  const fs::path src = tmp.path / "src";
  make_tree(src);
  const auto want = snapshot(src);

  std::vector<uint8_t> first_archive;
  for (uint32_t workers : {1u, 2u, 4u}) {
    const fs::path out = tmp.path / ("w" + std::to_string(workers) + ".cdar");
    std::vector<std::string> warnings;
    const auto st = run_archive(src, out, workers, workers, &warnings);
    INFO("workers " << workers);
    CHECK(warnings.empty());
    CHECK(st.passes == 1);
    CHECK(st.last.files == 22);
    CHECK(st.last.symlinks == 2);
    CHECK(st.last.skipped == 0);
    CHECK_FALSE(fs::exists(out.string() + ".tmp"));
    CHECK(st.last.unique_chunks < st.last.chunks);  // dup1/dup2 share chunks

    const auto v = dd::verify(out);
    CHECK(v.raw_bytes == st.last.bytes_in);

    const fs::path dest = tmp.path / ("x" + std::to_string(workers));
    const auto ex = dd::extract(out, dest);
    CHECK(ex.files == 22);
    CHECK(ex.bytes == st.last.bytes_in);
    CHECK(snapshot(dest) == want);

    // The output does not depend on the worker count or the interleaving.
    const auto bytes = read_file(out);
    if (first_archive.empty())
      first_archive = bytes;
    else
      CHECK(bytes == first_archive);
  }
}

TEST_CASE("repeated passes rewrite the same archive; --seconds keeps passing until the time is up", "[dedup]") {
  Watchdog wd(60, "dedup passes");
  TempDir tmp("passes");
  write_file(tmp.path / "src" / "f", text_bytes(300'000, 9));
  coact::Runtime rt(tuning_for(2));
  dd::ArchiveOptions opt;
  opt.input = tmp.path / "src";
  opt.output = tmp.path / "out.cdar";
  opt.passes = 3;
  auto st = dd::archive(rt, opt);
  CHECK(st.passes == 3);
  CHECK(st.total_bytes_in == 3 * 300'000);
  const auto once = read_file(opt.output);

  opt.passes = 0;
  opt.min_duration = std::chrono::milliseconds(200);
  st = dd::archive(rt, opt);
  CHECK(st.passes >= 1);
  CHECK(st.total_seconds > 0);
  CHECK(read_file(opt.output) == once);

  opt.min_duration = std::chrono::duration<double>(0);
  int polls = 0;
  opt.keep_going = [&] { return ++polls < 4; };  // "until asked to stop"
  st = dd::archive(rt, opt);
  CHECK(st.passes == 4);
}

TEST_CASE("dedup stores a file duplicated 10 times about once", "[dedup]") {
  Watchdog wd(60, "dedup ratio");
  TempDir tmp("ratio");
  const auto content = random_bytes(1 << 20, 11);  // incompressible: only dedup can shrink it
  for (int i = 0; i < 10; ++i) write_file(tmp.path / "src" / ("d" + std::to_string(i)) / "copy.bin", content);
  const fs::path out = tmp.path / "out.cdar";
  const auto st = run_archive(tmp.path / "src", out, 2);
  CHECK(st.last.bytes_in == 10u << 20);
  CHECK(st.last.unique_bytes == 1u << 20);
  CHECK(st.last.dedup_ratio() == Approx(10.0));
  CHECK(st.last.unique_chunks * 10 == st.last.chunks);
  const auto size = fs::file_size(out);
  CHECK(size < (1u << 20) * 11 / 10);  // one copy plus < 10% of metadata
  CHECK(size >= 1u << 20);
}

// ---- errors -----------------------------------------------------------------

TEST_CASE("bad input gives clear errors naming the input", "[dedup]") {
  TempDir tmp("badinput");
  coact::Runtime rt(tuning_for(1));
  dd::ArchiveOptions opt;
  opt.input = tmp.path / "does-not-exist";
  opt.output = tmp.path / "out.cdar";
  auto msg = error_of([&] { dd::archive(rt, opt); });
  CHECK_THAT(msg, Catch::Contains("does-not-exist") && Catch::Contains("No such file"));

  write_file(tmp.path / "plain", {'x'});
  opt.input = tmp.path / "plain";
  CHECK_THAT(error_of([&] { dd::archive(rt, opt); }), Catch::Contains("is not a directory"));

  msg = error_of([&] { dd::extract(tmp.path / "missing.cdar", tmp.path / "d"); });
  CHECK_THAT(msg, Catch::Contains("cannot open archive") && Catch::Contains("missing.cdar"));
}

TEST_CASE("corrupt, truncated and foreign archives are rejected with clear errors", "[dedup]") {
  Watchdog wd(60, "dedup corrupt");
  TempDir tmp("corrupt");
  write_file(tmp.path / "src" / "f1", text_bytes(100'000, 12));
  write_file(tmp.path / "src" / "f2", random_bytes(50'000, 13));
  const fs::path good = tmp.path / "good.cdar";
  run_archive(tmp.path / "src", good, 2);
  const auto bytes = read_file(good);
  REQUIRE(bytes.size() > 1000);

  SECTION("a flipped byte in the chunk data fails the checksum") {
    auto bad = bytes;
    bad[bytes.size() / 3] ^= 0x40;
    write_file(tmp.path / "bad.cdar", bad);
    const auto msg = error_of([&] { dd::extract(tmp.path / "bad.cdar", tmp.path / "out"); });
    CHECK_THAT(msg, Catch::Contains("bad.cdar") && Catch::Contains("checksum mismatch"));
    CHECK_FALSE(fs::exists(tmp.path / "out"));
    CHECK_THAT(error_of([&] { dd::verify(tmp.path / "bad.cdar"); }), Catch::Contains("checksum mismatch"));
  }
  SECTION("a truncated archive") {
    write_file(tmp.path / "cut.cdar", std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(bytes.size() / 2)));
    CHECK_THAT(error_of([&] { dd::extract(tmp.path / "cut.cdar", tmp.path / "out"); }),
               Catch::Contains("cut.cdar") && Catch::Contains("truncated"));
  }
  SECTION("bad magic: not an archive at all") {
    write_file(tmp.path / "notes.txt", text_bytes(5000, 14));
    CHECK_THAT(error_of([&] { dd::extract(tmp.path / "notes.txt", tmp.path / "out"); }),
               Catch::Contains("notes.txt") && Catch::Contains("not a coact-dedup archive (bad magic)"));
    write_file(tmp.path / "empty.cdar", {});
    CHECK_THAT(error_of([&] { dd::verify(tmp.path / "empty.cdar"); }), Catch::Contains("bad magic"));
  }
  SECTION("a consistent checksum over inconsistent metadata") {
    const std::vector<uint8_t> content = {'h', 'i'};
    auto m = one_file_metadata("f", content);
    m.chunk_lists[0] = {7};  // no chunk 7
    write_raw_archive(tmp.path / "meta.cdar", m, content);
    CHECK_THAT(error_of([&] { dd::extract(tmp.path / "meta.cdar", tmp.path / "out"); }),
               Catch::Contains("meta.cdar") && Catch::Contains("corrupt") && Catch::Contains("chunk 7"));
  }
}

TEST_CASE("extract refuses entries that would escape the destination directory", "[dedup]") {
  TempDir tmp("escape");
  const std::vector<uint8_t> content = {'p', 'w', 'n'};
  const fs::path dest = tmp.path / "dest";

  for (const std::string path : {"../evil", "a/../../evil", "/tmp/coact-dedup-evil-abs", "a/./b", "a//b"}) {
    INFO("path " << path);
    const fs::path arc = tmp.path / "evil.cdar";
    write_raw_archive(arc, one_file_metadata(path, content), content);
    const auto msg = error_of([&] { dd::extract(arc, dest); });
    CHECK_THAT(msg, Catch::Contains("evil.cdar") && Catch::Contains(path) && Catch::Contains("nothing was extracted"));
    if (path.find("..") != std::string::npos || path.front() == '/')
      CHECK_THAT(msg, Catch::Contains("escape the destination"));
  }
  CHECK_FALSE(fs::exists(tmp.path / "evil"));
  CHECK_FALSE(fs::exists("/tmp/coact-dedup-evil-abs"));
  CHECK_FALSE(fs::exists(dest));

  // A file placed under an archived symlink could be written through it.
  dd::Metadata m = one_file_metadata("link/escaped", content);
  dd::FileRecord link;
  link.type = dd::EntryType::symlink;
  link.path = "link";
  link.link_target = tmp.path.string();
  link.size = link.link_target.size();
  m.files.insert(m.files.begin(), link);
  m.chunk_lists.insert(m.chunk_lists.begin(), std::vector<uint32_t>{});
  write_raw_archive(tmp.path / "via-link.cdar", m, content);
  CHECK_THAT(error_of([&] { dd::extract(tmp.path / "via-link.cdar", dest); }),
             Catch::Contains("lies under the archived symlink 'link'"));
  CHECK_FALSE(fs::exists(tmp.path / "escaped"));
}

TEST_CASE("special and unreadable files are skipped with a warning; the archive never contains itself", "[dedup]") {
  Watchdog wd(60, "dedup skip");
  TempDir tmp("skip");
  const fs::path src = tmp.path / "src";
  write_file(src / "ok", text_bytes(5000, 20));
  write_file(src / "secret", text_bytes(100, 21), fs::perms(0));
  REQUIRE(::mkfifo((src / "fifo").c_str(), 0644) == 0);
  fs::create_symlink("/nonexistent/target", src / "dangling");  // stored as a link, never followed
  const bool root = ::geteuid() == 0;                           // root reads mode-000 files anyway

  // The output lives inside the input: later passes must not archive it (or its .tmp).
  const fs::path out = src / "self.cdar";
  coact::Runtime rt(tuning_for(2));
  dd::ArchiveOptions opt;
  opt.input = src;
  opt.output = out;
  opt.passes = 2;
  std::vector<std::string> warnings;
  opt.warn = [&](const std::string& w) { warnings.push_back(w); };
  const auto st = dd::archive(rt, opt);

  CHECK(st.last.symlinks == 1);
  CHECK(st.last.files == (root ? 2u : 1u));
  CHECK(st.last.skipped == (root ? 1u : 2u));
  auto warned = [&](const std::string& needle) {
    return std::any_of(warnings.begin(), warnings.end(), [&](const std::string& w) { return w.find(needle) != std::string::npos; });
  };
  CHECK(warned("skipping special file '" + (src / "fifo").string() + "'"));
  if (!root) CHECK(warned("skipping unreadable file '" + (src / "secret").string() + "': Permission denied"));
  CHECK_FALSE(warned("self.cdar"));

  const fs::path dest = tmp.path / "dest";
  dd::extract(out, dest);
  CHECK(fs::is_symlink(dest / "dangling"));
  CHECK(fs::read_symlink(dest / "dangling") == "/nonexistent/target");
  CHECK(read_file(dest / "ok") == text_bytes(5000, 20));
  CHECK_FALSE(fs::exists(dest / "self.cdar"));
  CHECK_FALSE(fs::exists(dest / "self.cdar.tmp"));
  CHECK_FALSE(fs::exists(dest / "fifo"));
}

// Stress: many small files through a tight credit budget and wide fan-out, so
// reorder buffers at the Index and Writer are exercised under every
// interleaving the pool produces; the archive must come out identical each time.
TEST_CASE("a wide pipeline under a tight budget always produces the same archive", "[dedup][stress]") {
  const uint32_t workers = GENERATE(coact::test::worker_counts());
  Watchdog wd(300, "dedup stress");
  TempDir tmp("stress");
  const fs::path src = tmp.path / "src";
  const int nfiles = coact::test::kStressScale < 1 ? 40 : 300;
  for (int i = 0; i < nfiles; ++i) {
    const size_t n = static_cast<size_t>((i * 7919) % 60'000);
    write_file(src / ("d" + std::to_string(i % 7)) / ("f" + std::to_string(i)),
               i % 3 == 0 ? random_bytes(n, static_cast<uint64_t>(i % 50)) : text_bytes(n, static_cast<uint64_t>(i)));
  }
  write_file(src / "big", random_bytes(3 << 20, 99));
  const auto want = snapshot(src);
  std::vector<uint8_t> first;
  const int rounds = coact::test::kStressScale < 1 ? 2 : 5;
  for (int round = 0; round < rounds; ++round) {
    coact::Runtime rt(tuning_for(workers));
    dd::ArchiveOptions opt;
    opt.input = src;
    opt.output = tmp.path / "out.cdar";
    opt.compressors = 8;
    opt.fingerprinters = 8;
    opt.inflight_bytes = 1 << 20;
    dd::archive(rt, opt);
    auto bytes = read_file(opt.output);
    if (first.empty()) {
      first = std::move(bytes);
      const fs::path dest = tmp.path / "dest";
      dd::extract(opt.output, dest);
      CHECK(snapshot(dest) == want);
    } else {
      REQUIRE(bytes == first);
    }
  }
}

// ---- really-faster stage variants (ArchiveOptions; coact-profile validate) ------

TEST_CASE("fastcdc_cut_unrolled cuts exactly where fastcdc_cut does", "[dedup][chunker]") {
  // Random data (cuts anywhere), text (low-entropy), zeros (no content cut:
  // forced at max) and lengths that are not a multiple of the unroll.
  std::vector<std::vector<uint8_t>> inputs{random_bytes(3 << 20, 11), text_bytes(1 << 20, 12),
                                           std::vector<uint8_t>(300'000, 0), random_bytes(70'001, 13)};
  std::vector<dd::ChunkParams> params(3);
  params[1] = dd::ChunkParams{64, 256, 1024};
  params[2] = dd::ChunkParams{1000, 4096, 20'000};
  for (const auto& p : params) {
    for (const auto& data : inputs) {
      INFO("min " << p.min_bytes << " avg " << p.avg_bytes << " max " << p.max_bytes << ", " << data.size() << " bytes");
      size_t pos = 0, cuts = 0;
      while (pos < data.size()) {
        // Every suffix length near the end too: the buffer may end anywhere in the unrolled loop.
        const auto rest = std::span<const uint8_t>(data).subspan(pos);
        const auto a = dd::fastcdc_cut(rest, p);
        const auto b = dd::fastcdc_cut_unrolled(rest, p);
        REQUIRE(a.length == b.length);
        REQUIRE(a.hash_cut == b.hash_cut);
        for (size_t cut_short : {size_t{1}, size_t{7}, size_t{9}}) {
          if (a.length <= cut_short) continue;
          const auto shorter = rest.first(a.length - cut_short);
          const auto sa = dd::fastcdc_cut(shorter, p);
          const auto sb = dd::fastcdc_cut_unrolled(shorter, p);
          REQUIRE(sa.length == sb.length);
          REQUIRE(sa.hash_cut == sb.hash_cut);
        }
        pos += a.length;
        ++cuts;
      }
      CHECK(cuts > 1);
    }
  }
}

TEST_CASE("each really-faster stage variant archives the same chunks, and the archive extracts and verifies",
          "[dedup]") {
  Watchdog wd(120, "dedup variants");
  TempDir tmp("variants");
  const fs::path src = tmp.path / "src";
  make_tree(src);
  write_file(src / "many" / "f0", text_bytes(400'000, 30));  // multi-block: the fast Chunker's carried tail
  for (int i = 1; i < 40; ++i) write_file(src / "many" / ("f" + std::to_string(i)), text_bytes(900 * i, 30 + i));
  const auto want = snapshot(src);

  auto archive_with = [&](const std::string& name, const std::function<void(dd::ArchiveOptions&)>& set) {
    coact::Runtime rt(tuning_for(2));
    dd::ArchiveOptions opt;
    opt.input = src;
    opt.output = tmp.path / (name + ".cdar");
    opt.compressors = 3;
    opt.fingerprinters = 3;
    opt.inflight_bytes = 1 << 20;  // tight: chunks arrive out of order at the Index and the Writer
    std::vector<std::string> warnings;
    opt.warn = [&](const std::string& w) { warnings.push_back(w); };
    set(opt);
    const auto st = dd::archive(rt, opt);
    CHECK(warnings.empty());
    return std::pair{st, read_file(opt.output)};
  };
  const auto [base_st, base] = archive_with("base", [](dd::ArchiveOptions&) {});
  REQUIRE(base.size() > 0);

  const std::vector<std::pair<std::string, std::function<void(dd::ArchiveOptions&)>>> same_bytes{
      {"fast_chunker", [](dd::ArchiveOptions& o) { o.fast_chunker = true; }},
      {"fast_index", [](dd::ArchiveOptions& o) { o.fast_index = true; }},
      {"fast_reader", [](dd::ArchiveOptions& o) { o.fast_reader = true; }},
      {"fast_writer", [](dd::ArchiveOptions& o) { o.fast_writer = true; }},
  };
  for (const auto& [name, set] : same_bytes) {
    INFO(name);
    const auto [st, bytes] = archive_with(name, set);
    CHECK(st.last.chunks == base_st.last.chunks);
    CHECK(bytes == base);  // byte for byte: the variant changes no output
  }

  // SHA-1: other fingerprints (and header flag), the same chunks, dedup and stored data.
  const auto [st, bytes] =
      archive_with("sha1", [](dd::ArchiveOptions& o) { o.fingerprint = dd::ArchiveOptions::FingerprintAlgo::sha1; });
  CHECK(st.last.chunks == base_st.last.chunks);
  CHECK(st.last.unique_chunks == base_st.last.unique_chunks);
  CHECK(st.last.stored_bytes == base_st.last.stored_bytes);
  CHECK(bytes.size() == base.size());
  CHECK(bytes != base);
  const fs::path sha1_archive = tmp.path / "sha1.cdar";
  dd::ArchiveReader ar(sha1_archive);
  CHECK(ar.sha1_fingerprints());
  CHECK_FALSE(dd::ArchiveReader(tmp.path / "base.cdar").sha1_fingerprints());
  std::vector<uint8_t> chunk;
  ar.read_chunk(0, chunk);
  const auto& fp = ar.metadata().chunks[0].fingerprint;
  CHECK(fp == dd::sha1_fingerprint(chunk));
  CHECK(std::all_of(fp.begin() + 20, fp.end(), [](uint8_t b) { return b == 0; }));
  dd::Sha1Fingerprinter fast_sha1;
  CHECK(fast_sha1(chunk) == fp);
  CHECK(dd::verify(sha1_archive).raw_bytes == st.last.bytes_in);
  const fs::path dest = tmp.path / "sha1-x";
  dd::extract(sha1_archive, dest);
  CHECK(snapshot(dest) == want);
}

TEST_CASE("SHA-1 fingerprints match the FIPS 180-4 known answer, zero-padded", "[dedup]") {
  const std::string abc = "abc";
  const std::span<const uint8_t> in{reinterpret_cast<const uint8_t*>(abc.data()), abc.size()};
  CHECK(dd::to_hex(dd::sha1_fingerprint(in)) ==
        "a9993e364706816aba3e25717850c26c9cd0d89d" + std::string(24, '0'));
  dd::Sha1Fingerprinter f;
  CHECK(f(in) == dd::sha1_fingerprint(in));
  CHECK(f(in) == dd::sha1_fingerprint(in));  // the reused context restarts
}

TEST_CASE("the fast Reader skips and warns about the same entries as the baseline Reader", "[dedup]") {
  Watchdog wd(60, "dedup fast reader skip");
  TempDir tmp("fastskip");
  const fs::path src = tmp.path / "src";
  write_file(src / "ok", text_bytes(5000, 20));
  write_file(src / "sub" / "secret", text_bytes(100, 21), fs::perms(0));
  REQUIRE(::mkfifo((src / "sub" / "fifo").c_str(), 0644) == 0);
  fs::create_symlink("/nonexistent/target", src / "dangling");
  auto run = [&](bool fast) {
    coact::Runtime rt(tuning_for(2));
    dd::ArchiveOptions opt;
    opt.input = src;
    opt.output = tmp.path / (fast ? "fast.cdar" : "base.cdar");
    opt.fast_reader = fast;
    std::vector<std::string> warnings;
    opt.warn = [&](const std::string& w) { warnings.push_back(w); };
    const auto st = dd::archive(rt, opt);
    return std::tuple{st.last.files, st.last.skipped, warnings, read_file(opt.output)};
  };
  const auto [files0, skipped0, warn0, bytes0] = run(false);
  const auto [files1, skipped1, warn1, bytes1] = run(true);
  CHECK(files1 == files0);
  CHECK(skipped1 == skipped0);
  CHECK(warn1 == warn0);
  CHECK(std::any_of(warn1.begin(), warn1.end(), [&](const std::string& w) {
    return w.find("skipping special file '" + (src / "sub" / "fifo").string() + "'") != std::string::npos;
  }));
  CHECK(bytes1 == bytes0);
}
