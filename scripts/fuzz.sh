#!/usr/bin/env bash
# Builds nnplug's libFuzzer target with clang (ASan + UBSan, build-fuzz/) and runs it
# (docs/fuzzing.md). Usage:
#   scripts/fuzz.sh                   the bounded run of scripts/test.sh: replays fuzz/corpus and
#                                     fuzz/regressions, then runs 100000 inputs from a fixed seed
#                                     (close to deterministic for a given commit, with the
#                                     address layout fixed: docs/fuzzing.md); new inputs go to a
#                                     temporary folder
#   scripts/fuzz.sh --runs N [--seed S]  the same with N inputs
#   scripts/fuzz.sh --time 3600 [--fork N] [--seed S] [--corpus-out DIR] [-- libFuzzer flags]
#                                     a long run; new inputs are kept in DIR
#                                     (default build-fuzz/corpus-new) for the next run
#   scripts/fuzz.sh --seeds           rewrites fuzz/corpus: the seed inputs, one per op table
#                                     example (api/ops/ops.toml) and dtype variant
#   scripts/fuzz.sh --check           exits 0 when clang++ can build a libFuzzer target with ASan
#                                     and UBSan here, 1 (with the reason) when not; builds nothing
#   scripts/fuzz.sh --build-dir DIR ...  uses DIR, a build tree already configured with
#                                     -DNNPLUG_FUZZ=ON (scripts/test.sh's sanitizer tree), instead
#                                     of configuring build-fuzz/; only the fuzz target is built
# Exits 0 with a message, doing nothing, when clang++ or its libFuzzer runtime is missing.
# A finding stops the run (a forked run goes on and collects them); the inputs and the log are
# kept in build-fuzz/findings/run.*/ (DIR/findings with --build-dir) and the script exits 1.
# Environment: NNPLUG_JOBS (build parallelism, default nproc).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
jobs=${NNPLUG_JOBS:-$(nproc)}
seconds=0
runs=100000
seed=1
fork=0
corpus_out=""
seeds=0
bdir=""
check=0
extra=()
while (($#)); do
  case "$1" in
    --time) seconds=$2; runs=-1; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --fork) fork=$2; shift 2 ;;
    --corpus-out) corpus_out=$2; shift 2 ;;
    --seeds) seeds=1; shift ;;
    --build-dir) bdir=$2; shift 2 ;;
    --check) check=1; shift ;;
    --) shift; extra=("$@"); break ;;
    *) echo "fuzz.sh: unknown argument $1 (see the header of scripts/fuzz.sh)" >&2; exit 2 ;;
  esac
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# clang++ with libFuzzer and the sanitizer runtimes (Debian: clang, libclang-rt-dev).
if ! command -v clang++ >/dev/null || ! command -v clang >/dev/null; then
  echo "fuzz: skipped: clang/clang++ not found (Debian packages clang, libclang-rt-dev)"
  exit "$check"
fi
printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' \
  >"$tmp/probe.cpp"
if ! clang++ -fsanitize=fuzzer,address,undefined "$tmp/probe.cpp" -o "$tmp/probe" 2>"$tmp/probe.log"; then
  echo "fuzz: skipped: clang++ cannot link a libFuzzer target (libFuzzer runtime missing?" \
       "Debian package libclang-rt-dev):"
  sed 's/^/  /' "$tmp/probe.log" | head -5
  exit "$check"
fi
if ((check)); then
  echo "fuzz: clang++ builds libFuzzer targets with ASan and UBSan here"
  exit 0
fi

# The fuzz build: libnnplug, the reference and cpu plugins and the target only.
if [[ -z "$bdir" ]]; then
  bdir=build-fuzz
  cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DNNPLUG_FUZZ=ON \
    -DNNPLUG_WITH_CUDA=OFF -DNNPLUG_BUILD_CONFORMANCE=OFF -DNNPLUG_BUILD_EXAMPLES=OFF \
    -DBUILD_TESTING=OFF >"$tmp/configure.log" || { cat "$tmp/configure.log"; exit 1; }
elif ! grep -q '^NNPLUG_FUZZ:BOOL=ON' "$bdir/CMakeCache.txt" 2>/dev/null; then
  echo "fuzz.sh: $bdir is not a build tree configured with -DNNPLUG_FUZZ=ON" >&2
  exit 2
fi
cmake --build "$bdir" -j"$jobs" --target nnplug-fuzz-op-execute

if ((seeds)); then
  rm -rf fuzz/corpus
  mkdir -p fuzz/corpus
  NNPLUG_FUZZ_WRITE_SEEDS=fuzz/corpus "$bdir"/bin/nnplug-fuzz-op-execute
  exit 0
fi

# New inputs go to the first folder; fuzz/corpus and fuzz/regressions are only read.
if [[ -n "$corpus_out" ]]; then
  new=$corpus_out
elif ((runs < 0)); then
  new=$bdir/corpus-new
else
  new=$tmp/new
fi
# Findings of this run: $bdir/findings/run.XXXXXX/ (kept when the run is interrupted).
mkdir -p "$new" "$bdir/findings"
artifacts=$(mktemp -d "$bdir/findings/run.XXXXXX")
flags=(-runs="$runs" -max_total_time="$seconds" -seed="$seed" -rss_limit_mb=2560 -timeout=30
       -max_len=512 -print_final_stats=1 -dict=fuzz/op_execute.dict
       -artifact_prefix="$artifacts/")
# Forked runs go on after a finding and collect them all.
if ((fork > 0)); then flags+=(-fork="$fork" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1); fi
if ((runs >= 0)); then
  # The bounded run reads fuzz/corpus and fuzz/regressions as one list in name order: libFuzzer
  # orders the inputs of folders by size only, ties in the folder's own order, which differs
  # from one file system to another; a fixed list keeps the run the same on every machine.
  find fuzz/corpus fuzz/regressions -type f ! -name '*.md' | LC_ALL=C sort | paste -sd, >"$tmp/seeds"
  read_from=(-seed_inputs=@"$tmp/seeds" "$new")
else
  read_from=("$new" fuzz/corpus fuzz/regressions)
fi
echo "fuzz: nnplug-fuzz-op-execute ${flags[*]} ${extra[*]} ${read_from[*]}"
status=0
# A bounded run without address-space randomisation where setarch can turn it off: libFuzzer
# learns values from the target's comparisons, some of them addresses, so a randomised layout
# makes two runs of the same commit mutate differently.
fixed_layout=()
if ((runs >= 0)) && setarch "$(uname -m)" -R true 2>/dev/null; then
  fixed_layout=(setarch "$(uname -m)" -R)
fi
NNPLUG_PLUGIN_PATH= NNPLUG_BACKEND= UBSAN_OPTIONS=print_stacktrace=1 \
  "${fixed_layout[@]}" "$bdir"/bin/nnplug-fuzz-op-execute "${flags[@]}" "${extra[@]}" "${read_from[@]}" \
  >"$artifacts/fuzz.log" 2>&1 || status=$?
grep -E '^(stat::|Done|INFO: (Running with|Loaded|seed|fuzzed for))|#[0-9]+:? +(INITED|DONE|cov)' \
  "$artifacts/fuzz.log" | tail -n 12 || true
if ((status != 0)) || compgen -G "$artifacts/*-*" >/dev/null; then
  tail -n 80 "$artifacts/fuzz.log"
  echo "fuzz: FAILED (libFuzzer exit status $status); inputs and log in $artifacts/:"
  ls "$artifacts"
  echo "fuzz: replay one with $bdir/bin/nnplug-fuzz-op-execute FILE (docs/fuzzing.md)"
  exit 1
fi
rm -rf "$artifacts"
echo "fuzz: no findings"
