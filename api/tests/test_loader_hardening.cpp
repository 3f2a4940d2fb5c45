// test_loader_hardening.cpp — the loader's defences (docs/security.md):
//  - candidates are checked before dlopen: a FIFO is refused without being opened (dlopen
//    would block forever), a truncated copy is refused (dlopen would die with SIGBUS), a file
//    that is not an ELF shared object of this host is refused naming the check;
//  - a plugin file or folder writable by others is refused;
//  - a plugin shadowed by one of the same name in an earlier folder is a DUPLICATE record,
//    printed as a warning.
// Every case calls nnp_shutdown(), so they live in the api_tests binary only.
#include <doctest/doctest.h>

#include <nnplug/nnplug.h>

#include "test_support.hpp"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using nnp_test::rec;
using nnp_test::records;

// The latest record of `path` (state 0 if none).
rec record_of(const fs::path& path) {
  rec found{"", "", "", 0, -1};
  for (const rec& r : records())
    if (r.path == path.string()) found = r;
  return found;
}

fs::path fixture(const std::string& name) {
  return fs::path(NNPLUG_FIXTURE_DIR) / ("libnnplug-fx_" + name + ".so");
}

bool have_fixtures() {
  std::error_code ec;
  if (fs::exists(fixture("ok"), ec)) return true;
  MESSAGE("fixture plugins not found in " << NNPLUG_FIXTURE_DIR << "; case skipped");
  return false;
}

std::vector<char> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const fs::path& p, const std::vector<char>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

// A scratch folder (test_support.hpp), with the library state and NNPLUG_PLUGIN_PATH reset at
// both ends of a case.
struct scratch {
  nnp_test::scratch_dir tmp_;
  struct reset {
    reset() {
      nnp_shutdown();
      unsetenv("NNPLUG_PLUGIN_PATH");
    }
    ~reset() {
      nnp_shutdown();
      unsetenv("NNPLUG_PLUGIN_PATH");
    }
  } reset_;  // destroyed before tmp_: the library lets go of the files before they go
  fs::path& dir;
  explicit scratch(const std::string& tag) : tmp_(tag), dir(tmp_.dir) {}
  fs::path folder(const std::string& name) const { return tmp_.folder(name); }
};

// The end of the loadable segment that starts last in an ELF file of the host's class, and
// the offset of its section header table.
struct elf_layout {
  uint64_t last_load_offset = 0, last_load_filesz = 0, shoff = 0, max_load_end = 0;
};

elf_layout layout_of(const std::vector<char>& bytes) {
  elf_layout l;
  ElfW(Ehdr) eh;
  REQUIRE(bytes.size() >= sizeof eh);
  std::memcpy(&eh, bytes.data(), sizeof eh);
  l.shoff = eh.e_shoff;
  for (size_t i = 0; i < eh.e_phnum; ++i) {
    ElfW(Phdr) ph;
    REQUIRE(eh.e_phoff + (i + 1) * sizeof ph <= bytes.size());
    std::memcpy(&ph, bytes.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_type != PT_LOAD || ph.p_filesz == 0) continue;
    if (ph.p_offset >= l.last_load_offset) {
      l.last_load_offset = ph.p_offset;
      l.last_load_filesz = ph.p_filesz;
    }
    l.max_load_end = std::max<uint64_t>(l.max_load_end, ph.p_offset + ph.p_filesz);
  }
  REQUIRE(l.last_load_filesz > 0);
  return l;
}

// Loads `path` explicitly and checks the FAILED record and the caller's message.
void check_refused(const fs::path& path, const std::vector<std::string>& words) {
  CAPTURE(path);
  CHECK(nnp_load_plugin(path.string().c_str(), nullptr) == NNP_STATUS_LOAD_FAILED);
  const std::string message = nnp_last_error_message();
  const rec r = record_of(path);
  CAPTURE(r.reason);
  CHECK(r.state == NNP_LOAD_FAILED);
  CHECK(r.status == NNP_STATUS_LOAD_FAILED);
  for (const std::string& w : words) {
    CHECK(nnp_test::contains(r.reason, w));
    CHECK(nnp_test::contains(message, w));
  }
}

// Redirects this process's stderr (fd 2) into a file while alive; text() reads it.
struct stderr_capture {
  fs::path file;
  int saved = -1;
  explicit stderr_capture(fs::path f) : file(std::move(f)) {
    std::fflush(stderr);
    saved = dup(2);
    const int fd = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    dup2(fd, 2);
    close(fd);
  }
  std::string text() {
    restore();
    const std::vector<char> b = read_bytes(file);
    return std::string(b.begin(), b.end());
  }
  void restore() {
    if (saved < 0) return;
    std::fflush(stderr);
    dup2(saved, 2);
    close(saved);
    saved = -1;
  }
  ~stderr_capture() { restore(); }
};

}  // namespace

TEST_CASE("plugin files: a FIFO named like a plugin is refused unopened; discovery completes") {
  if (!have_fixtures()) return;
  scratch s("fifo");
  const fs::path dir = s.folder("plugins");
  const fs::path fifo = dir / "libnnplug-fx_fifo.so";
  REQUIRE(mkfifo(fifo.c_str(), 0644) == 0);
  fs::copy_file(fixture("ok"), dir / "libnnplug-fx_ok.so");
  REQUIRE(setenv("NNPLUG_PLUGIN_PATH", dir.c_str(), 1) == 0);

  // A watchdog: should anything open the FIFO for reading (and block there, as dlopen does),
  // it opens the write end and closes it, so a regression fails this case instead of hanging.
  std::atomic<bool> done{false}, reader_seen{false};
  std::thread watchdog([&] {
    while (!done) {
      const int fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0) {
        reader_seen = true;
        close(fd);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  const nnp_status st = nnp_load_default_plugins();
  const nnp_status explicit_st = nnp_load_plugin(fifo.c_str(), nullptr);
  const std::string explicit_message = nnp_last_error_message();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  done = true;
  watchdog.join();

  CHECK(st == NNP_STATUS_OK);
  CHECK_FALSE(reader_seen);  // nobody opened the FIFO
  CHECK(seconds < 10.0);
  const std::vector<rec> rs = records();
  nnp_test::check_failed(rs, "fx_fifo", NNP_STATUS_LOAD_FAILED, "not a regular file: a FIFO");
  nnp_test::check_loaded(rs, "fx_ok");  // the next candidate of the folder still loads
  CHECK(explicit_st == NNP_STATUS_LOAD_FAILED);
  CHECK(nnp_test::contains(explicit_message, "not a regular file: a FIFO"));
  CHECK(nnp_test::contains(explicit_message, fifo.string()));
}

TEST_CASE("plugin files: a truncated copy of a plugin is FAILED, and the process survives") {
  if (!have_fixtures()) return;
  scratch s("trunc");
  const fs::path dir = s.folder("plugins");
  const std::vector<char> whole = read_bytes(fixture("ok"));
  const elf_layout l = layout_of(whole);

  // Cut in the middle of the last loadable segment: dlopen maps it past the end of the file
  // and dies with SIGBUS when it touches that page.
  const size_t cut = static_cast<size_t>(l.last_load_offset + l.last_load_filesz / 2);
  const fs::path mid = dir / "libnnplug-fx_cut_segment.so";
  write_bytes(mid, std::vector<char>(whole.begin(), whole.begin() + static_cast<long>(cut)));
  check_refused(mid, {"refused before dlopen", "truncated", "loadable segment",
                      "but the file has " + std::to_string(cut) + " bytes"});

  // Cut inside the section header table only (every segment is whole): dlopen would accept
  // it, but a copy cut short is refused all the same.
  if (l.shoff >= l.max_load_end && l.shoff + 8 < whole.size()) {
    const size_t cut2 = static_cast<size_t>(l.shoff + 8);
    const fs::path tail = dir / "libnnplug-fx_cut_sections.so";
    write_bytes(tail, std::vector<char>(whole.begin(), whole.begin() + static_cast<long>(cut2)));
    check_refused(tail, {"truncated: the section header table"});
  }
  // An empty file and a cut ELF header.
  const fs::path empty = dir / "libnnplug-fx_empty.so";
  write_bytes(empty, {});
  check_refused(empty, {"not an ELF file", "0 bytes"});
  const fs::path header = dir / "libnnplug-fx_cut_header.so";
  write_bytes(header, std::vector<char>(whole.begin(), whole.begin() + 20));
  check_refused(header, {"truncated", "20 bytes"});

  // Default discovery over the same folder: every one FAILED, none kills the process.
  REQUIRE(nnp_shutdown() == NNP_STATUS_OK);
  REQUIRE(setenv("NNPLUG_PLUGIN_PATH", dir.c_str(), 1) == 0);
  CHECK(nnp_load_default_plugins() == NNP_STATUS_OK);
  int failed = 0;
  for (const rec& r : records())
    if (r.path.rfind(dir.string(), 0) == 0) {
      CAPTURE(r.path);
      CHECK(r.state == NNP_LOAD_FAILED);
      ++failed;
    }
  CHECK(failed >= 3);
}

TEST_CASE("plugin files: not ELF, or ELF of another class, byte order, machine or type") {
  if (!have_fixtures()) return;
  scratch s("elf");
  const fs::path dir = s.folder("plugins");
  const std::vector<char> whole = read_bytes(fixture("ok"));

  const fs::path text = dir / "libnnplug-fx_text.so";
  write_bytes(text, std::vector<char>(4096, 'x'));
  check_refused(text, {"refused before dlopen", "not an ELF file (no ELF magic number)"});

  std::vector<char> other_class = whole;
  other_class[EI_CLASS] = __ELF_NATIVE_CLASS == 64 ? ELFCLASS32 : ELFCLASS64;
  const fs::path cls = dir / "libnnplug-fx_other_class.so";
  write_bytes(cls, other_class);
  check_refused(cls, {"ELF class", "does not match the host's"});

  std::vector<char> other_order = whole;
  other_order[EI_DATA] = other_order[EI_DATA] == ELFDATA2LSB ? ELFDATA2MSB : ELFDATA2LSB;
  const fs::path order = dir / "libnnplug-fx_other_order.so";
  write_bytes(order, other_order);
  check_refused(order, {"ELF byte order", "does not match the host's"});

  ElfW(Ehdr) eh;
  std::memcpy(&eh, whole.data(), sizeof eh);
  std::vector<char> other_machine = whole;
  eh.e_machine = eh.e_machine == EM_X86_64 ? EM_AARCH64 : EM_X86_64;
  std::memcpy(other_machine.data(), &eh, sizeof eh);
  const fs::path machine = dir / "libnnplug-fx_other_machine.so";
  write_bytes(machine, other_machine);
  check_refused(machine, {"ELF machine", "does not match the host's"});

  std::memcpy(&eh, whole.data(), sizeof eh);
  eh.e_type = ET_EXEC;
  std::vector<char> executable = whole;
  std::memcpy(executable.data(), &eh, sizeof eh);
  const fs::path exec = dir / "libnnplug-fx_executable.so";
  write_bytes(exec, executable);
  check_refused(exec, {"is not a shared object (ET_DYN)"});

  // A copy of the fixture itself passes every check.
  const fs::path good = dir / "libnnplug-fx_ok.so";
  fs::copy_file(fixture("ok"), good);
  CHECK(nnp_load_plugin(good.c_str(), nullptr) == NNP_STATUS_OK);
  CHECK(record_of(good).state == NNP_LOAD_LOADED);
}

TEST_CASE("plugin files: a plugin file or folder writable by others is refused") {
  if (!have_fixtures()) return;
  scratch s("perm");
  // A file writable by others, in a folder that is not.
  const fs::path safe = s.folder("safe");
  const fs::path open_file = safe / "libnnplug-fx_ok.so";
  fs::copy_file(fixture("ok"), open_file);
  fs::permissions(open_file, fs::perms(0666));
  check_refused(open_file, {"refused before dlopen", "writable by others (mode 0666)"});

  // A file that is not, in a folder writable by others: with and without the sticky bit.
  const struct {
    const char* folder;
    unsigned mode;
  } open_folders[] = {{"open", 0777u}, {"open_sticky", 01777u}};
  for (const auto& open_folder : open_folders) {
    const char* folder = open_folder.folder;
    const unsigned mode = open_folder.mode;  // a plain variable: CAPTURE takes it in a lambda
    CAPTURE(mode);
    const fs::path open_dir = s.folder(folder);
    const fs::path file = open_dir / "libnnplug-fx_ok.so";
    fs::copy_file(fixture("ok"), file);
    fs::permissions(open_dir, fs::perms(mode));
    char mode_text[16];
    std::snprintf(mode_text, sizeof mode_text, "(mode %04o)", mode);
    check_refused(file, {"refused", "folder '" + open_dir.string() + "'",
                         std::string("writable by others ") + mode_text});
  }

  // A symlink in a safe folder to a plugin in an open folder: the target's folder counts.
  const fs::path link = safe / "libnnplug-fx_zero_devices.so";
  const fs::path target = s.dir / "open" / "libnnplug-fx_zero_devices.so";  // mode 0777
  fs::copy_file(fixture("zero_devices"), target);
  fs::create_symlink(target, link);
  check_refused(link, {"folder '" + (s.dir / "open").string() + "'", "writable by others"});

  // Default discovery of a folder writable by others: its candidates are FAILED records.
  REQUIRE(nnp_shutdown() == NNP_STATUS_OK);
  REQUIRE(setenv("NNPLUG_PLUGIN_PATH", (s.dir / "open").c_str(), 1) == 0);
  CHECK(nnp_load_default_plugins() == NNP_STATUS_OK);
  const rec r = record_of(s.dir / "open" / "libnnplug-fx_ok.so");
  CAPTURE(r.reason);
  CHECK(r.state == NNP_LOAD_FAILED);
  CHECK(nnp_test::contains(r.reason, "writable by others"));
  nnp_device* dev = nullptr;
  CHECK(nnp_get_device("fx_ok", &dev) == NNP_STATUS_NOT_FOUND);

  // The control: the same file with mode 0755 in a 0755 folder loads.
  REQUIRE(nnp_shutdown() == NNP_STATUS_OK);
  unsetenv("NNPLUG_PLUGIN_PATH");
  fs::permissions(open_file, fs::perms(0755));
  CHECK(nnp_load_plugin(open_file.c_str(), nullptr) == NNP_STATUS_OK);
}

TEST_CASE("discovery: a plugin shadowed by an earlier folder is a DUPLICATE and a warning") {
  if (!have_fixtures()) return;
  scratch s("shadow");
  const fs::path first = s.folder("first"), second = s.folder("second");
  fs::copy_file(fixture("ok"), first / "libnnplug-fx_ok.so");
  fs::copy_file(fixture("ok"), second / "libnnplug-fx_ok.so");
  REQUIRE(setenv("NNPLUG_PLUGIN_PATH", (first.string() + ":" + second.string()).c_str(), 1) == 0);
  stderr_capture err(s.dir / "stderr.txt");
  CHECK(nnp_load_default_plugins() == NNP_STATUS_OK);
  const std::string printed = err.text();

  const rec loaded = record_of(first / "libnnplug-fx_ok.so");
  CHECK(loaded.state == NNP_LOAD_LOADED);
  const rec shadowed = record_of(second / "libnnplug-fx_ok.so");
  CAPTURE(shadowed.reason);
  CHECK(shadowed.state == NNP_LOAD_DUPLICATE);
  CHECK(shadowed.status == NNP_STATUS_OK);
  CHECK(nnp_test::contains(shadowed.reason, "shadowed"));
  CHECK(nnp_test::contains(shadowed.reason, (first / "libnnplug-fx_ok.so").string()));
  // Printed at warning level (NNPLUG_LOG's default) in default discovery.
  const char* log = std::getenv("NNPLUG_LOG");
  if (log == nullptr || *log == '\0' || std::strcmp(log, "warning") == 0) {
    CAPTURE(printed);
    CHECK(nnp_test::contains(printed, "nnplug warning: load " +
                                          (second / "libnnplug-fx_ok.so").string() +
                                          ": DUPLICATE (ok): shadowed"));
  } else {
    MESSAGE("NNPLUG_LOG=" << log << ": the printed warning is not checked");
  }
}
