"""glibc's mmap threshold fixed by map_large_buffers: a freed buffer of many MiB goes back
to the system instead of staying in the heap behind a later allocation."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from streamlearn.data.large_buffers import LARGE_BUFFER_BYTES, mmap_threshold_setting

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"

# In a fresh process (the threshold is per process and only rises): a 20 MiB buffer made
# and freed (the default threshold rises to its size), then another one with a small
# allocation after it, and the second one freed. Prints the RSS it kept, in MiB.
KEPT_AFTER_FREE = """
import sys
import numpy as np
from streamlearn.data.large_buffers import map_large_buffers

def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024

applied = map_large_buffers() if sys.argv[1] == "fix" else False
size = 20 << 20
first = np.ones(size // 8)
del first
before = rss_mib()
second = np.ones(size // 8)
after_it = [np.ones(64) for _ in range(1000)]
del second
print(applied, rss_mib() - before)
"""


def kept_mib(mode: str, **env: str) -> tuple[bool, float]:
    out = subprocess.run([sys.executable, "-c", KEPT_AFTER_FREE, mode], capture_output=True,
                         text=True, check=True, env={**_plain_env(), **env})
    applied, kept = out.stdout.split()
    return applied == "True", float(kept)


def _plain_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items()
            if k not in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                         "STREAMLEARN_MMAP_THRESHOLD")}


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc only")
def test_a_freed_large_buffer_leaves_the_heap_only_with_the_fixed_threshold() -> None:
    applied, kept = kept_mib("fix")
    assert applied and kept < 5.0
    # the default's rising threshold keeps the second buffer's pages: the check above
    # sees a difference that exists
    applied, kept = kept_mib("default")
    assert not applied and kept > 15.0
    # the process's own malloc setting, or the variable's 0, is left as it is
    assert kept_mib("fix", MALLOC_MMAP_THRESHOLD_=str(64 << 20))[0] is False
    assert kept_mib("fix", MALLOC_TRIM_THRESHOLD_=str(64 << 20))[0] is False
    assert kept_mib("fix", STREAMLEARN_MMAP_THRESHOLD="0") == (False, pytest.approx(20, abs=5))


def test_threshold_setting_reads_the_variables(monkeypatch) -> None:
    from streamlearn.data.dataset import DEFAULT_CHUNK_BYTES

    # a dense chunk of the default size stays in the heap, as without the setting
    assert LARGE_BUFFER_BYTES > DEFAULT_CHUNK_BYTES
    for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                 "STREAMLEARN_MMAP_THRESHOLD"):
        monkeypatch.delenv(name, raising=False)
    assert mmap_threshold_setting() == LARGE_BUFFER_BYTES
    monkeypatch.setenv("STREAMLEARN_MMAP_THRESHOLD", str(8 << 20))
    assert mmap_threshold_setting() == 8 << 20
    for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"):
        monkeypatch.setenv(name, "1000000")
        assert mmap_threshold_setting() == 0
        monkeypatch.delenv(name)
    for bad in ("16M", "-1", str(1 << 31)):
        monkeypatch.setenv("STREAMLEARN_MMAP_THRESHOLD", bad)
        with pytest.raises(ValueError, match="STREAMLEARN_MMAP_THRESHOLD"):
            mmap_threshold_setting()
