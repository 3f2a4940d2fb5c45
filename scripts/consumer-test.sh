#!/usr/bin/env bash
# Consumer test of an INSTALLED nnplug (`cmake --install`), outside the source and build trees:
#  1. the install tree holds dlpack/dlpack.h beside nnplug's headers and DLPack's licence
#     (share/doc/nnplug/dlpack/LICENSE);
#  2. pkg-config: nnplug.pc (PKG_CONFIG_PATH pointing into the prefix) gives the prefix, the
#     project's version, and the flags with which plugins/template/gemm_consumer.c compiles
#     (-MD: every nnplug header and dlpack.h it includes must lie under the prefix, so the build
#     needs no DLPack of the system's, e.g. Debian's libdlpack-dev) and links; the program runs
#     a GEMM on the reference and cpu devices, with the plugins libnnplug finds in the
#     install tree (pkg-config's plugindir);
#  3. CMake: plugins/template (two out-of-tree plugins, plain C and C++ with the plugin kit, the
#     smoke program, gemm_consumer) built with find_package(nnplug); the same header check on
#     its compiler depfiles; the smoke program on each plugin, the installed conformance runner
#     on each plugin, gemm_consumer as above.
# Usage: scripts/consumer-test.sh <install prefix>
set -euo pipefail
prefix=$(cd "$1" && pwd -P)
root=$(cd "$(dirname "$0")/.." && pwd)
out="$prefix/../_consumer"
rm -rf "$out"
mkdir -p "$out/pkg-config"
fail() {
  echo "consumer-test: $*" >&2
  exit 1
}
# The run-time environment of an application: no NNPLUG_* variable, no LD_LIBRARY_PATH.
while read -r var; do unset "$var"; done < <(compgen -e | grep '^NNPLUG_' || true)
unset LD_LIBRARY_PATH

# check_headers DEPFILE...: every dlpack.h and nnplug header (.h, .hpp) named in the compiler
# depfiles lies under the prefix, and dlpack.h is among them.
check_headers() {
  local deps bad
  deps=$(cat "$@" | tr -s '\\ \t' '\n' |
         grep -E '(^|/)(dlpack/dlpack\.h|nnplug/.+\.(h|hpp))$' | xargs -r realpath | sort -u)
  grep -q '/dlpack/dlpack\.h$' <<<"$deps" || fail "$*: no dlpack/dlpack.h among the headers"
  bad=$(grep -v "^$prefix/" <<<"$deps" || true)
  [[ -z "$bad" ]] || fail "$* includes headers from outside the install prefix $prefix: $bad"
}

# 1. DLPack's header and licence in the install tree
[[ -f "$prefix/include/dlpack/dlpack.h" ]] || fail "$prefix/include/dlpack/dlpack.h is missing"
grep -q "Apache License" "$prefix/share/doc/nnplug/dlpack/LICENSE" ||
  fail "$prefix/share/doc/nnplug/dlpack/LICENSE is missing or not DLPack's (Apache-2.0)"

# 2. pkg-config
pc=$(find "$prefix" -path '*/pkgconfig/nnplug.pc' | head -n 1)
[[ -n "$pc" ]] || fail "no nnplug.pc under $prefix"
export PKG_CONFIG_PATH="${pc%/*}"
version=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$(find "$prefix" \
  -path '*/cmake/nnplug/nnplugConfigVersion.cmake' | head -n 1)")
[[ "$(pkg-config --modversion nnplug)" == "$version" ]] ||
  fail "pkg-config --modversion nnplug: $(pkg-config --modversion nnplug), expected $version"
[[ "$(realpath "$(pkg-config --variable=prefix nnplug)")" == "$prefix" ]] ||
  fail "nnplug.pc's prefix $(pkg-config --variable=prefix nnplug) is not $prefix"
libdir=$(realpath "$(pkg-config --variable=libdir nnplug)")
plugindir=$(realpath "$(pkg-config --variable=plugindir nnplug)")
# shellcheck disable=SC2046 # pkg-config's output is a list of flags
cc -std=c99 -Wall -Wextra -Werror -pedantic -MD -MF "$out/pkg-config/gemm_consumer.d" \
  "$root/plugins/template/gemm_consumer.c" $(pkg-config --cflags --libs nnplug) -lm \
  -Wl,-rpath,"$libdir" -o "$out/pkg-config/gemm_consumer"
check_headers "$out/pkg-config/gemm_consumer.d"
"$out/pkg-config/gemm_consumer" "$plugindir" reference cpu
echo "consumer-test: pkg-config nnplug $version: $(pkg-config --cflags --libs nnplug)"

# 3. CMake
cmake -S "$root/plugins/template" -B "$out" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$out" -j2 >/dev/null
mapfile -t depfiles < <(find "$out/CMakeFiles" -name '*.o.d')
((${#depfiles[@]} >= 4)) || fail "CMake wrote ${#depfiles[@]} compiler depfiles, expected 4"
check_headers "${depfiles[@]}"
for name in template template_kit; do
  plugin="$out/libnnplug-$name.so"
  exported=$(nm -D --defined-only "$plugin" | awk '{print $3}' | grep -E '^nnp' || true)
  if [[ "$exported" != "nnp_plugin_get_api" ]]; then
    fail "$plugin must export only nnp_plugin_get_api, got: $exported"
  fi
  "$out/template_smoke" "$plugin" "$name"
  if [[ -x "$prefix/bin/nnplug-conformance" ]]; then
    "$prefix/bin/nnplug-conformance" --plugin "$plugin" --cases ci
  fi
done
"$out/gemm_consumer" "$plugindir" reference cpu
echo "consumer-test: OK"
