/*
 * idx.h — the Fashion-MNIST reader of train: the IDX files (gzip-compressed or plain, read
 * through zlib) of one split, checked and scaled to float pixels in [0, 1]. Plain C11.
 */
#ifndef NNPLUG_EXAMPLES_TRAIN_IDX_H
#define NNPLUG_EXAMPLES_TRAIN_IDX_H

#include <stddef.h>
#include <stdint.h>

#define IMAGE_SIDE 28
#define IMAGE_PIXELS (IMAGE_SIDE * IMAGE_SIDE)
#define NUM_CLASSES 10

typedef struct dataset {
  size_t n;
  float* images;   /* host, [n, 784] in [0, 1] */
  uint8_t* labels; /* host, [n] */
} dataset;

/* Reads <dir>/<split>-images-idx3-ubyte.gz and <dir>/<split>-labels-idx1-ubyte.gz ("train" or
   "t10k"), keeps the first `limit` items (0 = all) and returns them; dies with a message naming
   the file on any problem (missing, truncated, wrong magic or size, label out of range). The
   caller frees images and labels. */
dataset load_split(const char* dir, const char* split, long limit);

#endif /* NNPLUG_EXAMPLES_TRAIN_IDX_H */
