"""The machine and library versions a benchmark ran on, for its JSON results."""

from __future__ import annotations

import os
import platform
import resource
import sys
from importlib import metadata
from typing import Any

import psutil

#: Libraries whose versions every benchmark records.
DEFAULT_LIBRARIES = ("numpy", "numba", "zarr", "pyarrow", "streamlearn")


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo``, else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict[str, Any]:
    """Platform, CPU model, cores and memory of this machine."""
    affinity = getattr(os, "sched_getaffinity", None)
    return {
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "logical_cores": os.cpu_count(),
        "physical_cores": psutil.cpu_count(logical=False),
        "usable_cores": len(affinity(0)) if affinity else os.cpu_count(),
        "ram_bytes": psutil.virtual_memory().total,
        "ram_gib": round(psutil.virtual_memory().total / 2**30, 1),
        # Other work on the machine while a benchmark starts skews its timings; record it.
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def library_versions(names: tuple[str, ...] = DEFAULT_LIBRARIES) -> dict[str, str | None]:
    """Python's version and the installed version of each named distribution (None if absent)."""
    versions: dict[str, str | None] = {"python": sys.version.split()[0]}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def peak_rss_bytes() -> int:
    """Peak RSS of this process since it started.

    ``VmHWM`` from ``/proc/self/status`` is reset by ``exec``; ``ru_maxrss`` is not on Linux
    (a freshly started child inherits its parent's peak), so it is only the fallback.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
