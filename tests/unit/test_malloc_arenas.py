"""limit_arenas: the threads of a process allocate from one glibc arena (the worker's states
restored on executor threads and freed on the event loop reuse one heap)."""

from __future__ import annotations

import ctypes
import platform
import subprocess
import sys

import pytest
from streamxai.malloc_arenas import limit_arenas

GLIBC = platform.libc_ver()[0] == "glibc" and hasattr(ctypes.CDLL(None), "malloc_info")

#: a child that may limit its arenas, then lets 4 threads allocate and keep blocks of 64 KiB
#: (below glibc's mmap threshold: from an arena), and prints how many arenas malloc_info lists
CHILD = """
import ctypes, sys, tempfile, threading
from streamxai.malloc_arenas import limit_arenas
if sys.argv[1] == "limit":
    assert limit_arenas(1, environ={})
kept = []
def work():
    kept.extend(bytearray(64 * 1024) for _ in range(50))
threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
with tempfile.NamedTemporaryFile() as f:
    fp = libc.fopen(f.name.encode(), b"w")
    libc.malloc_info(0, fp)
    libc.fclose(fp)
    print(open(f.name).read().count("<heap nr="))
"""


def arenas(mode: str) -> int:
    env = {"PATH": "/usr/bin:/bin"}  # no MALLOC_ARENA_MAX of the caller's
    done = subprocess.run([sys.executable, "-c", CHILD, mode], capture_output=True, text=True, env=env, check=True)
    return int(done.stdout.strip())


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc arenas")
def test_threads_share_one_arena_once_limited():
    assert arenas("default") > 1  # threads get arenas of their own without the limit
    assert arenas("limit") == 1


def test_operator_setting_and_bad_limit():
    assert limit_arenas(2, environ={"MALLOC_ARENA_MAX": "8"}) is False
    with pytest.raises(ValueError, match="at least one arena"):
        limit_arenas(0)
