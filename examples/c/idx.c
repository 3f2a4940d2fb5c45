/*
 * idx.c — reads Fashion-MNIST's IDX files for train: gzip or plain through zlib's gzread,
 * magic and dimension checks, labels checked to be in [0, 9], pixels scaled x / 255. Plain C11.
 */
#define _POSIX_C_SOURCE 200809L
#include "idx.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zlib.h>

#include "cli.h"

static uint32_t be32(const unsigned char b[4]) {
  return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
}

/* Reads exactly `bytes` from gz or dies naming the file and what was short. */
static void gz_read_exact(gzFile gz, const char* path, void* dst, size_t bytes, const char* what) {
  size_t done = 0;
  while (done < bytes) {
    size_t chunk = bytes - done > (1u << 30) ? (1u << 30) : bytes - done;
    int got = gzread(gz, (char*)dst + done, (unsigned)chunk);
    if (got < 0) {
      int errnum = 0;
      const char* msg = gzerror(gz, &errnum);
      die("%s: cannot read %s: %s (corrupt gzip?)", path, what, msg);
    }
    if (got == 0)
      die("%s: truncated: %s needs %zu bytes, the file ends after %zu", path, what, bytes, done);
    done += (size_t)got;
  }
}

/* Reads one IDX file (gzip or plain): checks its magic (0x0801 labels, 0x0803 images) and
   dimensions; returns the payload (uint8) and the item count. */
static uint8_t* read_idx(const char* dir, const char* file, uint32_t magic, size_t* count) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path)
    die("--data path too long");
  /* Opened without blocking and checked to be a regular file before anything is read: a FIFO
     or a device under the data set's name would otherwise wait for a writer forever. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    die("cannot open %s: %s\n  Install the data set with `apt-get install "
        "dataset-fashion-mnist`, or point --data at a folder with the four *-ubyte.gz files.",
        path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) die("%s: cannot stat: %s", path, strerror(errno));
  if (!S_ISREG(st.st_mode)) die("%s: not a regular file (a FIFO, device or folder)", path);
  if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
    die("%s: fcntl: %s", path, strerror(errno));
  gzFile gz = gzdopen(fd, "rb");
  if (!gz) die("%s: gzdopen failed", path);
  unsigned char header[16];
  const int ndims = magic == 0x803 ? 3 : 1;
  gz_read_exact(gz, path, header, 4 + 4 * (size_t)ndims, "the IDX header");
  uint32_t got_magic = be32(header);
  if (got_magic != magic)
    die("%s: not an IDX %s file: magic 0x%08" PRIx32 ", expected 0x%08" PRIx32, path,
        magic == 0x803 ? "image" : "label", got_magic, magic);
  size_t n = be32(header + 4);
  if (n == 0 || n > 10000000) die("%s: implausible item count %zu", path, n);
  size_t item = 1;
  if (ndims == 3) {
    uint32_t rows = be32(header + 8), cols = be32(header + 12);
    if (rows != IMAGE_SIDE || cols != IMAGE_SIDE)
      die("%s: images are %" PRIu32 "x%" PRIu32 ", expected 28x28", path, rows, cols);
    item = IMAGE_PIXELS;
  }
  uint8_t* data = xmalloc(n * item);
  gz_read_exact(gz, path, data, n * item, ndims == 3 ? "the pixel data" : "the label data");
  gzclose(gz);
  *count = n;
  return data;
}

dataset load_split(const char* dir, const char* split, long limit) {
  char name[64];
  size_t n_images = 0, n_labels = 0;
  snprintf(name, sizeof name, "%s-images-idx3-ubyte.gz", split);
  uint8_t* pixels = read_idx(dir, name, 0x803, &n_images);
  snprintf(name, sizeof name, "%s-labels-idx1-ubyte.gz", split);
  uint8_t* labels = read_idx(dir, name, 0x801, &n_labels);
  if (n_images != n_labels) die("%s/%s: %zu images but %zu labels", dir, split, n_images, n_labels);
  for (size_t i = 0; i < n_labels; ++i)
    if (labels[i] >= NUM_CLASSES)
      die("%s/%s-labels: label %u of item %zu is not in [0, 9]", dir, split, labels[i], i);
  size_t n = n_images;
  if (limit > 0 && (size_t)limit < n) n = (size_t)limit;
  dataset d = {n, xmalloc(n * IMAGE_PIXELS * sizeof(float)), labels};
  for (size_t i = 0; i < n * IMAGE_PIXELS; ++i) d.images[i] = (float)pixels[i] / 255.0f;
  free(pixels);
  return d;
}
