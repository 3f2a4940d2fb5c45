"""python -m nnplug — what this nnplug is made of: the versions (libnnplug, the ABI of the
bindings, the Python package), the path libnnplug was loaded from, every plugin load record
(path, name, version, ABI, state, status, reason, devices) and every device with its
properties; the Python counterpart of examples/c/hello.c's listing.

Exit status 0, or 1 with the reason on stderr when libnnplug cannot be loaded or listed.
"""
import argparse
import os
import sys
from typing import Any, List, Optional

import nnplug
from nnplug import _abi

GiB = 1024.0 ** 3


def package_version() -> Optional[str]:
    """The installed distribution's version when this package is the one it installed (pip
    install .), else None (a source tree or a `cmake --install` tree)."""
    try:
        from importlib import metadata
        dist = metadata.distribution("nnplug")
        here = os.path.realpath(os.path.join(os.path.dirname(__file__), "__init__.py"))
        if os.path.realpath(str(dist.locate_file("nnplug/__init__.py"))) == here:
            return dist.version
    except Exception:  # noqa: BLE001 — no metadata: not installed by pip
        pass
    return None


def enum_name(enum: Any, value: int) -> str:
    try:
        return enum(value).name
    except ValueError:
        return str(value)


def main(argv: Optional[List[str]] = None) -> int:
    argparse.ArgumentParser(
        prog="python -m nnplug",
        description="Prints the versions, libnnplug's path, the plugin load records and the "
                    "devices with their properties.").parse_args(argv)
    try:
        path = nnplug.lib_path()
        version = nnplug.version()
        numeric = ".".join(str(v) for v in nnplug.get_version())
        records = nnplug.load_records()
        devices = nnplug.devices()
    except (OSError, nnplug.Error) as e:
        print(f"python -m nnplug: cannot load libnnplug or its plugins: {e}", file=sys.stderr)
        return 1

    shown = version if version == numeric else f"{version} ({numeric})"
    print(f"libnnplug {shown}: {os.path.realpath(path)}")
    pkg = package_version()
    print(f"ABI {_abi.ABI_VERSION_MAJOR}.{_abi.ABI_VERSION_MINOR} (the Python bindings'); "
          f"Python package {pkg if pkg else '(not pip-installed)'} at "
          f"{os.path.dirname(os.path.abspath(nnplug.__file__))}")

    print(f"{len(records)} plugin candidate(s):")
    for r in records:
        print(f"  {r.name or '?':<10} {r.state.name.lower():<9} {r.n_devices} device(s)  "
              f"version {r.plugin_version or '-'}  ABI {r.abi_version_major}."
              f"{r.abi_version_minor}  status {r.status.name}")
        print(f"             {r.path}")
        if r.reason:
            print(f"             {r.reason}")

    print(f"{len(devices)} device(s):")
    for d in devices:
        print(f"  {d.name:<12} {d.description}")
        print(f"               plugin {d.plugin_name}, device type "
              f"{enum_name(_abi.DLDeviceType, d.device_type)}, device id {d.device_id}, "
              f"DLDevice {enum_name(_abi.DLDeviceType, d.dldevice[0])}:{d.dldevice[1]}, "
              f"{d.memory_bytes / GiB:.1f} GiB, {d.num_threads} thread(s)/SMs, "
              f"auto priority {d.auto_priority}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # python -m nnplug | head: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
