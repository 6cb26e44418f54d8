// SPDX-License-Identifier: Apache-2.0
#include "core/stats.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <type_traits>

#include "absl/strings/str_format.h"
#include "accelcrypt/kit/files.h"
#include "nlohmann/json.hpp"

#ifndef ACCELCRYPT_STATS_ROOT
#define ACCELCRYPT_STATS_ROOT "/run/accelcrypt/stats"
#endif

namespace accelcrypt {
namespace {

constexpr size_t RoundUp(size_t n, size_t to) { return (n + to - 1) / to * to; }

// ReadProcessName writes /proc/self/comm without its newline into `dst`,
// NUL-terminated, with plain system calls: no stream (which would set up
// libstdc++'s locales) and no allocation (it may run in a child after
// fork).
void ReadProcessName(char (&dst)[kStatsNameLen]) {
  std::memset(dst, 0, sizeof(dst));
  int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n = read(fd, dst, sizeof(dst) - 1);
  close(fd);
  for (ssize_t i = 0; i < n; ++i) {
    if (dst[i] == '\n') dst[i] = '\0';
  }
  if (n < 0) dst[0] = '\0';
}

void CopyName(char (&dst)[kStatsNameLen], std::string_view src) {
  std::memset(dst, 0, sizeof(dst));
  std::memcpy(dst, src.data(), std::min(src.size(), sizeof(dst) - 1));
}

std::string_view NameOf(const char* field) {
  return std::string_view(field, strnlen(field, kStatsNameLen));
}

// The functions below run in a child after fork: only async-signal-safe
// calls (open/read/write/mmap, no allocation, no stdio).

// StartTicksOf reads field 22 of a /proc/<pid>/stat file; 0 when there is
// none.
uint64_t StartTicksOf(const char* stat_path) {
  int fd = open(stat_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  // The name in parentheses may hold spaces: count fields after the last ')'.
  const char* p = nullptr;
  for (ssize_t i = n - 1; i >= 0; --i) {
    if (buf[i] == ')') {
      p = buf + i + 1;
      break;
    }
  }
  if (p == nullptr) return 0;
  int field = 2;  // the ')' ends field 2
  while (*p != '\0' && field < 22) {
    while (*p == ' ') ++p;
    if (++field == 22) break;
    while (*p != '\0' && *p != ' ') ++p;
  }
  uint64_t v = 0;
  while (*p >= '0' && *p <= '9') v = v * 10 + static_cast<uint64_t>(*p++ - '0');
  return v;
}

// Appender builds a path in a fixed buffer.
struct Appender {
  char* buf;
  size_t cap;
  size_t len = 0;
  bool ok = true;
  void Str(const char* s) {
    for (; *s != '\0'; ++s) Char(*s);
  }
  void Char(char c) {
    if (len + 1 >= cap) {
      ok = false;
      return;
    }
    buf[len++] = c;
    buf[len] = '\0';
  }
  void Num(uint64_t v) {
    char digits[24];
    int n = 0;
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (n > 0) Char(digits[--n]);
  }
};

// CreateLiveFile makes dir/accelcrypt-<pid>-<n>.stats, the first free n.
// Returns the descriptor (path in `path`) or -1.
int CreateLiveFile(const char* dir, char* path, size_t cap) {
  for (uint64_t n = 0; n < 1000; ++n) {
    Appender a{path, cap};
    a.Str(dir);
    a.Str("/accelcrypt-");
    a.Num(static_cast<uint64_t>(getpid()));
    a.Char('-');
    a.Num(n);
    a.Str(".stats");
    if (!a.ok) return -1;
    int fd =
        open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
    if (errno != EEXIST) return -1;
  }
  return -1;
}

// The process-wide list of Stats objects, for the fork handler. The
// prepare handler holds the lock across fork so the list is consistent in
// the child.
struct LiveList {
  std::mutex mu;
  Stats* items[32] = {};
};
// A static, not a heap object (which leaked at every unload of the
// library, LeakSanitizer in CI's ASan stage): trivially destructible, so it
// is never destroyed while the process lives (the fork handlers use it to
// the end), and it goes with the library's mapping when the library is
// unloaded, when glibc drops that library's fork handlers too.
LiveList& Lives() {
  static_assert(std::is_trivially_destructible_v<LiveList>);
  static LiveList list;
  return list;
}

void ForkPrepare() { Lives().mu.lock(); }
void ForkParent() { Lives().mu.unlock(); }
void ForkChild() {
  LiveList& list = Lives();
  for (Stats* s : list.items) {
    if (s != nullptr) s->RestartInChild();
  }
  list.mu.unlock();
}

// ExitHook finishes every live Stats when the process exits normally
// (exit(), return from main) even if nobody tears the cores down: Apache's
// mod_ssl initialises OpenSSL with OPENSSL_INIT_NO_ATEXIT, so its children
// leave through exit() without unloading the provider. A function-local
// static constructed after libcrypto's own atexit registration, so it runs
// before OpenSSL's cleanup; the cores' own teardown later finds their Stats
// finished. Never runs after _exit or a signal: the live file then stays.
struct ExitHook {
  // std::mutex::lock throws only for a mutex that is broken or already
  // held by this thread, neither of which exit can meet.
  ~ExitHook() {  // NOLINT(bugprone-exception-escape)
    LiveList& list = Lives();
    std::lock_guard<std::mutex> lock(list.mu);
    for (Stats* s : list.items) {
      if (s != nullptr) s->FinishLive();
    }
  }
};

void Enlist(Stats* s) {
  // A function-local static, not std::call_once: glibc's pthread_once
  // makes a futex call every time it runs an initialiser.
  static const bool registered = [] {
    Lives();
    pthread_atfork(ForkPrepare, ForkParent, ForkChild);
    static ExitHook hook;
    (void)hook;
    return true;
  }();
  (void)registered;
  LiveList& list = Lives();
  std::lock_guard<std::mutex> lock(list.mu);
  for (Stats*& slot : list.items) {
    if (slot == nullptr) {
      slot = s;
      return;
    }
  }
  // More than 32 live cores in one process: the extra ones keep counting
  // but a forked child repeats their counts.
}

void Delist(Stats* s) {
  LiveList& list = Lives();
  std::lock_guard<std::mutex> lock(list.mu);
  for (Stats*& slot : list.items) {
    if (slot == s) slot = nullptr;
  }
}

std::atomic<uint64_t> g_write_seq{0};

// WriteJsonFile writes `json` to `final_path` without ever replacing an
// existing file: temp file, then link (kAlreadyExists when taken).
absl::Status WriteJsonFile(const std::string& final_path,
                           const std::string& json) {
  if (kit::WriteFileAtomically(final_path, json,
                               {.mode = 0600, .no_replace = true})) {
    return absl::OkStatus();
  }
  return errno == EEXIST ? absl::AlreadyExistsError(final_path)
                         : absl::UnavailableError(absl::StrFormat(
                               "cannot create stats file %s: %s", final_path,
                               std::strerror(errno)));
}

}  // namespace

const char* DefaultStatsRoot() { return ACCELCRYPT_STATS_ROOT; }

Stats::Stats() : num_algs_(AllAlgorithms().size() + 1) {
  cells_offset_ =
      RoundUp(sizeof(StatsFileHeader) + num_algs_ * kStatsNameLen, 64);
  map_size_ =
      RoundUp(cells_offset_ + kMaxBackends * num_algs_ * sizeof(Counter),
              static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  // Reserved, not touched: its pages are faulted in by the first counted
  // operation (Arm), never by a process that counts nothing.
  void* p = mmap(nullptr, map_size_, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  base_ = static_cast<unsigned char*>(p);
  header_ = reinterpret_cast<StatsFileHeader*>(base_);
  cells_ = reinterpret_cast<Counter*>(base_ + cells_offset_);
  Enlist(this);
}

Stats::~Stats() {
  Delist(this);
  if (base_ != nullptr) munmap(base_, map_size_);
}

void Stats::PrepareTable() {
  if (table_ready_.load(std::memory_order_relaxed)) return;
  header_ = new (base_) StatsFileHeader{};
  std::memcpy(header_->magic, kStatsMagic, sizeof(kStatsMagic));
  header_->version = kStatsVersion;
  header_->header_size = sizeof(StatsFileHeader);
  header_->cell_size = sizeof(Counter);
  header_->max_backends = kMaxBackends;
  header_->num_algs = static_cast<uint32_t>(num_algs_);
  header_->name_len = kStatsNameLen;
  header_->cells_offset = cells_offset_;
  header_->file_size = map_size_;
  header_->state.store(kStatsLive, std::memory_order_relaxed);
  auto* alg_names =
      reinterpret_cast<char(*)[kStatsNameLen]>(base_ + sizeof(StatsFileHeader));
  for (const AlgorithmInfo& alg : AllAlgorithms()) {
    CopyName(alg_names[alg.index], alg.name);
  }
  CopyName(alg_names[num_algs_ - 1], kStatsInitColumn);
  // Only the registered rows are made (and so touched); a backend
  // registered later makes its own (RegisterBackend, under the same lock).
  std::lock_guard<std::mutex> names_lock(names_mu_);
  for (size_t b = 0; b < names_.size(); ++b) {
    CopyName(header_->backend_names[b], names_[b]);
    for (size_t a = 0; a < num_algs_; ++a) {
      new (&cells_[b * num_algs_ + a]) Counter();
    }
  }
  header_->num_backends.store(static_cast<uint32_t>(names_.size()),
                              std::memory_order_release);
  table_ready_.store(true, std::memory_order_relaxed);
  // The identity (pid, parent, name, start time: eight system calls) only
  // where something will read it: a live file, a JSON file.
  if (go_live_) FillIdentity();
}

size_t Stats::UsedBytes() const {
  std::lock_guard<std::mutex> lock(names_mu_);
  return cells_offset_ + names_.size() * num_algs_ * sizeof(Counter);
}

void Stats::GoLiveAtFirstUse(const std::string& dir, bool report) {
  LiveList& list = Lives();
  std::lock_guard<std::mutex> lock(list.mu);
  if (armed_.load(std::memory_order_relaxed) || dir.empty()) return;
  go_live_ = true;
  report_ = report;
  // Everything the live file needs is allocated now: a child after fork
  // makes its file without allocating.
  live_dir_ = dir;
  live_path_.reserve(dir.size() + 64);
  scratch_.resize(cells_offset_);
}

void Stats::Arm() {
  LiveList& list = Lives();
  std::lock_guard<std::mutex> lock(list.mu);  // no fork in between
  ArmLocked();
}

void Stats::ArmLocked() {
  if (armed_.load(std::memory_order_relaxed)) return;
  PrepareTable();
  if (go_live_) {
    go_live_ = false;
    // When the live file cannot be made, the JSON file is still tried at
    // Finish.
    absl::Status st = StartLiveLocked(live_dir_);
    if (!st.ok() && report_) {
      std::fprintf(stderr, "accelcrypt: %s\n",
                   std::string(st.message()).c_str());
    }
  }
  armed_.store(true, std::memory_order_release);
}

void Stats::FillIdentity() {
  identity_ready_ = true;
  ReadProcessName(header_->comm);
  header_->pid = getpid();
  header_->ppid = getppid();
  header_->uid.store(static_cast<uint32_t>(geteuid()),
                     std::memory_order_relaxed);
  header_->start_ticks = StartTicksOf("/proc/self/stat");
  struct timespec now = {};
  clock_gettime(CLOCK_REALTIME, &now);
  header_->created_unix_ms =
      static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

void Stats::NoteUid() {
  // geteuid is allowed in sandboxes that kill a process for other
  // identity calls (OpenSSH's seccomp filter lists it).
  const auto uid = static_cast<uint32_t>(geteuid());
  if (header_->uid.load(std::memory_order_relaxed) != uid) {
    header_->uid.store(uid, std::memory_order_relaxed);
  }
}

size_t Stats::RegisterBackend(std::string_view name) {
  std::lock_guard<std::mutex> lock(names_mu_);
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return i;
  }
  if (names_.size() == kMaxBackends) return kMaxBackends - 1;
  names_.emplace_back(name);
  const size_t slot = names_.size() - 1;
  if (table_ready_.load(std::memory_order_relaxed)) {
    CopyName(header_->backend_names[slot], name);
    for (size_t a = 0; a < num_algs_; ++a) {
      new (&cells_[slot * num_algs_ + a]) Counter();
    }
    header_->num_backends.store(static_cast<uint32_t>(names_.size()),
                                std::memory_order_release);
  }
  return slot;
}

std::string Stats::ToJson() const {
  // The table's header and rows exist once armed (a table never armed
  // counted nothing).
  auto* self = const_cast<Stats*>(this);
  self->EnsureArmed();
  // Not under the stats lock: the exit hook holds it when it finishes a
  // live table, whose identity is always filled.
  if (!identity_ready_) self->FillIdentity();
  std::vector<std::string> names;
  {
    std::lock_guard<std::mutex> lock(names_mu_);
    names = names_;
  }
  nlohmann::json backends = nlohmann::json::object();
  for (size_t b = 0; b < names.size(); ++b) {
    nlohmann::json algs = nlohmann::json::object();
    for (size_t a = 0; a < num_algs_; ++a) {
      const Counter& c = cells_[b * num_algs_ + a];
      uint64_t ops = c.ops.load(std::memory_order_relaxed);
      uint64_t bytes = c.bytes.load(std::memory_order_relaxed);
      uint64_t errors = c.errors.load(std::memory_order_relaxed);
      uint64_t fallbacks = c.fallbacks.load(std::memory_order_relaxed);
      if (ops == 0 && bytes == 0 && errors == 0 && fallbacks == 0) continue;
      const std::string name = a + 1 == num_algs_
                                   ? std::string(kStatsInitColumn)
                                   : std::string(AllAlgorithms()[a].name);
      algs[name] = {{"ops", ops},
                    {"bytes", bytes},
                    {"errors", errors},
                    {"fallbacks", fallbacks}};
    }
    backends[names[b]] = std::move(algs);
  }
  // From the header (set at start and at fork), not from system calls: a
  // sandboxed process (sshd's seccomp preauth child) is killed for calls
  // such as getppid at exit.
  nlohmann::json doc = {{"pid", header_->pid},
                        {"ppid", header_->ppid},
                        {"uid", header_->uid.load(std::memory_order_relaxed)},
                        {"process", std::string(NameOf(header_->comm))},
                        {"state", "ended"},
                        {"start_ticks", header_->start_ticks},
                        {"created_unix_ms", header_->created_unix_ms},
                        {"backends", std::move(backends)}};
  // Names come from the process (comm) and the file: bytes that are not
  // UTF-8 become U+FFFD instead of an exception out of dump().
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

absl::Status Stats::WriteToDir(const std::string& dir) const {
  std::string json = ToJson();
  for (int attempt = 0; attempt < 1000; ++attempt) {
    uint64_t seq = g_write_seq.fetch_add(1, std::memory_order_relaxed);
    absl::Status st = WriteJsonFile(
        absl::StrFormat("%s/accelcrypt-%d-%d.json", dir, getpid(), seq), json);
    if (!absl::IsAlreadyExists(st)) return st;
  }
  return absl::UnavailableError(
      absl::StrFormat("cannot find a free stats file name in %s", dir));
}

absl::Status Stats::StartLive(const std::string& dir) {
  LiveList& list = Lives();
  std::lock_guard<std::mutex> lock(list.mu);  // no fork in between
  // Armed first, without going live elsewhere: this call names the
  // directory.
  go_live_ = false;
  ArmLocked();
  return StartLiveLocked(dir);
}

absl::Status Stats::StartLiveLocked(const std::string& dir) {
  if (live_) return absl::OkStatus();
  if (!identity_ready_) FillIdentity();
  char path[4096];
  int fd = CreateLiveFile(dir.c_str(), path, sizeof(path));
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrFormat("cannot create a live stats file in %s: %s", dir,
                        std::strerror(errno)));
  }
  // The file gets the table as it is now, then the same addresses map the
  // file: nothing counted so far is lost, no pointer moves. Only the part
  // in use is written (the rest of the file reads as zeros) so that the
  // table's unused pages are never touched.
  header_->file_size = map_size_;
  const size_t used = UsedBytes();
  bool ok = ftruncate(fd, static_cast<off_t>(map_size_)) == 0;
  size_t off = 0;
  while (ok && off < used) {
    ssize_t n = pwrite(fd, base_ + off, used - off, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    off += static_cast<size_t>(n);
  }
  int saved = errno;
  if (ok && mmap(base_, map_size_, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
    saved = errno;
    ok = false;
  }
  close(fd);
  if (!ok) {
    unlink(path);
    return absl::UnavailableError(absl::StrFormat(
        "cannot set up live stats file %s: %s", path, std::strerror(saved)));
  }
  live_ = true;
  if (live_dir_ != dir) live_dir_ = dir;
  // Reserved by GoLiveAtFirstUse when it runs in a child after fork.
  live_path_.assign(path);
  live_path_.reserve(live_path_.size() + 32);  // a child's longer pid
  scratch_.resize(cells_offset_);
  return absl::OkStatus();
}

void Stats::FinishLive() {
  if (live_ && !finished_) (void)Finish(live_dir_);
}

absl::Status Stats::Finish(const std::string& dir) {
  if (finished_) return absl::OkStatus();
  finished_ = true;
  // Never armed: nothing was counted, no file was made; none is written.
  if (!armed_.load(std::memory_order_acquire)) return absl::OkStatus();
  NoteUid();  // the user it ends as, also in the file of the user it began as
  if (!live_) {
    if (dir.empty()) return absl::OkStatus();
    return WriteToDir(dir);
  }
  // accelcrypt-<pid>-<n>.stats -> accelcrypt-<pid>-<n>.json
  std::string json_path =
      live_path_.substr(0, live_path_.size() - std::strlen(".stats")) + ".json";
  absl::Status st = WriteJsonFile(json_path, ToJson());
  if (absl::IsAlreadyExists(st)) st = WriteToDir(live_dir_);
  // Either way the live file says the process ended cleanly. When the
  // JSON cannot be written (a child forked before its parent dropped
  // privileges: its file sits in the directory of the user it was forked
  // as, which it can no longer write), the live file, still mapped and
  // writable, keeps the final counts and the readers show it as ended.
  header_->state.store(kStatsEnded, std::memory_order_release);
  if (!st.ok()) return st;
  unlink(live_path_.c_str());
  return absl::OkStatus();
}

void Stats::RestartInChild() {
  if (!armed_.load(std::memory_order_relaxed)) {
    // The parent counted nothing: the table is as new. A child that is to
    // go live makes its file now, as a live parent's child does (a child
    // may enter a sandbox next, where it can make no file); any other
    // child arms at its own first counted operation.
    if (go_live_) ArmLocked();
    return;
  }
  const size_t cells_offset = cells_offset_;
  if (!live_) {
    // Private anonymous memory: the parent's copy is not touched. The
    // identity is the child's: now when a JSON file will be written at the
    // end (the child may be in a sandbox by then), else when asked.
    std::memset(static_cast<void*>(cells_), 0,
                names_.size() * num_algs_ * sizeof(Counter));
    identity_ready_ = false;
    if (!live_dir_.empty()) FillIdentity();
    return;
  }
  // The mapping is shared with the parent's file: never write to it here.
  std::memcpy(scratch_.data(), base_, cells_offset);
  if (!finished_) {
    char path[4096];
    int fd = CreateLiveFile(live_dir_.c_str(), path, sizeof(path));
    const size_t len = strnlen(path, sizeof(path));
    bool ok = fd >= 0 && len <= live_path_.capacity() &&
              ftruncate(fd, static_cast<off_t>(map_size_)) == 0 &&
              pwrite(fd, scratch_.data(), cells_offset, 0) ==
                  static_cast<ssize_t>(cells_offset) &&
              mmap(base_, map_size_, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_FIXED, fd, 0) != MAP_FAILED;
    if (fd >= 0) close(fd);
    if (ok) {
      // The file's cells are zero (ftruncate); the header is ours to fill.
      // The capacity was reserved by StartLive: assign does not allocate.
      live_path_.assign(path, len);
      // The copied header may say "ended": a parent that exits right after
      // fork (a daemon detaching) can finish between fork and this copy.
      header_->state.store(kStatsLive, std::memory_order_relaxed);
      FillIdentity();
      return;
    }
    if (fd >= 0) unlink(path);
  }
  // No file for the child: count in private memory, from zero.
  // Unchecked, as before the lint stage: a failed mmap (ENOMEM) would leave
  // the parent's shared file mapped and the child counting into it.
  // NOLINTNEXTLINE(bugprone-unused-return-value)
  mmap(base_, map_size_, PROT_READ | PROT_WRITE,
       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  std::memcpy(base_, scratch_.data(), cells_offset);
  header_->state.store(kStatsLive, std::memory_order_relaxed);
  live_ = false;
  FillIdentity();
}

absl::StatusOr<std::string> ResolveStatsDir(
    const std::optional<std::string>& configured,
    const std::string& default_root) {
  std::string dir;
  bool is_default = false;
  if (!configured.has_value() || configured->empty()) {
    if (default_root.empty()) return std::string();
    dir = default_root;
    is_default = true;
  } else if (*configured == "none" || *configured == "off") {
    return std::string();
  } else {
    dir = *configured;
  }
  struct stat st = {};
  if (stat(dir.c_str(), &st) != 0) {
    if (is_default) return std::string();  // package not installed: off
    return absl::NotFoundError(
        absl::StrFormat("stats_dir %s: %s", dir, std::strerror(errno)));
  }
  if (!S_ISDIR(st.st_mode)) {
    if (is_default) return std::string();
    return absl::InvalidArgumentError(
        absl::StrFormat("stats_dir %s: not a directory", dir));
  }
  const bool shared_root =
      (st.st_mode & S_ISVTX) != 0 && (st.st_mode & S_IWOTH) != 0;
  if (!shared_root) return dir;
  const uid_t uid = geteuid();
  std::string mine = absl::StrFormat("%s/%d", dir, uid);
  if (mkdir(mine.c_str(), 0700) != 0 && errno != EEXIST) {
    return absl::UnavailableError(absl::StrFormat(
        "stats_dir %s: cannot create %s: %s", dir, mine, std::strerror(errno)));
  }
  struct stat own = {};
  if (lstat(mine.c_str(), &own) != 0) {
    return absl::UnavailableError(absl::StrFormat("stats_dir %s: %s: %s", dir,
                                                  mine, std::strerror(errno)));
  }
  if (!S_ISDIR(own.st_mode) || own.st_uid != uid || (own.st_mode & 077) != 0) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "stats_dir %s: %s is not a private directory owned by uid %d "
        "(refusing to write statistics there)",
        dir, mine, uid));
  }
  return mine;
}

bool StatsWriterAlive(int64_t pid, uint64_t start_ticks) {
  if (pid <= 0) return false;
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;
  if (start_ticks == 0) return true;
  std::string path = absl::StrFormat("/proc/%d/stat", pid);
  uint64_t now = StartTicksOf(path.c_str());
  return now == 0 || now == start_ticks;
}

absl::StatusOr<std::string> LiveStatsToJson(std::string_view bytes) {
  if (bytes.size() < sizeof(StatsFileHeader)) {
    return absl::InvalidArgumentError("shorter than a stats header");
  }
  StatsFileHeader h;
  std::memcpy(static_cast<void*>(&h), bytes.data(), sizeof(h));
  if (std::memcmp(h.magic, kStatsMagic, sizeof(kStatsMagic)) != 0) {
    return absl::InvalidArgumentError("not an accelcrypt stats file");
  }
  if (h.version != kStatsVersion || h.header_size != sizeof(StatsFileHeader) ||
      h.cell_size != sizeof(Counter) || h.name_len != kStatsNameLen ||
      h.max_backends > 1024 || h.num_algs > 4096) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "stats file version %d or layout not understood by this tool",
        h.version));
  }
  const uint64_t names_end =
      sizeof(StatsFileHeader) + uint64_t{h.num_algs} * kStatsNameLen;
  // At most 1024 * 4096 * 32 bytes (checked above): no overflow. The offset
  // is compared with the size before anything is added to it: a file with
  // an offset near 2^64 wrapped the sum below the size and was read far
  // outside the bytes (found by the stats fuzzer).
  const uint64_t cells_size =
      uint64_t{h.max_backends} * h.num_algs * sizeof(Counter);
  const uint32_t num_backends = h.num_backends.load(std::memory_order_relaxed);
  if (h.cells_offset < names_end || h.cells_offset % 8 != 0 ||
      h.cells_offset > bytes.size() ||
      cells_size > bytes.size() - h.cells_offset ||
      num_backends > h.max_backends || num_backends > kStatsMaxBackends) {
    return absl::InvalidArgumentError(
        "stats file is truncated or inconsistent");
  }
  const char* alg_names = bytes.data() + sizeof(StatsFileHeader);
  nlohmann::json backends = nlohmann::json::object();
  for (uint32_t b = 0; b < num_backends; ++b) {
    nlohmann::json algs = nlohmann::json::object();
    for (uint32_t a = 0; a < h.num_algs; ++a) {
      uint64_t v[4];
      std::memcpy(v,
                  bytes.data() + h.cells_offset +
                      (uint64_t{b} * h.num_algs + a) * sizeof(Counter),
                  sizeof(v));
      if ((v[0] | v[1] | v[2] | v[3]) == 0) continue;
      algs[std::string(NameOf(alg_names + a * kStatsNameLen))] = {
          {"ops", v[0]},
          {"bytes", v[1]},
          {"errors", v[2]},
          {"fallbacks", v[3]}};
    }
    backends[std::string(NameOf(h.backend_names[b]))] = std::move(algs);
  }
  const uint32_t state = h.state.load(std::memory_order_relaxed);
  nlohmann::json doc = {{"pid", h.pid},
                        {"ppid", h.ppid},
                        {"uid", h.uid.load(std::memory_order_relaxed)},
                        {"process", std::string(NameOf(h.comm))},
                        {"state", state == kStatsEnded ? "ended" : "live"},
                        {"start_ticks", h.start_ticks},
                        {"created_unix_ms", h.created_unix_ms},
                        {"backends", std::move(backends)}};
  // Names come from the process (comm) and the file: bytes that are not
  // UTF-8 become U+FFFD instead of an exception out of dump().
  return doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace accelcrypt
