"""The sandbox's kernel layer (Linux): what confines a worker even when user code defeats every Python check.

A worker applies it to itself after its own imports and before it reads a line of user code; the kernel keeps
it for the worker's whole life and for every thread (nothing else can be started). Layers, each on its own:

- **Descriptors and privileges.** Every inherited descriptor is closed but the protocol pipes and the log;
  ``no_new_privs``; every capability is dropped (bounding, ambient, effective, permitted, inheritable), so a
  worker started by root is root without any power over others' files or processes.
- **Landlock** (the file system, TCP and, from ABI 6, signals and abstract sockets): reads only under the
  Python installation, the loaded shared libraries' directories and the caller's ``read_paths``; writes only in
  the private directory; no device ioctls; no TCP bind or connect; no signal to any process outside the
  worker. ``/proc`` is not readable at all, so neither ``/proc/self/mem`` nor ``/proc/<parent>/environ`` is.
- **seccomp** (libseccomp, through pyseccomp): no execve/execveat, no new process (fork, vfork, clone without
  CLONE_THREAD, clone3), no namespaces or mounts, no sockets but an AF_UNIX socketpair, no ptrace or
  cross-process memory access, no pidfds, no signal to another process, no io_uring, bpf, perf, keyrings,
  modules or handle-based opens. Foreign-architecture system calls kill the worker.

:func:`probe` (in the parent) says what this kernel offers; a run that needs confinement does not start when
a layer is missing (``sandbox = "python-only"`` opts out, with a warning). Linux x86_64 and arm64 only.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import platform
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["KernelSupport", "close_inherited_fds", "confine", "library_dirs", "probe", "verify"]

#: Landlock system calls: the same numbers on every architecture (the unified table, Linux 5.13+).
_LANDLOCK_CREATE_RULESET: Final = 444
_LANDLOCK_ADD_RULE: Final = 445
_LANDLOCK_RESTRICT_SELF: Final = 446
_CREATE_RULESET_VERSION: Final = 1
_RULE_PATH_BENEATH: Final = 1

# Landlock access rights (linux/landlock.h), with the ABI that introduced each.
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_REMOVE_DIR, _REMOVE_FILE, _MAKE_CHAR, _MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
_MAKE_REG, _MAKE_SOCK, _MAKE_FIFO, _MAKE_BLOCK, _MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
_REFER, _TRUNCATE, _IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15  # ABI 2, 3, 5
_FS_BY_ABI: Final = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6
_FILE_RIGHTS: Final = _EXECUTE | _WRITE_FILE | _READ_FILE | _TRUNCATE | _IOCTL_DEV

_READ: Final = _READ_FILE | _READ_DIR
_PRIVATE: Final = (
    _READ_FILE | _WRITE_FILE | _TRUNCATE | _READ_DIR | _REMOVE_DIR | _REMOVE_FILE | _MAKE_DIR | _MAKE_REG | _MAKE_SYM
) | _REFER
_DEVICES: Final = {"/dev/null": _READ_FILE | _WRITE_FILE, "/dev/zero": _READ_FILE, "/dev/urandom": _READ_FILE}

_PR_SET_NO_NEW_PRIVS: Final = 38
_PR_GET_NO_NEW_PRIVS: Final = 39
_PR_GET_SECCOMP: Final = 21
_SECCOMP_MODE_FILTER: Final = 2
_PR_CAPBSET_DROP: Final = 24
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_CAPSET: Final = {"x86_64": 126, "aarch64": 91}
_CAPGET: Final = {"x86_64": 125, "aarch64": 90}
_LINUX_CAPABILITY_VERSION_3: Final = 0x20080522

_CLONE_THREAD: Final = 0x00010000
#: CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
_CLONE_NAMESPACES: Final = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)
_AF_UNIX: Final = 1
_TIOCSTI, _TIOCLINUX = 0x5412, 0x541C
#: Ways to make the kernel signal another process for us (SIGIO to an owner set on a descriptor): Landlock
#: scopes them only from ABI 6, so seccomp refuses them on every kernel.
_F_SETOWN, _F_SETSIG, _F_SETOWN_EX = 8, 10, 15
_FIOSETOWN, _SIOCSPGRP = 0x8901, 0x8902
_PRIO_PROCESS, _IOPRIO_WHO_PROCESS = 0, 1

#: System calls a worker never needs and an attacker would: denied with EPERM.
_DENIED_SYSCALLS: Final = (
    "execve", "execveat", "fork", "vfork",
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_open", "pidfd_getfd", "pidfd_send_signal",
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "mount_setattr", "move_mount", "open_tree",
    "fsopen", "fsconfig", "fsmount", "fspick",
    "socket", "connect", "bind", "listen", "accept", "accept4",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "bpf", "perf_event_open", "userfaultfd",
    "add_key", "request_key", "keyctl", "init_module", "finit_module", "delete_module", "kexec_load",
    "kexec_file_load", "reboot", "swapon", "swapoff", "acct", "syslog", "quotactl", "ioperm", "iopl",
    "name_to_handle_at", "open_by_handle_at", "mknod", "mknodat", "settimeofday", "clock_settime", "adjtimex",
    "clock_adjtime", "setdomainname", "sethostname", "personality", "lookup_dcookie", "vhangup",
    "rt_sigqueueinfo", "rt_tgsigqueueinfo",
    # Landlock does not cover metadata: no chmod, chown, times or extended attributes anywhere
    "chmod", "fchmod", "fchmodat", "chown", "fchown", "lchown", "fchownat", "utime", "utimes", "utimensat",
    "futimesat", "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
    # memory that RLIMIT_AS does not count; watching directories outside; messages carrying an address or fds
    "memfd_create", "memfd_secret", "inotify_init", "inotify_init1", "inotify_add_watch", "fanotify_init",
    "sendmsg", "sendmmsg",
    # path truncation: Landlock handles it only from ABI 3 (ftruncate of the worker's own files stays)
    "truncate",
    # System V and POSIX IPC reach objects of other processes of the same uid (root's, when root started us)
    "shmget", "shmat", "shmctl", "shmdt", "msgget", "msgsnd", "msgrcv", "msgctl", "semget", "semop", "semctl",
    "semtimedop", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr",
)  # fmt: skip
_ESSENTIAL: Final = frozenset({"execve", "execveat", "fork", "vfork", "ptrace", "socket", "connect", "bind"})
#: System calls that act on another process of the same uid, given its pid at this argument: only 0 (this
#: process) is allowed, so a worker cannot lower its parent's limits, priority or CPU set.
_OTHER_PROCESS_ARG: Final = {
    "prlimit64": 0, "sched_setaffinity": 0, "sched_setscheduler": 0, "sched_setparam": 0, "sched_setattr": 0,
    "migrate_pages": 0, "move_pages": 0, "setpriority": 1, "ioprio_set": 1,
}  # fmt: skip
#: ... and for these, at this argument, the one "which" that means a process (not a group, not a user).
_WHICH_ARG: Final = {"setpriority": (0, _PRIO_PROCESS), "ioprio_set": (0, _IOPRIO_WHO_PROCESS)}


@dataclass(frozen=True)
class KernelSupport:
    """What this machine's kernel can confine a worker with; ``missing`` says why a layer is absent."""

    landlock_abi: int = 0
    seccomp: bool = False
    missing: tuple[str, ...] = ()
    layers: tuple[str, ...] = ()

    @property
    def confines(self) -> bool:
        """Both layers: the file system by Landlock, system calls by seccomp."""
        return self.landlock_abi >= 1 and self.seccomp

    def describe(self) -> str:
        if self.confines:
            return "kernel confinement: " + "; ".join(self.layers)
        return "no kernel confinement: " + "; ".join(self.missing)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _landlock_abi(libc: ctypes.CDLL) -> tuple[int, str]:
    if sys.platform != "linux":
        return 0, f"Landlock is Linux only (this is {platform.system()})"
    abi = int(libc.syscall(_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), _CREATE_RULESET_VERSION))
    if abi < 0:
        code = ctypes.get_errno()
        if code == errno.EOPNOTSUPP:
            return 0, "Landlock is built into this kernel but not enabled at boot (lsm=...landlock)"
        return 0, f"Landlock is not available in this kernel ({platform.release()}: {os.strerror(code)})"
    return abi, ""


def _seccomp() -> tuple[bool, str]:
    if sys.platform != "linux":
        return False, f"seccomp is Linux only (this is {platform.system()})"
    if platform.machine() not in _CAPSET:
        return False, f"the seccomp layer supports x86_64 and aarch64, not {platform.machine()}"
    try:
        _pyseccomp()
    except Exception as error:  # pyseccomp raises RuntimeError when it cannot find the library
        return False, f"libseccomp could not be loaded ({error}); install libseccomp2"
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            if not any(line.startswith("Seccomp:") for line in status):
                return False, "this kernel has no seccomp filters (CONFIG_SECCOMP_FILTER)"
    except OSError as error:
        return False, f"cannot tell whether this kernel has seccomp ({error.strerror})"
    return True, ""


_SONAMES: Final = {"seccomp": "libseccomp.so.2", "c": "libc.so.6"}


def _pyseccomp() -> Any:
    """pyseccomp, with its libraries loaded by soname: its own lookup (``ctypes.util.find_library``) starts
    ldconfig or gcc, which a worker cannot once its process limit is 0, nor once it is confined."""
    if "pyseccomp" in sys.modules:
        return sys.modules["pyseccomp"]
    import ctypes.util

    original = ctypes.util.find_library

    def find_library(name: str) -> str | None:
        soname = _SONAMES.get(name)
        if soname is not None:
            try:
                ctypes.CDLL(soname)
                return soname
            except OSError:
                pass
        return original(name)

    ctypes.util.find_library = find_library
    try:
        import pyseccomp
    finally:
        ctypes.util.find_library = original
    return pyseccomp


@functools.cache
def probe() -> KernelSupport:
    """What this kernel offers (asked once per process; changes need a reboot)."""
    libc = _libc() if sys.platform == "linux" else None
    abi, landlock_missing = _landlock_abi(libc) if libc is not None else (0, "Landlock is Linux only")
    seccomp, seccomp_missing = _seccomp()
    layers = []
    if abi >= 1:
        scoped = ", signals and abstract sockets" if abi >= 6 else ""
        network = ", TCP" if abi >= 4 else ""
        layers.append(f"Landlock ABI {abi} (file system{network}{scoped})")
    if seccomp:
        layers.append("seccomp (no exec, processes, sockets, ptrace, namespaces)")
    layers.append("capabilities dropped, no_new_privs, descriptors closed, resource limits")
    missing = tuple(reason for reason in (landlock_missing, seccomp_missing) if reason)
    return KernelSupport(landlock_abi=abi, seccomp=seccomp, missing=missing, layers=tuple(layers))


# -- applied by the worker to itself ----------------------------------------------------------------------------


def _check(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")
    return result


def close_inherited_fds(keep: Iterable[int]) -> None:
    """Close every descriptor but ``keep``: nothing of the parent's (a store connection, a socket) survives."""
    low = 3
    for fd in sorted(set(keep) | {0, 1, 2}):
        if fd >= low:
            os.closerange(low, fd)
            low = fd + 1
    os.closerange(low, 1 << 20)


def library_dirs() -> tuple[str, ...]:
    """The directories of the shared libraries this process has loaded, and the loader's cache: what an
    extension module imported later (``_decimal`` needs libmpdec) is looked up in."""
    dirs = {"/etc/ld.so.cache"}
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                parts = line.split(maxsplit=5)
                if len(parts) == 6 and parts[5].startswith("/") and ".so" in parts[5]:
                    dirs.add(os.path.dirname(parts[5].strip()))
    except OSError:
        pass
    return tuple(sorted(dirs))


def _drop_capabilities(libc: ctypes.CDLL) -> None:
    """No capability in any set, and none to regain: root in a worker is uid 0 without power."""
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    try:
        with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as file:
            last = int(file.read())
    except (OSError, ValueError):
        last = 63
    for cap in range(last + 1):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 and ctypes.get_errno() != errno.EINVAL:
            break  # EPERM: no CAP_SETPCAP, so there is nothing to drop (an unprivileged user)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    header = Header(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (Data * 2)()
    _check(libc.syscall(_CAPSET[platform.machine()], ctypes.byref(header), ctypes.byref(data)), "capset")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _landlock(libc: ctypes.CDLL, abi: int, read_roots: Iterable[str], private_dir: str) -> None:
    handled = _FS_BY_ABI.get(abi, _FS_BY_ABI[5])
    attr = _RulesetAttr(
        fs=handled,
        net=_NET_BIND_TCP | _NET_CONNECT_TCP if abi >= 4 else 0,
        scoped=_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL if abi >= 6 else 0,
    )
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = _check(libc.syscall(_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), 0), "landlock")
    try:
        rules: dict[str, int] = {root: _READ for root in read_roots}
        rules.update(_DEVICES)
        rules[private_dir] = _PRIVATE
        for path, rights in rules.items():
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a root that does not exist here grants nothing
            try:
                if not os.path.isdir(path):
                    rights &= _FILE_RIGHTS
                rule = _PathBeneath(allowed=rights & handled, parent_fd=fd)
                _check(libc.syscall(_LANDLOCK_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0), path)
            finally:
                os.close(fd)
        _check(libc.syscall(_LANDLOCK_RESTRICT_SELF, ruleset, 0), "landlock_restrict_self")
    finally:
        os.close(ruleset)


def _seccomp_filter(pid: int) -> None:
    seccomp = _pyseccomp()
    deny = seccomp.ERRNO(errno.EPERM)
    flt: Any = seccomp.SyscallFilter(seccomp.ALLOW)
    flt.set_attr(seccomp.Attr.CTL_TSYNC, 1)  # every thread, should one exist
    for name in _DENIED_SYSCALLS:
        try:
            flt.add_rule(deny, name)
        except (OSError, ValueError):  # a name this libseccomp does not know (an older version): that one only
            if name in _ESSENTIAL:
                raise
    # threads only: clone must carry CLONE_THREAD and no namespace flag; clone3 falls back to clone (ENOSYS)
    flt.add_rule(deny, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, _CLONE_THREAD, 0))
    for flag in _CLONE_NAMESPACES:
        flt.add_rule(deny, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    flt.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    flt.add_rule(deny, "socketpair", seccomp.Arg(0, seccomp.NE, _AF_UNIX))
    flt.add_rule(deny, "sendto", seccomp.Arg(4, seccomp.NE, 0))  # a socketpair's send(), never to an address
    # signals: only to this process (its threads share its id as their group id)
    for name in ("kill", "tgkill", "tkill"):
        flt.add_rule(deny, name, seccomp.Arg(0, seccomp.NE, pid))
    for name, position in _OTHER_PROCESS_ARG.items():
        flt.add_rule(deny, name, seccomp.Arg(position, seccomp.NE, 0))
    for name, (position, which) in _WHICH_ARG.items():
        flt.add_rule(deny, name, seccomp.Arg(position, seccomp.NE, which))
    for command in (_F_SETOWN, _F_SETSIG, _F_SETOWN_EX):
        flt.add_rule(deny, "fcntl", seccomp.Arg(1, seccomp.EQ, command))
    for request in (_TIOCSTI, _TIOCLINUX, _FIOSETOWN, _SIOCSPGRP):
        flt.add_rule(deny, "ioctl", seccomp.Arg(1, seccomp.EQ, request))
    flt.load()


def confine(*, read_roots: Iterable[str], private_dir: str, support: KernelSupport) -> tuple[str, ...]:
    """Confine this process for good; the layers applied. Raises OSError when a layer that ``support`` promises
    cannot be applied (the worker then exits before any user code runs)."""
    libc = _libc()
    if support.seccomp:
        _pyseccomp()  # loaded while files and processes are still allowed
    threads = os.listdir(f"/proc/{os.getpid()}/task")
    if len(threads) != 1:  # Landlock and capabilities bind the calling thread (and threads it starts) only
        raise OSError(errno.EBUSY, f"confine before starting threads ({len(threads)} are running)")
    _drop_capabilities(libc)
    if support.landlock_abi >= 1:
        _landlock(libc, support.landlock_abi, read_roots, private_dir)
    if support.seccomp:
        _seccomp_filter(os.getpid())
    return support.layers


def verify() -> dict[str, bool]:
    """What the kernel says about this process now (asked by the worker after :func:`confine`, before any user
    code, so the answer can be trusted): seccomp filter mode, no_new_privs, no effective capability, and
    Landlock refusing a read outside the rules (``/proc/self/status``)."""
    libc = _libc()
    facts = {
        "seccomp": libc.prctl(_PR_GET_SECCOMP, 0, 0, 0, 0) == _SECCOMP_MODE_FILTER,
        "no_new_privs": libc.prctl(_PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1,
    }
    try:
        os.close(os.open("/proc/self/status", os.O_RDONLY))
        facts["landlock"] = False
    except PermissionError:
        facts["landlock"] = True
    except OSError:
        facts["landlock"] = False

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    data = (ctypes.c_uint32 * 6)()
    header = Header(_LINUX_CAPABILITY_VERSION_3, 0)
    ok = libc.syscall(_CAPGET[platform.machine()], ctypes.byref(header), ctypes.byref(data)) == 0
    facts["no_capabilities"] = ok and not any(data)
    return facts
