// SPDX-License-Identifier: Apache-2.0
#ifndef ACCELCRYPT_CORE_STATS_H_
#define ACCELCRYPT_CORE_STATS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/algorithms.h"

namespace accelcrypt {

// Counter is one (backend, algorithm) cell. Relaxed atomics: the hot path
// only increments. Cells may live in a file shared with `accelcrypt stats`,
// so the atomics must be lock-free (address-free).
struct Counter {
  std::atomic<uint64_t> ops{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> errors{0};
  std::atomic<uint64_t> fallbacks{0};  // ops moved *away* from this backend
  void Add(uint64_t n_bytes) {
    ops.fetch_add(1, std::memory_order_relaxed);
    bytes.fetch_add(n_bytes, std::memory_order_relaxed);
  }
  void AddBytes(uint64_t n_bytes) {
    bytes.fetch_add(n_bytes, std::memory_order_relaxed);
  }
};
// Streaming paths add bytes to a private tally and move it into the shared
// cell at the end of the operation, and whenever it reaches this many bytes:
// a long transfer's counts are live (at most this much per open operation
// is not yet in the file when a process is killed) for one atomic add per
// 16 KiB.
inline constexpr uint64_t kStatsFlushBytes = 16384;

static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "stats cells are shared through a file mapping");

// The name of the column after the algorithms' (Stats::InitCell).
inline constexpr char kStatsInitColumn[] = "INIT";

// The live stats file, `<dir>/accelcrypt-<pid>-<n>.stats`: this header, the
// column names (num_algs x kStatsNameLen bytes: the algorithms of the
// identity table, then kStatsInitColumn), then at cells_offset the
// max_backends x num_algs Counter cells (4 x uint64). Native byte order and
// alignment: it is read on the machine that wrote it. Readers check magic,
// version and every size before they trust an offset.
inline constexpr char kStatsMagic[8] = {'A', 'C', 'S', 'T', 'A', 'T', 'S', 0};
inline constexpr uint32_t kStatsVersion = 1;
inline constexpr size_t kStatsNameLen = 32;
inline constexpr size_t kStatsMaxBackends = 16;

enum StatsState : uint32_t {
  kStatsLive = 1,   // counting; the process may still be running
  kStatsEnded = 2,  // torn down cleanly (its JSON file replaces this one)
};

struct StatsFileHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_size;   // sizeof(StatsFileHeader)
  uint32_t cell_size;     // sizeof(Counter)
  uint32_t max_backends;  // rows reserved
  uint32_t num_algs;      // columns
  uint32_t name_len;      // kStatsNameLen
  uint64_t cells_offset;
  uint64_t file_size;
  int64_t pid;
  int64_t ppid;
  // The effective uid the process last counted as (Stats::NoteUid): a
  // worker forked as root and then run as another user shows that user.
  std::atomic<uint32_t> uid;
  std::atomic<uint32_t> state;
  // Field 22 of /proc/<pid>/stat (clock ticks after boot; 0 where there is
  // no such file): with the pid it tells a live writer from a reused pid.
  uint64_t start_ticks;
  int64_t created_unix_ms;  // when this file was started (wall clock)
  std::atomic<uint32_t> num_backends;
  uint32_t reserved;
  char comm[kStatsNameLen];
  char backend_names[kStatsMaxBackends][kStatsNameLen];
};

// Stats holds a dense table of counters, one row per backend slot and one
// column per algorithm of the identity table. Backend slots are registered
// at load time, or when a deferred backend starts; Cell is lock-free and
// allocation-free.
//
// The table sits in one memory mapping for the object's life: anonymous
// until the table goes live, then the same addresses backed by a file
// (counter pointers held by routed objects stay valid). Nothing of it is
// touched, and no file made, before the first counted operation (Arm): a
// process that loads the provider and does no crypto through it pays one
// anonymous mmap. In a child after fork the table starts again from zero,
// in a file of the child's own when live (made at the fork, before a
// sandbox the child may enter), so a child counts only its own work and
// _exit, SIGKILL or exec lose nothing already counted.
class Stats {
 public:
  static constexpr size_t kMaxBackends = kStatsMaxBackends;
  Stats();
  ~Stats();
  Stats(const Stats&) = delete;
  Stats& operator=(const Stats&) = delete;

  // RegisterBackend returns the slot for `name` (creating it). Thread-safe
  // (a backend that starts late registers while others count).
  size_t RegisterBackend(std::string_view name);
  // Cell is the counter of (backend slot, algorithm), for counting now: the
  // first call arms the table (Arm).
  Counter& Cell(size_t backend_slot, const AlgorithmInfo& alg) {
    if (!armed_.load(std::memory_order_acquire)) [[unlikely]] {
      Arm();
    }
    return cells_[backend_slot * num_algs_ + alg.index];
  }
  // InitCell is the backend's column after the algorithms, named
  // kStatsInitColumn: `errors` counts the times it failed to start (a
  // token backend that could not initialise its module or find its
  // token), whatever algorithm it would have served. Arms the table, as
  // Cell.
  Counter& InitCell(size_t backend_slot) {
    if (!armed_.load(std::memory_order_acquire)) [[unlikely]] {
      Arm();
    }
    return cells_[backend_slot * num_algs_ + num_algs_ - 1];
  }
  // CellAddress is where Cell's counter lives, without arming the table:
  // for a pointer kept at load time, whose user calls Arm (or
  // EnsureArmed) before it counts through it.
  Counter* CellAddress(size_t backend_slot, const AlgorithmInfo& alg) {
    return &cells_[backend_slot * num_algs_ + alg.index];
  }
  // GoLiveAtFirstUse: at Arm the table goes live in `dir` (a directory
  // ResolveStatsDir gave; empty: never). `report`: a live file that cannot
  // be made is reported on stderr (a configured log_level).
  void GoLiveAtFirstUse(const std::string& dir, bool report);
  // Arm prepares the table (header, this process's identity, the
  // registered rows) and, after GoLiveAtFirstUse, starts the live file.
  // Once per Stats (later calls return at once); thread-safe.
  void Arm();
  void EnsureArmed() {
    if (!armed_.load(std::memory_order_acquire)) [[unlikely]] {
      Arm();
    }
  }
  bool armed() const { return armed_.load(std::memory_order_acquire); }

  // ToJson renders every non-zero counter (arming the table first):
  // {"pid":N,"ppid":N,"uid":N,"process":"...","state":"ended",
  //  "backends":{"software":{"AES-128-CBC":
  //  {"ops":..,"bytes":..,"errors":..,"fallbacks":..}}}}
  std::string ToJson() const;
  // WriteToDir writes ToJson() to dir/accelcrypt-<pid>-<seq>.json atomically
  // (temp file + link), never replacing an existing file.
  absl::Status WriteToDir(const std::string& dir) const;

  // StartLive arms the table and backs it with a new file in `dir`
  // (created 0600, O_EXCL, never through a symlink) holding the counts so
  // far; from here on every count is in the file. kUnavailable (still
  // counting in memory) when the file cannot be made.
  absl::Status StartLive(const std::string& dir);
  // Finish is the clean end: the JSON file replaces the live one (same base
  // name) in the live directory, or in `dir` when not live; empty `dir` and
  // not live writes nothing, and so does a table never armed (nothing was
  // counted). Later calls do nothing.
  absl::Status Finish(const std::string& dir);
  // FinishLive is Finish for a live Stats (no-op otherwise), for the
  // process's exit hook.
  void FinishLive();
  bool live() const { return live_; }
  const std::string& live_path() const { return live_path_; }

  // NoteUid records the process's effective uid now, for a process that
  // changed user after its file was made (a daemon's worker, forked as root
  // before it drops privileges). Called per public-key operation and at the
  // end (Finish); not on the cipher and digest paths (a system call).
  void NoteUid();

  // Fork support, called by the process-wide atfork handler with every
  // other thread gone: start from zero, in a new file when live (or about
  // to go live at first use).
  void RestartInChild();

 private:
  void FillIdentity();
  // PrepareTable writes the header, the names and the registered rows
  // (once). With the process-wide stats lock held.
  void PrepareTable();
  // ArmLocked is Arm with that lock held.
  void ArmLocked();
  absl::Status StartLiveLocked(const std::string& dir);
  // The bytes of the table in use: header, names and registered rows.
  size_t UsedBytes() const;
  size_t num_algs_;
  size_t map_size_ = 0;
  size_t cells_offset_ = 0;
  unsigned char* base_ = nullptr;
  StatsFileHeader* header_ = nullptr;
  Counter* cells_ = nullptr;
  mutable std::mutex names_mu_;
  std::vector<std::string> names_;  // under names_mu_
  std::atomic<bool> armed_{false};
  // table_ready_: PrepareTable made the header and the registered rows;
  // set and read under names_mu_ (atomic only so that PrepareTable's
  // early return may read it without the lock).
  std::atomic<bool> table_ready_{false};
  bool identity_ready_ = false;  // header's pid, ppid, uid, comm, times
  bool live_ = false;
  bool finished_ = false;
  // GoLiveAtFirstUse's settings.
  bool go_live_ = false;
  bool report_ = false;
  std::string live_dir_;
  std::string live_path_;
  std::vector<unsigned char> scratch_;  // header copy for RestartInChild
};

// ResolveStatsDir turns the configured `stats_dir` (nullopt: unset) into the
// directory this process writes to, or "" for no statistics:
// - unset: `default_root` when it exists (the packaged /run/accelcrypt/stats),
//   else none;
// - "none" or "off": none;
// - a shared root (a sticky directory writable by others, mode 1733 as the
//   package creates it): its per-user subdirectory `<root>/<euid>`, created
//   0700 on first use and used only when it is a real directory owned by this
//   user with no group or other access;
// - any other directory: itself.
// An error names the path and the reason (a configured directory that is
// missing, not a directory, or a per-user subdirectory that fails the check).
absl::StatusOr<std::string> ResolveStatsDir(
    const std::optional<std::string>& configured,
    const std::string& default_root);

// The build's default shared root (CMake ACCELCRYPT_STATS_ROOT).
const char* DefaultStatsRoot();

// LiveStatsToJson decodes a live stats file's bytes into the ToJson shape
// ("state":"live"), plus "start_ticks" and "created_unix_ms".
// kInvalidArgument when the bytes are not a consistent stats file.
absl::StatusOr<std::string> LiveStatsToJson(std::string_view bytes);

// StatsWriterAlive reports whether the process that started a live file is
// still running: `pid` exists and, where /proc gives start times, started at
// `start_ticks` (not a reused pid).
bool StatsWriterAlive(int64_t pid, uint64_t start_ticks);

}  // namespace accelcrypt

#endif  // ACCELCRYPT_CORE_STATS_H_
