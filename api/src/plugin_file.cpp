// The checks libnnplug makes on a candidate plugin file before dlopen sees it (loader.cpp,
// docs/security.md): dlopen blocks forever on a FIFO and dies with SIGBUS when a loadable
// segment lies beyond the end of a truncated file, and it would run the code of a file that
// anyone may replace. Each check names what it found; "" means the file may be opened.
#include "internal.hpp"

#include <elf.h>
#include <fcntl.h>
#include <link.h>  // ElfW: the ELF types of the host's class
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace nnp::host {
namespace {

// ---- the host's ELF identity -------------------------------------------------------------
constexpr unsigned char kHostClass = __ELF_NATIVE_CLASS == 64 ? ELFCLASS64 : ELFCLASS32;
constexpr unsigned char kHostData =
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
// 0: an architecture this list does not know; the machine is then not checked (dlopen still
// refuses a foreign machine, with its own message).
constexpr int kHostMachine =
#if defined(__x86_64__)
    EM_X86_64;
#elif defined(__i386__)
    EM_386;
#elif defined(__aarch64__)
    EM_AARCH64;
#elif defined(__arm__)
    EM_ARM;
#elif defined(__powerpc64__)
    EM_PPC64;
#elif defined(__powerpc__)
    EM_PPC;
#elif defined(__s390__)
    EM_S390;
#elif defined(__riscv)
    EM_RISCV;
#elif defined(__loongarch__)
    EM_LOONGARCH;
#else
    0;
#endif

std::string class_name(unsigned char c) {
  if (c == ELFCLASS32) return "32-bit";
  if (c == ELFCLASS64) return "64-bit";
  return "class " + std::to_string(c);
}

std::string data_name(unsigned char d) {
  if (d == ELFDATA2LSB) return "little-endian";
  if (d == ELFDATA2MSB) return "big-endian";
  return "byte order " + std::to_string(d);
}

std::string machine_name(int m) {
  switch (m) {
    case EM_X86_64:
      return "x86-64";
    case EM_386:
      return "i386";
    case EM_AARCH64:
      return "AArch64";
    case EM_ARM:
      return "ARM";
    case EM_PPC64:
      return "PowerPC64";
    case EM_PPC:
      return "PowerPC";
    case EM_S390:
      return "S/390";
    case EM_RISCV:
      return "RISC-V";
    case EM_LOONGARCH:
      return "LoongArch";
    default:
      return "machine " + std::to_string(m);
  }
}

std::string mode_string(mode_t mode) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// What a non-regular file is, for the message.
const char* file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

struct fd_closer {
  int fd;
  ~fd_closer() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads exactly n bytes at offset; false on a short read or an error.
bool read_at(int fd, void* buf, size_t n, uint64_t offset) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    const ssize_t got = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return true;
}

// "" if the table [offset, offset + count * entry) lies inside a file of `size` bytes.
std::string check_range(const char* what, uint64_t offset, uint64_t count, uint64_t entry,
                        uint64_t size) {
  if (offset <= size && count <= (size - offset) / entry) return "";
  const bool fits_u64 = count <= UINT64_MAX / entry && offset <= UINT64_MAX - count * entry;
  return std::string("truncated: ") + what +
         (fits_u64 ? " ends at byte " + std::to_string(offset + count * entry) : std::string()) +
         " (" + std::to_string(count) + " entries of " + std::to_string(entry) +
         " bytes at offset " + std::to_string(offset) + ") but the file has " +
         std::to_string(size) + " bytes";
}

// The ELF checks on an open regular file of `size` bytes.
std::string check_elf(int fd, uint64_t size) {
  using Ehdr = ElfW(Ehdr);
  using Phdr = ElfW(Phdr);
  using Shdr = ElfW(Shdr);
  unsigned char ident[EI_NIDENT] = {};
  if (size < EI_NIDENT || !read_at(fd, ident, EI_NIDENT, 0))
    return "not an ELF file: " + std::to_string(size) + " bytes, too short for an ELF header";
  if (std::memcmp(ident, ELFMAG, SELFMAG) != 0) return "not an ELF file (no ELF magic number)";
  if (ident[EI_CLASS] != kHostClass)
    return "ELF class " + class_name(ident[EI_CLASS]) + " does not match the host's " +
           class_name(kHostClass);
  if (ident[EI_DATA] != kHostData)
    return "ELF byte order " + data_name(ident[EI_DATA]) + " does not match the host's " +
           data_name(kHostData);
  Ehdr eh{};
  if (size < sizeof(Ehdr) || !read_at(fd, &eh, sizeof eh, 0))
    return "truncated: " + std::to_string(size) + " bytes, too short for an ELF header (" +
           std::to_string(sizeof(Ehdr)) + " bytes)";
  if (kHostMachine != 0 && eh.e_machine != kHostMachine)
    return "ELF machine " + machine_name(eh.e_machine) + " does not match the host's " +
           machine_name(kHostMachine);
  if (eh.e_type != ET_DYN)
    return "ELF type " + std::to_string(eh.e_type) + " is not a shared object (ET_DYN)";

  // With PN_XNUM or more program headers, e_phnum is PN_XNUM and section 0's sh_info holds
  // the count; with SHN_LORESERVE or more sections, e_shnum is 0 and section 0's sh_size does.
  Shdr first{};
  const bool need_first = eh.e_shoff != 0 && (eh.e_phnum == PN_XNUM || eh.e_shnum == 0);
  if (eh.e_shoff != 0 && eh.e_shentsize != sizeof(Shdr))
    return "ELF section header size " + std::to_string(eh.e_shentsize) + " is not " +
           std::to_string(sizeof(Shdr));
  if (need_first) {
    std::string r = check_range("the section header table", eh.e_shoff, 1, sizeof(Shdr), size);
    if (!r.empty()) return r;
    if (!read_at(fd, &first, sizeof first, eh.e_shoff))
      return "cannot read the first section header";
  }

  // The program headers, and every loadable segment inside the file: dlopen maps them, and a
  // page of a mapping beyond the end of the file faults with SIGBUS when touched.
  const uint64_t n_segments = eh.e_phnum == PN_XNUM && need_first ? first.sh_info : eh.e_phnum;
  if (n_segments == 0) return "ELF file has no program headers";
  if (eh.e_phentsize != sizeof(Phdr))
    return "ELF program header size " + std::to_string(eh.e_phentsize) + " is not " +
           std::to_string(sizeof(Phdr));
  std::string r =
      check_range("the program header table", eh.e_phoff, n_segments, sizeof(Phdr), size);
  if (!r.empty()) return r;
  std::vector<Phdr> ph(static_cast<size_t>(n_segments));  // inside the file: bounded
  if (!read_at(fd, ph.data(), ph.size() * sizeof(Phdr), eh.e_phoff))
    return "cannot read the program header table";
  for (size_t i = 0; i < ph.size(); ++i) {
    if (ph[i].p_type != PT_LOAD) continue;
    const uint64_t off = ph[i].p_offset, len = ph[i].p_filesz;
    if (off > size || len > size - off)
      return "truncated: loadable segment " + std::to_string(i) + " (PT_LOAD) ends at byte " +
             std::to_string(off + len) + " (offset " + std::to_string(off) + " + " +
             std::to_string(len) + " bytes) but the file has " + std::to_string(size) + " bytes";
  }

  // The section header table (not needed to load, but the first thing a cut-off copy loses).
  if (eh.e_shoff != 0) {
    const uint64_t n_sections = eh.e_shnum == 0 ? first.sh_size : eh.e_shnum;
    r = check_range("the section header table", eh.e_shoff, n_sections, sizeof(Shdr), size);
    if (!r.empty()) return r;
  }
  return "";
}

}  // namespace

std::string check_plugin_folder(const std::string& folder) {
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0)
    return "cannot stat its folder '" + folder + "': " + std::strerror(errno);
  if ((st.st_mode & S_IWOTH) != 0)
    return "its folder '" + folder + "' is writable by others (mode " + mode_string(st.st_mode) +
           "); plugins are not loaded from such a folder";
  return "";
}

std::string check_plugin_file(const std::string& path) {
  // stat first: a FIFO, socket or device is refused without being opened (opening a device
  // may act on it). The open below is O_NONBLOCK all the same, in case the file was replaced
  // by a FIFO in between, and fstat decides on what was actually opened.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::string("cannot stat: ") + std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return std::string("not a regular file: ") + file_type_name(st.st_mode);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return std::string("cannot open for reading: ") + std::strerror(errno);
  fd_closer closer{fd};
  if (::fstat(fd, &st) != 0) return std::string("cannot stat: ") + std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return std::string("not a regular file: ") + file_type_name(st.st_mode);
  if ((st.st_mode & S_IWOTH) != 0)
    return "the file is writable by others (mode " + mode_string(st.st_mode) +
           "); such a plugin is not loaded";
  return check_elf(fd, static_cast<uint64_t>(st.st_size));
}

}  // namespace nnp::host
