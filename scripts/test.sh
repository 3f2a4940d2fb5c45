#!/usr/bin/env bash
# Builds and runs every nnplug test on a fresh Debian machine (the README's test command).
#  1. installs dependencies (scripts/install-deps.sh)
#  2. Release build (CUDA backend too when nvcc is present) + ctest: API/ABI tests, the
#     conformance suite on every backend (CI case lists), Python tests, training parity
#  3. Python package: the wheel, repaired by auditwheel into a manylinux wheel that bundles
#     OpenBLAS and oneTBB, installed into a fresh virtual environment, then the installed
#     package alone: its files, RUNPATHs and ldd, its bundled libnnplug and plugins,
#     `python -m nnplug`, a smoke test, the Python examples (scripts/python-package-test.sh;
#     needs PyPI; docs/install.md)
#  4. AddressSanitizer + UndefinedBehaviorSanitizer build of all non-CUDA code (clang with
#     libFuzzer's coverage where it has its runtime, else g++; -O1) + ctest; built without MPI
#     (NNPLUG_WITH_MPI=OFF): the build and every test but the MPI ones pass on a machine
#     without it
#  5. fuzzing: the libFuzzer target of that tree, the corpus and regression inputs replayed,
#     then a bounded run of one op call per input on the reference and cpu devices, compared
#     (scripts/fuzz.sh, docs/fuzzing.md; skipped without clang/libFuzzer)
#  6. ThreadSanitizer build of libnnplug, the reference, cpu and sim plugins and the thread
#     stress test only (NNPLUG_TSAN) + the stress tests (label "stress"; api/tests/tsan.supp)
#  7. `cmake --install` into build/_install, then consumers of the install tree alone: a C
#     program built with pkg-config (nnplug.pc; DLPack's header from the install tree) and
#     the template plugins and programs built with find_package(nnplug), run on the installed
#     plugins (scripts/consumer-test.sh; docs/install.md)
# Prints the slowest tests of each CTest run with their timeouts (scripts/ctest-times.py), each
# phase's time and the total. Environment: NNPLUG_JOBS (build parallelism, default nproc),
# NNPLUG_SKIP_ASAN=1 / NNPLUG_SKIP_FUZZ=1 / NNPLUG_SKIP_TSAN=1 to skip step 4 / 5 / 6 (local
# iteration only; CI runs everything).
set -euo pipefail
start=$(date +%s)
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=${NNPLUG_JOBS:-$(nproc)}
# phase NAME: ends the running phase (its time goes into the summary) and starts NAME.
phase_names=()
phase_seconds=()
phase_start=$start
phase() {
  local now
  now=$(date +%s)
  if ((${#phase_names[@]})); then phase_seconds+=($((now - phase_start))); fi
  phase_start=$now
  if (($#)); then
    phase_names+=("$*")
    echo
    echo "=== $* ($((now - start)) s)"
  fi
}

phase "dependencies"
scripts/install-deps.sh

phase "release build"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"
phase "release tests"
ctest --test-dir build --output-on-failure -j"$jobs" --timeout 900 \
  --output-junit "$root/build/ctest-junit.xml"
scripts/ctest-times.py build "$root/build/ctest-junit.xml" --default-timeout 900

phase "Python package (manylinux wheel)"
NNPLUG_JOBS=$jobs scripts/python-package-test.sh

# The sanitizer tree, built at -O1 (the level AddressSanitizer's documentation suggests) with
# line tables only (a file and line in every report): the build is the longest phase, and this
# is about a third of the compile time of g++ -O2 -g. With clang and its libFuzzer runtime
# (Debian's clang and libclang-rt-dev) the tree is clang's and holds the fuzz target too
# (NNPLUG_FUZZ=ON, which implies the sanitizers), so the fuzz phase needs no build of its own;
# without libFuzzer's coverage in the libraries (NNPLUG_FUZZ_COVERAGE=OFF), which would make
# the tests 3 times slower, the bounded run is guided by the target's code alone (long runs use
# scripts/fuzz.sh's own, fully instrumented build-fuzz/). Without clang: g++, and no fuzzing.
asan_tree=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DNNPLUG_SANITIZE=ON -DNNPLUG_WITH_MPI=OFF)
if scripts/fuzz.sh --check; then
  fuzz_tree=1
  asan_tree+=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DNNPLUG_FUZZ=ON
              -DNNPLUG_FUZZ_COVERAGE=OFF "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG"
              "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG")
else
  fuzz_tree=0
  asan_tree+=("-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
              "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
fi
if [[ "${NNPLUG_SKIP_ASAN:-0}" != "1" ]]; then
  phase "ASan+UBSan build (no CUDA)"
  cmake -S . -B build-asan "${asan_tree[@]}"
  cmake --build build-asan -j"$jobs"
  phase "ASan+UBSan tests"
  # Python loads libnnplug into an uninstrumented interpreter: those tests run in the release
  # build only (label "python"), as does the benchmark script's run (label "slow"); the training
  # comparisons run a few small steps here (examples/c/CMakeLists.txt); the fuzz phase replays
  # the fuzz inputs (label "fuzz"). allocator_may_return_null: the out-of-memory tests ask for
  # absurd sizes and check for NNP_STATUS_OUT_OF_MEMORY.
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs" --timeout 900 \
    -LE "python|slow|fuzz" --output-junit "$root/build-asan/ctest-junit.xml"
  scripts/ctest-times.py build-asan "$root/build-asan/ctest-junit.xml" --default-timeout 900
fi

if [[ "${NNPLUG_SKIP_FUZZ:-0}" != "1" ]]; then
  phase "fuzz: reference vs cpu under ASan+UBSan (libFuzzer, bounded run)"
  if ((fuzz_tree)) && [[ "${NNPLUG_SKIP_ASAN:-0}" != "1" ]]; then
    # 60 000 inputs: the first 60 000 of fuzz.sh's default run (the same seed), about 85 s
    NNPLUG_JOBS=$jobs scripts/fuzz.sh --build-dir build-asan --runs 60000
  else
    NNPLUG_JOBS=$jobs scripts/fuzz.sh
  fi
fi

if [[ "${NNPLUG_SKIP_TSAN:-0}" != "1" ]]; then
  phase "ThreadSanitizer build (libnnplug, host plugins, stress test)"
  cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNNPLUG_TSAN=ON \
    -DNNPLUG_BUILD_CONFORMANCE=OFF -DNNPLUG_BUILD_EXAMPLES=OFF \
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
  cmake --build build-tsan -j"$jobs" \
    --target nnplug nnplug-reference nnplug-cpu nnplug-sim nnplug_stress
  phase "ThreadSanitizer stress tests"
  ctest --test-dir build-tsan --output-on-failure --timeout 600 -L stress \
    --output-junit "$root/build-tsan/ctest-junit.xml"
  scripts/ctest-times.py build-tsan "$root/build-tsan/ctest-junit.xml" --default-timeout 600
fi

phase "install + consumer"
rm -rf build/_install
cmake --install build --prefix build/_install >/dev/null
scripts/consumer-test.sh build/_install

phase
elapsed=$(($(date +%s) - start))
echo
echo "nnplug tests: phase times"
for i in "${!phase_names[@]}"; do
  printf '  %5d s  %s\n' "${phase_seconds[$i]}" "${phase_names[$i]}"
done
echo "nnplug tests: all passed in ${elapsed} s ($((elapsed / 60)) min $((elapsed % 60)) s)"
