"""The seccomp filter a template process (``_main``'s per-template child) puts on itself before it
runs any code it was sent: the kernel's half of what the audit hook only asks of Python.

Refused with EPERM for the rest of the process's life, whatever the code does (extension
modules and ctypes included):

* new processes when ``max_processes`` is 0: ``fork``, ``vfork``, ``clone`` without
  ``CLONE_THREAD``, ``execve``/``execveat`` (threads stay possible); ``clone3``, whose flags a
  filter cannot read, answers ENOSYS, so the C library falls back to ``clone``. ``RLIMIT_NPROC``
  cannot do this: the kernel exempts uid 0, even inside a user namespace;
* reaching other processes: ``ptrace``, ``process_vm_readv``/``writev``, ``kcmp``,
  ``pidfd_*``, ``kill``/``tgkill`` except to itself (``tkill`` never), ``prlimit64`` on another
  process;
* leaving or reshaping the namespaces: ``unshare``, ``setns``, ``mount``, ``umount2``,
  ``pivot_root``, ``chroot``;
* kernel surfaces a template never needs: ``socket`` (all families), ``bpf``, ``userfaultfd``,
  ``perf_event_open``, ``keyctl`` and friends, ``io_uring_*`` (its operations bypass seccomp),
  ``mknod``/``mknodat``, ``open_by_handle_at``, ``personality``.

Another ABI (i386, x32) is refused outright. Linux on x86-64 only: elsewhere ``unavailable()``
says why, and the sandbox does not count this layer as active.
"""

from __future__ import annotations

import errno
import os
import platform
import struct
import sys
from typing import Any

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_AUDIT_ARCH_X86_64 = 0xC000003E
_X32 = 0x40000000
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (args[0]'s low word, little-endian)
_CLONE_THREAD = 0x00010000

# x86-64 numbers.
_CLONE, _CLONE3, _FORK, _VFORK, _EXECVE, _EXECVEAT = 56, 435, 57, 58, 59, 322
_KILL, _TKILL, _TGKILL, _PRLIMIT64 = 62, 200, 234, 302
_ALWAYS_REFUSED = (
    101,  # ptrace
    310,  # process_vm_readv
    311,  # process_vm_writev
    312,  # kcmp
    434,  # pidfd_open
    424,  # pidfd_send_signal
    438,  # pidfd_getfd
    440,  # process_madvise
    272,  # unshare
    308,  # setns
    165,  # mount
    166,  # umount2
    155,  # pivot_root
    161,  # chroot
    41,  # socket
    321,  # bpf
    323,  # userfaultfd
    298,  # perf_event_open
    248,  # add_key
    249,  # request_key
    250,  # keyctl
    425,  # io_uring_setup
    426,  # io_uring_enter
    427,  # io_uring_register
    133,  # mknod
    259,  # mknodat
    304,  # open_by_handle_at
    135,  # personality
    _TKILL,
)


def unavailable() -> str | None:
    """Why this filter cannot be used here, or None when it can."""
    if not sys.platform.startswith("linux"):
        return f"seccomp filters need Linux, not {sys.platform}"
    if platform.machine() != "x86_64":
        return f"no seccomp filter written for {platform.machine()}"
    return None


def program(pid: int, max_processes: int) -> list[tuple[int, int, int, int]]:
    """The filter for process ``pid`` as (code, jt, jf, k) instructions."""
    refuse = _RET_ERRNO | errno.EPERM
    enosys = _RET_ERRNO | errno.ENOSYS
    out: list[tuple[int, int, int, int]] = [
        (_LD_W_ABS, 0, 0, _ARCH),
        (_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64),
        (_RET_K, 0, 0, refuse),
        (_LD_W_ABS, 0, 0, _NR),
        (_JGE_K, 0, 1, _X32),
        (_RET_K, 0, 0, refuse),
    ]
    refused = list(_ALWAYS_REFUSED)
    if max_processes == 0:
        refused += [_FORK, _VFORK, _EXECVE, _EXECVEAT]
    for nr in refused:
        out += [(_JEQ_K, 0, 1, nr), (_RET_K, 0, 0, refuse)]
    out += [(_JEQ_K, 0, 1, _CLONE3), (_RET_K, 0, 0, enosys)]
    # The checks below load args[0] into the accumulator: each ends in a return.
    if max_processes == 0:
        out += [
            (_JEQ_K, 0, 4, _CLONE),  # jump offsets count from the next instruction
            (_LD_W_ABS, 0, 0, _ARG0),
            (_JSET_K, 0, 1, _CLONE_THREAD),
            (_RET_K, 0, 0, _RET_ALLOW),
            (_RET_K, 0, 0, refuse),
        ]
    for nr in (_KILL, _TGKILL):
        out += [
            (_JEQ_K, 0, 4, nr),
            (_LD_W_ABS, 0, 0, _ARG0),
            (_JEQ_K, 1, 0, pid),
            (_RET_K, 0, 0, refuse),
            (_RET_K, 0, 0, _RET_ALLOW),
        ]
    out += [
        (_JEQ_K, 0, 5, _PRLIMIT64),
        (_LD_W_ABS, 0, 0, _ARG0),
        (_JEQ_K, 2, 0, 0),
        (_JEQ_K, 1, 0, pid),
        (_RET_K, 0, 0, refuse),
        (_RET_K, 0, 0, _RET_ALLOW),
        (_RET_K, 0, 0, _RET_ALLOW),  # every other call
    ]
    return out


def install(ctypes: Any, max_processes: int) -> None:
    """Put the filter on this process (all its threads must be this one). ``ctypes`` is the module,
    imported by the trusted supervisor before any untrusted code ran; raises ``OSError``."""
    instructions = program(os.getpid(), max_processes)
    blob = b"".join(struct.pack("=HBBI", *ins) for ins in instructions)
    buffer = ctypes.create_string_buffer(blob, len(blob))
    fprog = struct.pack("=HxxxxxxQ", len(instructions), ctypes.addressof(buffer))
    fprog_buffer = ctypes.create_string_buffer(fprog, len(fprog))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(code)}")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.c_void_p(ctypes.addressof(fprog_buffer)), 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"prctl(PR_SET_SECCOMP): {os.strerror(code)}")
