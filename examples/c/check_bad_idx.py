#!/usr/bin/python3
"""check_bad_idx.py — CTest helper: train must reject broken Fashion-MNIST files with a clear
message and exit status 1 (never a crash).

  check_bad_idx.py TRAIN_BINARY WORKDIR

Makes four data folders under WORKDIR from tiny synthetic IDX files: one with a truncated
image file, one with a wrong magic number, one with an out-of-range label, one whose image file
is a FIFO (no writer: train must not wait for one), and checks train's exit status and stderr
for each.
"""
import gzip
import os
import struct
import subprocess
import sys


def write_idx(path, magic, dims, payload):
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">I", magic))
        f.write(struct.pack(">" + "I" * len(dims), *dims))
        f.write(payload)


def make_dir(root, name, images_magic=0x803, truncate=0, bad_label=False):
    d = os.path.join(root, name)
    if os.path.isdir(d):  # a FIFO from the last run is replaced
        for f in os.listdir(d):
            os.remove(os.path.join(d, f))
    os.makedirs(d, exist_ok=True)
    n = 4
    for split in ("train", "t10k"):
        pixels = bytes(n * 784)
        if truncate:
            pixels = pixels[:-truncate]
        write_idx(os.path.join(d, f"{split}-images-idx3-ubyte.gz"), images_magic,
                  (n, 28, 28), pixels)
        labels = bytes([1, 2, 3, 12 if bad_label else 4])
        write_idx(os.path.join(d, f"{split}-labels-idx1-ubyte.gz"), 0x801, (n,), labels)
    return d


def main():
    train, root = sys.argv[1], sys.argv[2]
    fifo_dir = make_dir(root, "fifo")
    fifo = os.path.join(fifo_dir, "train-images-idx3-ubyte.gz")
    os.remove(fifo)
    os.mkfifo(fifo)
    cases = [
        (fifo_dir, "not a regular file"),
        (make_dir(root, "truncated", truncate=100), "truncated"),
        (make_dir(root, "bad_magic", images_magic=0x801), "not an IDX image file"),
        (make_dir(root, "bad_label", bad_label=True), "is not in [0, 9]"),
    ]
    failures = 0
    for data, expect in cases:
        r = subprocess.run([train, "--data", data, "--backend", "reference", "--epochs", "1"],
                           capture_output=True, text=True, timeout=60)
        ok = r.returncode == 1 and expect in r.stderr
        print(f"{'ok  ' if ok else 'FAIL'} {os.path.basename(data)}: exit {r.returncode}, "
              f"stderr: {r.stderr.strip()}")
        failures += not ok
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
