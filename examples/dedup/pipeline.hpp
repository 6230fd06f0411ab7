// dedup/pipeline.hpp: the archiving pipeline, one actor type per stage, in
// the spirit of PARSEC's dedup (Bienia et al., PACT 2008), the program the Coz
// paper (Curtsinger & Berger, SOSP 2015, section 4.2) profiled:
//
//   Reader -> Chunker -> Fingerprinter xF -> Index -> Compressor xC -> Writer
//      ^          (FastCDC)   (SHA-256)     (dedup)       (zstd)       |
//      +------------------- Credit (raw bytes retired) ----------------+
//   Reader -> Writer: FileEntry per directory/symlink/regular file, FilesDone
//   Index  -> Writer: DupChunk (a repeat of an earlier chunk: a reference)
//
// Stages:
//   Reader        walks DIR depth first (siblings sorted bytewise, so the
//                 archive is deterministic), reads regular files in 256 KiB
//                 blocks. Symlinks are stored as links, never followed;
//                 unreadable files and directories are skipped with a
//                 warning; sockets/FIFOs/devices are skipped with a warning.
//   Chunker       cuts each file's byte stream with FastCDC (chunker.hpp) and
//                 numbers chunks in stream order (seq); fans them out to the
//                 Fingerprinters round-robin by seq.
//   Fingerprinter SHA-256 of each chunk (fingerprint.hpp).
//   Index         restores seq order, maps fingerprint -> chunk id; a new
//                 content gets the next id (so ids follow first occurrence,
//                 deterministic) and goes to Compressor[id % C]; a repeat
//                 becomes a DupChunk reference straight to the Writer.
//   Compressor    zstd at the configured level (raw if zstd does not shrink).
//   Writer        restores seq order, appends stored chunks to OUT.tmp in id
//                 order, builds the file table and chunk lists, and at the end
//                 writes metadata, footer and checksum (archive_format.hpp).
//                 One progress point (DEDUP_PROGRESS_CHUNK) per chunk retired.
//
// Backpressure: the Reader may have at most `inflight_bytes` of file data
// between reading it and the Writer retiring it; the Writer returns credit
// in batches of >= 256 KiB. What a blocked Reader can be owed but not yet
// repaid is at most a chunker tail (< max chunk) plus one unreturned batch,
// both far below the 1 MiB minimum budget, so the pipeline cannot stall;
// memory for data in flight is O(inflight_bytes) whatever the input size
// (the index and the file table grow with unique chunks and entries).
//
// End of a pass, numbered steps (per sender-recipient FIFO makes each
// "after" hold):
//   1. Reader exhausts the walk: EndOfStream to the Chunker, FilesDone to the
//      Writer; it stops once all its credit is back (step 5).
//   2. Chunker flushes its tail, sends EndOfStream to every Fingerprinter
//      after its last chunk, and stops; each Fingerprinter forwards it to
//      the Index after its last chunk and stops.
//   3. Index, holding F EndOfStreams, has seen every chunk; it sends
//      EndOfStream to every Compressor and to the Writer, and stops; each
//      Compressor forwards it after its last chunk and stops.
//   4. Writer, holding C+1 EndOfStreams and FilesDone with no gaps in seq,
//      writes the metadata, footer and checksum, closes OUT.tmp, returns all
//      remaining credit and stops.
//   5. Reader's credit reaches zero: it stops. No actor is live: run()
//      returns; the driver renames OUT.tmp to OUT.
//
// Threads: archive() blocks its caller (not a coact handler) while the
// pipeline runs on the Runtime's workers. Errors: archive() throws
// dedup_error naming the input or output; a failure inside a stage (write
// error) is recorded, makes the Runtime stop, and is thrown by archive().
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <coact/runtime/runtime.hpp>

#include "dedup/archive_format.hpp"
#include "dedup/chunker.hpp"
#include "dedup/fingerprint.hpp"

struct ZSTD_CCtx_s;

namespace coact::dedup {

struct PassStats;

/// What to archive and how.
struct ArchiveOptions {
  std::filesystem::path input = "/usr/share/doc";
  std::filesystem::path output = "coact-dedup.cdar";
  int level = 3;                      ///< zstd level (ZSTD_minCLevel()..ZSTD_maxCLevel())
  uint32_t compressors = 4;           ///< Compressor actors, 1..256
  uint32_t fingerprinters = 2;        ///< Fingerprinter actors, 1..256
  uint64_t inflight_bytes = 32 << 20; ///< backpressure budget, >= 1 MiB
  ChunkParams chunking{};
  // Really-faster variants of single stages (coact-dedup archive
  // --fingerprint sha1, --fast-chunker, --fast-index, --fast-reader,
  // --fast-writer; the Compressor's is `level`): each changes only its
  // stage's handler, so that `coact-profile validate` can hold the causal
  // profiler's prediction for that handler against a program that really is
  // faster there. The defaults are the baseline code. Every variant but
  // sha1 writes the same archive bytes; sha1 writes different fingerprints
  // (and header flag bit 0) but cuts, deduplicates, compresses and writes
  // the same chunks.
  enum class FingerprintAlgo { sha256, sha1 };
  FingerprintAlgo fingerprint = FingerprintAlgo::sha256;  ///< sha1: Sha1Fingerprinter (fingerprint.hpp)
  bool fast_chunker = false;  ///< Chunker: fastcdc_cut_unrolled, pending bytes consumed by offset
  bool fast_index = false;    ///< Index: open-addressing fingerprint table, ring reorder window
  bool fast_reader = false;   ///< Reader: openat/fstatat relative to open directories, no fstat after open, no fadvise within one block
  bool fast_writer = false;   ///< Writer: ring reorder window, 8 MiB output buffer
  /// Passes over the input: stop after this many (0 = no pass limit).
  /// The run ends after the first pass that meets any condition that is set
  /// (passes, min_duration, keep_going, the Runtime's stop request).
  uint32_t passes = 1;
  /// Keep passing until this much time passed since the first pass began
  /// (0 = no time condition). At least one pass always runs. With passes
  /// == 0 and min_duration == 0 the passes go on until keep_going returns
  /// false or the Runtime's request_stop() is called.
  std::chrono::duration<double> min_duration{0};
  /// Polled between passes; false ends the run. Empty = always true.
  std::function<bool()> keep_going;
  /// Called on the driver's thread before each pass with the pass's number
  /// (0 = the first) and the options that pass will run with, a copy of
  /// these: it may change the copy's stage options (level and the variants
  /// above; coact-dedup --alternate switches a variant on for some passes),
  /// which archive() then checks as it checks these. Empty = every pass
  /// runs with these options.
  std::function<void(uint32_t pass, ArchiveOptions& pass_options)> configure_pass;
  /// Called on the driver's thread after each completed pass with its
  /// number and figures, before the next pass starts. Empty = none.
  std::function<void(uint32_t pass, const PassStats& stats)> pass_done;
  /// Receives each warning (skipped file, ...). Empty = "coact-dedup:
  /// warning: ..." on stderr. Called from worker threads, serialised.
  std::function<void(const std::string&)> warn;
};

/// What one pass did.
struct PassStats {
  uint64_t files = 0;          ///< regular files archived
  uint64_t directories = 0;
  uint64_t symlinks = 0;
  uint64_t skipped = 0;        ///< entries skipped (unreadable, special)
  uint64_t bytes_in = 0;       ///< file bytes read
  uint64_t chunks = 0;         ///< chunks cut (with repeats)
  uint64_t unique_chunks = 0;
  uint64_t unique_bytes = 0;   ///< raw bytes of unique chunks
  uint64_t stored_bytes = 0;   ///< chunk data section (compressed)
  uint64_t archive_bytes = 0;  ///< whole archive file
  double seconds = 0;
  /// bytes_in / unique_bytes (1 when nothing repeats).
  double dedup_ratio() const { return unique_bytes ? double(bytes_in) / double(unique_bytes) : 1.0; }
};

/// What archive() did over all passes.
struct ArchiveStats {
  PassStats last;            ///< the final completed pass
  uint32_t passes = 0;       ///< completed passes
  double total_seconds = 0;  ///< wall time of all completed passes
  double later_seconds = 0;  ///< wall time of the completed passes after the first
  uint64_t total_bytes_in = 0;
  /// Seconds per pass after the first (the steady state: the first pays the
  /// start-up, e.g. a profiler's symbolizer); the one pass's time if only one ran.
  double later_pass_seconds() const { return passes > 1 ? later_seconds / double(passes - 1) : total_seconds; }
  double mb_per_s() const { return total_seconds > 0 ? double(total_bytes_in) / 1e6 / total_seconds : 0; }
};

/// Archives opt.input into opt.output (via opt.output + ".tmp", renamed at
/// the end of each pass) on `rt`'s workers, pass after pass as the options
/// say. Not from a handler. Throws dedup_error: input missing / not a
/// directory / unreadable, output not creatable, write error, bad option,
/// or a stop request before the first pass completed.
ArchiveStats archive(Runtime& rt, const ArchiveOptions& opt);

/// The human summary printed by coact-dedup (several lines, no trailing newline).
std::string format_summary(const ArchiveOptions& opt, const ArchiveStats& s);

// ---- messages ---------------------------------------------------------------

struct Reader;
struct Chunker;
struct Fingerprinter;
struct Index;
struct Compressor;
struct Writer;
struct PassContext;  // pass_context.hpp (private to the pipeline's files)

struct Start {  ///< driver -> Reader: wiring, then go
  ActorRef<Chunker> chunker;
  ActorRef<Writer> writer;
};
struct Pump {};  ///< Reader -> itself: read more
struct Credit {  ///< Writer -> Reader: raw bytes retired
  uint64_t bytes;
};
struct Block {  ///< Reader -> Chunker: next bytes of file `file`
  uint32_t file;
  bool last;  ///< the file ends with this block
  std::vector<uint8_t> data;
};
struct FileEntry {  ///< Reader -> Writer: file-table entry `file`
  uint32_t file;
  FileRecord record;  ///< size/chunk_count filled in by the Writer
};
struct FilesDone {  ///< Reader -> Writer: the walk is over
  uint32_t entries;
  uint64_t skipped;
};
struct RawChunk {  ///< Chunker -> Fingerprinter
  uint64_t seq;
  uint32_t file;
  std::vector<uint8_t> data;
};
struct HashedChunk {  ///< Fingerprinter -> Index
  uint64_t seq;
  uint32_t file;
  Fingerprint fp;
  std::vector<uint8_t> data;
};
struct NewChunk {  ///< Index -> Compressor: first occurrence, chunk id `id`
  uint64_t seq;
  uint32_t file;
  uint32_t id;
  Fingerprint fp;
  std::vector<uint8_t> data;
};
struct PackedChunk {  ///< Compressor -> Writer
  uint64_t seq;
  uint32_t file;
  uint32_t id;
  uint32_t raw_size;
  ChunkMethod method;
  Fingerprint fp;
  std::vector<uint8_t> stored;
};
struct DupChunk {  ///< Index -> Writer: a repeat of chunk `id`
  uint64_t seq;
  uint32_t file;
  uint32_t id;
  uint32_t raw_size;
};
struct EndOfStream {};  ///< each stage -> the next, after its last item

// ---- actors -----------------------------------------------------------------
// Each holds the pass's shared context; handlers run one at a time per actor.

struct Reader : Actor<Reader> {
  explicit Reader(std::shared_ptr<PassContext> ctx);
  ~Reader() override;
  void on(const Start& s);
  void on(Pump);
  void on(const Credit& c);

 private:
  struct Frame {
    std::string rel;                 ///< directory relative to the root ("" = root)
    std::vector<std::string> names;  ///< its entries, sorted
    size_t next = 0;
    int fd = -1;  ///< fast_reader: the directory, open while it is on the stack (closed by pop_frame)
  };
  bool list_dir(const std::string& rel, Frame& out);
  bool list_dir_at(int parent_fd, const std::string& name, const std::string& rel, Frame& out);
  void pop_frame();
  bool next_entry();
  bool next_entry_fast();
  void read_block();
  void finish();
  void schedule_pump();
  void close_file();

  std::shared_ptr<PassContext> ctx_;
  ActorRef<Chunker> chunker_;
  ActorRef<Writer> writer_;
  std::vector<Frame> stack_;
  int fd_ = -1;
  uint32_t cur_file_ = 0;
  uint64_t cur_size_ = 0;
  uint64_t cur_read_ = 0;
  std::string cur_path_;            ///< the open file: full path, or relative to the root (cur_path_relative_)
  bool cur_path_relative_ = false;  ///< fast_reader keeps the relative path
  std::string cur_path() const;     ///< the open file's full path, for warnings
  uint32_t next_file_ = 0;
  uint64_t skipped_ = 0;
  uint64_t inflight_ = 0;
  bool pump_pending_ = false;
  bool done_ = false;
};

struct Chunker : Actor<Chunker> {
  Chunker(std::shared_ptr<PassContext> ctx, std::vector<ActorRef<Fingerprinter>> fps);
  void on(Block& b);
  void on(EndOfStream);

 private:
  std::shared_ptr<PassContext> ctx_;
  std::vector<ActorRef<Fingerprinter>> fps_;
  void on_block_fast(Block& b);

  std::vector<uint8_t> pending_;  ///< bytes of the current file not yet cut (from pending_pos_ with fast_chunker)
  size_t pending_pos_ = 0;        ///< fast_chunker: bytes of pending_ already cut
  uint32_t file_ = 0;
  uint64_t seq_ = 0;
};

struct Fingerprinter : Actor<Fingerprinter> {
  Fingerprinter(std::shared_ptr<PassContext> ctx, ActorRef<Index> index);
  void on(RawChunk& c);
  void on(EndOfStream);

 private:
  std::shared_ptr<PassContext> ctx_;
  ActorRef<Index> index_;
  std::unique_ptr<Sha1Fingerprinter> sha1_;  ///< set when ctx->opt.fingerprint is sha1
};

struct FingerprintHash {
  size_t operator()(const Fingerprint& f) const noexcept {
    size_t h;
    std::memcpy(&h, f.data(), sizeof h);  // SHA-256 bits are uniform already
    return h;
  }
};

struct Index : Actor<Index> {
  Index(std::shared_ptr<PassContext> ctx, std::vector<ActorRef<Compressor>> compressors, ActorRef<Writer> writer,
        uint32_t fingerprinters);
  void on(HashedChunk& c);
  void on(EndOfStream);

 private:
  std::shared_ptr<PassContext> ctx_;
  std::vector<ActorRef<Compressor>> compressors_;
  ActorRef<Writer> writer_;
  void assign(HashedChunk& c);  // the chunk next in seq order: an id, then NewChunk or DupChunk
  void on_fast(HashedChunk& c);
  uint32_t find_or_add_fast(const Fingerprint& fp, bool& fresh);

  uint32_t ends_needed_;
  std::unordered_map<uint64_t, HashedChunk> reorder_;
  uint64_t next_seq_ = 0;
  std::unordered_map<Fingerprint, uint32_t, FingerprintHash> ids_;
  // fast_index: window_[k] holds seq next_seq_ + k once it arrived; the
  // fingerprint table is open addressing with linear probing (slots_ a
  // power of two, at most half full; id kNoId = empty).
  std::deque<std::optional<HashedChunk>> window_;
  struct Slot {
    Fingerprint fp;
    uint32_t id;
  };
  std::vector<Slot> slots_;
  uint32_t unique_ = 0;
};

struct Compressor : Actor<Compressor> {
  Compressor(std::shared_ptr<PassContext> ctx, ActorRef<Writer> writer);
  ~Compressor() override;
  void on(NewChunk& c);
  void on(EndOfStream);

 private:
  std::shared_ptr<PassContext> ctx_;
  ActorRef<Writer> writer_;
  ZSTD_CCtx_s* cctx_;
};

struct Writer : Actor<Writer> {
  Writer(std::shared_ptr<PassContext> ctx, ActorRef<Reader> reader, std::FILE* out, uint32_t compressors);
  ~Writer() override;
  void on(FileEntry& e);
  void on(const FilesDone& d);
  void on(PackedChunk& c);
  void on(const DupChunk& d);
  void on(EndOfStream);

 private:
  struct Pending {
    bool dup;
    uint32_t file;
    uint32_t id;
    uint32_t raw_size;
    ChunkMethod method;
    Fingerprint fp;
    std::vector<uint8_t> stored;
  };
  void accept(uint64_t seq, Pending p);
  void accept_fast(uint64_t seq, Pending p);
  void retire(Pending& p);
  void put(const void* p, size_t n);
  void maybe_finish();
  void finalize();

  std::shared_ptr<PassContext> ctx_;
  ActorRef<Reader> reader_;
  std::FILE* out_;
  uint32_t ends_needed_;
  uint32_t ends_ = 0;
  bool files_done_ = false;
  uint32_t entries_expected_ = 0;
  uint64_t skipped_ = 0;
  std::unordered_map<uint64_t, Pending> reorder_;
  std::deque<std::optional<Pending>> window_;  ///< fast_writer: window_[k] holds seq next_seq_ + k
  uint64_t next_seq_ = 0;
  uint64_t credit_ = 0;
  uint64_t pos_ = 0;
  Sha256Stream sum_;
  Metadata meta_;
  PassStats stats_;
};

}  // namespace coact::dedup
