#!/usr/bin/env bash
# Consumer test: builds plugins/template (two out-of-tree plugins, plain C and C++ with the
# plugin kit, and a small program) against an INSTALLED nnplug with find_package(nnplug), runs
# the program on each plugin, and runs the installed conformance runner on each plugin.
# Usage: scripts/consumer-test.sh <install prefix>
set -euo pipefail
prefix=$(cd "$1" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
out="$prefix/../_consumer"
rm -rf "$out"
cmake -S "$root/plugins/template" -B "$out" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$out" -j2 >/dev/null
for name in template template_kit; do
  plugin="$out/libnnplug-$name.so"
  exported=$(nm -D --defined-only "$plugin" | awk '{print $3}' | grep -E '^nnp' || true)
  if [[ "$exported" != "nnp_plugin_get_api" ]]; then
    echo "consumer-test: $plugin must export only nnp_plugin_get_api, got: $exported" >&2
    exit 1
  fi
  LD_LIBRARY_PATH="$prefix/lib:${LD_LIBRARY_PATH:-}" "$out/template_smoke" "$plugin" "$name"
  if [[ -x "$prefix/bin/nnplug-conformance" ]]; then
    "$prefix/bin/nnplug-conformance" --plugin "$plugin" --cases ci
  fi
done
echo "consumer-test: OK"
