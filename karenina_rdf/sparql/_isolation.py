"""No network for the threads that evaluate the endpoint's queries and updates.

pyoxigraph evaluates ``SERVICE`` and ``LOAD`` itself, over HTTP, on the thread that runs the
query, and has no switch to turn federation off. A scan of the query text cannot be trusted to
find every way of writing them (issue 17 found ``SERVICE:sparql`` after ``PREFIX :`` read as the
keyword and a prefixed name). So the threads that evaluate what a client sent are put under a
seccomp filter that refuses to create IPv4 and IPv6 sockets: whatever the text says, the engine
cannot open a connection from there. The filter is the kernel's, set per thread (threads started
later by that thread inherit it) and for the rest of the thread's life, which is why queries that
an operator allowed to federate (``--allow-service``) run on threads of their own.

Linux on x86-64 and AArch64; elsewhere :func:`unavailable` says why and the endpoint falls back
to the text scan alone (and says so when it starts).
"""

from __future__ import annotations

import ctypes
import errno
import platform
import socket
import sys
import threading

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
# Architecture as the kernel reports it to the filter, and the number of socket(2) there.
_ARCHES = {"x86_64": (0xC000003E, 41), "aarch64": (0xC00000B7, 198)}
# BPF opcodes: load a word from the seccomp data, compare, return.
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_X32 = 0x40000000  # the x32 ABI's syscall numbers carry this bit
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (args[0]'s low word, little-endian)


class _Filter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_Filter))]


def unavailable() -> str | None:
    """Why threads cannot be kept off the network here, or None when they can."""
    if not sys.platform.startswith("linux"):
        return f"seccomp filters need Linux, not {sys.platform}"
    if platform.machine() not in _ARCHES:
        return f"no seccomp filter written for {platform.machine()}"
    return None


def _program() -> list[_Filter]:
    arch, nr_socket = _ARCHES[platform.machine()]
    refuse = _RET_ERRNO | errno.EACCES
    # Jump offsets count from the next instruction.
    return [
        _Filter(_LD_W_ABS, 0, 0, _ARCH),  # 0
        _Filter(_JEQ_K, 1, 0, arch),  # 1: another ABI (i386 compat): refuse outright
        _Filter(_RET_K, 0, 0, refuse),  # 2
        _Filter(_LD_W_ABS, 0, 0, _NR),  # 3
        _Filter(_JGE_K, 5, 0, _X32),  # 4: x32 numbers: refuse
        _Filter(_JEQ_K, 0, 3, nr_socket),  # 5: not socket(2): allow
        _Filter(_LD_W_ABS, 0, 0, _ARG0),  # 6: its domain
        _Filter(_JEQ_K, 2, 0, socket.AF_INET),  # 7
        _Filter(_JEQ_K, 1, 0, socket.AF_INET6),  # 8
        _Filter(_RET_K, 0, 0, _RET_ALLOW),  # 9
        _Filter(_RET_K, 0, 0, refuse),  # 10
    ]


_local = threading.local()


def block_network_here() -> bool:
    """Refuse IPv4/IPv6 sockets to this thread from now on (and to threads it starts); True once
    the filter holds. Idempotent. Raises ``OSError`` if the kernel refuses the filter."""
    if getattr(_local, "blocked", False):
        return True
    if unavailable() is not None:
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    prog = _program()
    array = (_Filter * len(prog))(*prog)
    fprog = _Program(len(prog), array)
    # no_new_privs first: the kernel installs a filter for an unprivileged thread only then.
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"prctl(PR_SET_NO_NEW_PRIVS): {errno.errorcode.get(code, code)}")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"prctl(PR_SET_SECCOMP): {errno.errorcode.get(code, code)}")
    _local.blocked = True
    return True


def network_blocked_here() -> bool:
    return bool(getattr(_local, "blocked", False))
