"""Escape attempts for the red-team suite: the sidecar prelude that defeats the Python layer, and the attempt table.

Every attempt is the body of one ``assert_<name>(example, prompt, response)`` function. A body ends with an
implicit ``return True``: an attempt that returns True reached its goal (an escape); one that raises (or returns
False) was refused. Bodies see, after the prelude: ``sys``, ``imp`` (the real ``__import__``), ``os``, ``B`` (the
real builtins module), ``ct`` (ctypes), ``libc``, ``W`` (the worker module), ``sc`` (a raw system call that raises
OSError on failure), ``A`` (getattr of a name given in pieces, so the static check does not see it), ``H`` (the
host's facts: paths, pids, ports, IPC keys) and ``C`` (this attempt's own canary file, outside the private
directory). The Python-layer attempts (``prelude=False``) only see ``A`` and ``H``.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from typing import Any

# Layers, as named in the suite's table.
LANDLOCK_FS = "Landlock fs"
LANDLOCK_SCOPE = "Landlock scope"
SECCOMP = "seccomp"
CAPS = "capabilities dropped"
FDS = "fds closed"
RLIMIT = "rlimit"
PARENT = "parent caps"
PYTHON = "python layer"
ESCAPE = "NOTHING (escape)"
FORGED = "not contained: one module, one trust domain"

EPERM = r"\[Errno 1\]"
EACCES = r"\[Errno 13\]"


@dataclass(frozen=True)
class Attempt:
    name: str
    body: str
    contained_by: str
    expect: str | None = None  # a regex the cell's error message must match (which layer said no)
    checks: tuple[str, ...] = ()  # host invariants to check for this attempt (besides its own canary)
    prelude: bool = True


PRELUDE = '''
import json as _json

H = _json.loads(HOST_JSON)


def A(obj, *parts):
    return getattr(obj, "".join(parts))


def _kit():
    """The Python-layer bypass: an object-graph walk to the worker, its audit hook switched off, the real import."""
    for cls in A(object, "__sub", "classes__")():
        glb = getattr(A(cls, "__in", "it__"), "__glo" + "bals__", None)
        if isinstance(glb, dict) and "sys" in glb and hasattr(glb["sys"], "modules"):
            sys = glb["sys"]
            W = sys.modules["spade_lsp.sandbox._worker"]
            W._S.exiting = True  # the audit hook returns early from now on
            imp = A(sys.modules["builtins"], "__imp", "ort__")
            os, ct, B = imp("os"), imp("ctypes"), imp("builtins")
            libc = ct.CDLL(None, use_errno=True)
            libc.syscall.restype = ct.c_long

            def sc(nr, *args):
                values = [ct.c_long(a) if isinstance(a, int) else a for a in args]
                result = libc.syscall(ct.c_long(nr), *values)
                if result < 0:
                    code = ct.get_errno()
                    raise OSError(code, os.strerror(code))
                return result

            return sys, imp, os, B, ct, libc, W, sc
    raise RuntimeError("no way in")
'''


def _attempt(name: str, body: str, by: str, expect: str | None = None, *checks: str, prelude: bool = True) -> Attempt:
    return Attempt(name, textwrap.dedent(body).strip("\n"), by, expect, checks, prelude)


def sidecar(attempts: list[Attempt], host: dict[str, Any], extra: str = "") -> str:
    """One sidecar module: the prelude, then one assertion function per attempt (in table order)."""
    source = PRELUDE.replace("HOST_JSON", repr(json.dumps(host)))
    for attempt in attempts:
        canary = f"{host['dir']}/{attempt.name}.canary"
        head = f"    C = {canary!r}\n"
        if attempt.prelude:
            head += "    sys, imp, os, B, ct, libc, W, sc = _kit()\n"
        body = textwrap.indent(textwrap.dedent(attempt.body).strip("\n"), "    ")
        source += f"\n\ndef assert_{attempt.name}(example, prompt, response):\n{head}{body}\n    return True\n"
    return source + textwrap.dedent(extra)


# -- the kernel-layer batch: every attempt runs after the prelude, in one worker ---------------------------------

_SIG = "parent_signals"
_DECOY = "decoy_alive"

KERNEL: list[Attempt] = [
    # object-graph walks to the process, exec and network primitives
    _attempt(
        "walk_subclasses_execv",
        "os.execv('/bin/sh', ['sh', '-c', 'echo pwned > ' + C + '.new'])",
        SECCOMP,
        EPERM,
    ),
    _attempt(
        "walk_getframe_globals_fork",
        """
        frame, found = sys._getframe(), None
        while frame is not None and found is None:
            g = A(frame, "f_", "globals")
            found = g if "Worker" in g else None
            frame = A(frame, "f_", "back")
        pid = found["os"].fork()
        if pid == 0:
            found["os"]._exit(0)
        """,
        SECCOMP,
        EPERM,
    ),
    _attempt(
        "walk_traceback_frame_system",
        """
        try:
            1 / 0
        except ZeroDivisionError as error:
            frame = A(error.__traceback__, "tb_", "frame")
        caller = A(A(frame, "f_", "back"), "f_", "globals")  # Worker._call: the worker module's globals
        rc = caller["os"].system("touch " + C + ".new")
        assert rc == 0, "system() returned %d" % rc
        """,
        SECCOMP,
        r"system\(\) returned",
    ),
    _attempt(
        "walk_generator_gi_frame_posix_spawn",
        """
        gen = sys.modules["os"].walk(".")
        next(gen)
        osg = A(A(gen, "gi_", "frame"), "f_", "globals")  # the os module's globals
        osg["posix_spawn"]("/bin/touch", ["touch", C + ".new"], {})
        """,
        SECCOMP,
        EPERM,
    ),
    _attempt(
        "walk_gc_get_objects_subprocess",
        """
        gc = imp("gc")
        found = [m for m in gc.get_objects() if type(m).__name__ == "module" and m.__name__ == "subprocess"]
        sp = found[0] if found else imp("subprocess")
        sp.run(["/bin/touch", C + ".new"])
        """,
        SECCOMP,
        EPERM,
    ),
    _attempt(
        "walk_gc_get_referrers_kill",
        """
        gc = imp("gc")
        g = [r for r in gc.get_referrers(W._S) if isinstance(r, dict) and "Worker" in r][0]
        g["os"].kill(g["os"].getppid(), 10)
        """,
        SECCOMP,
        EPERM,
        _SIG,
    ),
    _attempt(
        "posixsubprocess_fork_exec",
        """
        ps = imp("_posixsubprocess")
        r, w = os.pipe()
        ps.fork_exec([b"/bin/touch", (C + ".new").encode()], [b"/bin/touch"], True, (w,), None, None,
                     -1, -1, -1, -1, -1, -1, r, w, False, False, -1, None, None, None, -1, None, False)
        """,
        SECCOMP,
        EPERM,
    ),
    _attempt(
        "ctypes_libc_system",
        "rc = libc.system(('touch ' + C + '.new').encode())\nassert rc == 0, 'system() returned %d' % rc",
        SECCOMP,
        r"system\(\) returned",
    ),
    _attempt(
        "ctypes_syscall_execve", "sc(59, ct.c_char_p(b'/bin/sh'), ct.c_void_p(0), ct.c_void_p(0))", SECCOMP, EPERM
    ),
    _attempt("ctypes_syscall_fork", "if sc(57) == 0:\n    os._exit(0)", SECCOMP, EPERM),
    _attempt("ctypes_syscall_clone_process", "if sc(56, 17, 0, 0, 0, 0) == 0:\n    os._exit(0)", SECCOMP, EPERM),
    _attempt(
        "ctypes_mmap_exec_shellcode_fork",
        """
        if os.uname().machine != "x86_64":
            raise OSError(1, "x86_64 shellcode only")
        mm = imp("mmap")
        page = mm.mmap(-1, 4096, prot=mm.PROT_READ | mm.PROT_WRITE | mm.PROT_EXEC)
        page.write(b"\\xb8\\x39\\x00\\x00\\x00\\x0f\\x05\\xc3")  # mov eax, 57 (fork); syscall; ret
        code = ct.CFUNCTYPE(ct.c_long)(ct.addressof(ct.c_char.from_buffer(page)))
        result = code()
        if result == 0:
            os._exit(0)
        if result < 0:
            raise OSError(-result, "raw fork from shellcode: " + os.strerror(-result))
        """,
        SECCOMP,
        EPERM,
    ),
    _attempt(
        "ctypes_mprotect_rwx_then_execve",
        """
        libc.mmap.restype = ct.c_void_p
        libc.mmap.argtypes = [ct.c_void_p, ct.c_size_t, ct.c_int, ct.c_int, ct.c_int, ct.c_long]
        addr = libc.mmap(None, 4096, 3, 0x22, -1, 0)  # RW, private anonymous
        if libc.mprotect(ct.c_void_p(addr), 4096, 7) != 0:  # RWX
            raise OSError(ct.get_errno(), "mprotect")
        sc(322, -100, ct.c_char_p(b"/bin/sh"), ct.c_void_p(0), ct.c_void_p(0), 0)  # execveat
        """,
        SECCOMP,
        EPERM,
    ),
    _attempt("io_fileio_root_dir", "imp('_io').FileIO('/', 'r')", LANDLOCK_FS, EACCES),
    _attempt("io_fileio_etc_hostname", "imp('_io').FileIO('/etc/hostname', 'r').read()", LANDLOCK_FS, EACCES),
    _attempt(
        "fd_scan_for_parent_descriptors",
        """
        io, found = imp("_io"), []
        for fd in range(3, 1024):
            try:
                st = os.fstat(fd)
            except OSError:
                continue
            found.append(fd)
            if [st.st_dev, st.st_ino] in H["parent_inodes"]:
                io.FileIO(fd, "r", closefd=False).read()  # the parent's canary or database
                return True
        raise LookupError("no parent descriptor; open: %r" % found)
        """,
        FDS,
        r"LookupError: no parent descriptor",
    ),
    # /proc
    _attempt("proc_self_mem_write", "B.open('/proc/self/mem', 'r+b')", LANDLOCK_FS, EACCES),
    _attempt("proc_parent_environ", "B.open('/proc/%d/environ' % os.getppid(), 'rb').read()", LANDLOCK_FS, EACCES),
    _attempt("proc_parent_mem", "B.open('/proc/%d/mem' % os.getppid(), 'rb').read(1)", LANDLOCK_FS, EACCES),
    _attempt("proc_parent_cmdline", "B.open('/proc/%d/cmdline' % os.getppid(), 'rb').read()", LANDLOCK_FS, EACCES),
    _attempt("proc_self_fd_listing", "os.listdir('/proc/self/fd')", LANDLOCK_FS, EACCES),
    _attempt("proc_1_root", "os.listdir('/proc/1/root')", LANDLOCK_FS, EACCES),
    _attempt(
        "environ_has_no_secret",
        """
        leaked = [k for k, v in os.environ.items() if k in ("OPENAI_API_KEY", "SPADE_TEST_SECRET") or "canary" in v]
        if leaked:
            return True
        raise LookupError("scrubbed environment: %s" % sorted(os.environ))
        """,
        PARENT,
        r"LookupError: scrubbed environment",
    ),
    # signals
    _attempt("kill_parent", "os.kill(os.getppid(), 10)", SECCOMP, EPERM, _SIG),
    _attempt("killpg_parent_group", "os.killpg(os.getpgid(os.getppid()), 10)", SECCOMP, EPERM, _SIG, _DECOY),
    _attempt("kill_decoy_daemon", "os.kill(H['decoy'], 9)", SECCOMP, EPERM, _DECOY),
    _attempt("kill_minus_one", "os.kill(-1, 0)", SECCOMP, EPERM),
    _attempt("kill_zero_own_group", "os.kill(0, 0)", SECCOMP, EPERM, _SIG),
    _attempt(
        "pidfd_send_signal_parent",
        "imp('signal').pidfd_send_signal(os.pidfd_open(os.getppid()), 10)",
        SECCOMP,
        EPERM,
        _SIG,
    ),
    _attempt("tgkill_parent", "sc(234, os.getppid(), os.getppid(), 10)", SECCOMP, EPERM, _SIG),
    _attempt("tkill_parent", "sc(200, os.getppid(), 10)", SECCOMP, EPERM, _SIG),
    _attempt(
        "rt_sigqueueinfo_parent",
        "info = ct.create_string_buffer(128)\nsc(129, os.getppid(), 10, info)",
        SECCOMP,
        EPERM,
        _SIG,
    ),
    _attempt(
        "sigio_f_setown_parent",
        """
        fcntl, sock = imp("fcntl"), imp("_socket")
        a, b = sock.socketpair(1, 1)
        fcntl.fcntl(a.fileno(), fcntl.F_SETOWN, os.getppid())
        fcntl.fcntl(a.fileno(), 10, 10)  # F_SETSIG: SIGUSR1 instead of SIGIO
        fcntl.fcntl(a.fileno(), fcntl.F_SETFL, fcntl.fcntl(a.fileno(), fcntl.F_GETFL) | os.O_ASYNC)
        b.send(b"x")  # a becomes readable: the kernel signals a's owner
        imp("time").sleep(0.2)
        return False  # whether it worked shows on the host
        """,
        LANDLOCK_SCOPE,
        None,
        _SIG,
    ),
    _attempt(
        "sigio_f_setown_decoy_sigkill",
        """
        fcntl, sock = imp("fcntl"), imp("_socket")
        a, b = sock.socketpair(1, 1)
        fcntl.fcntl(a.fileno(), fcntl.F_SETOWN, H["decoy"])
        fcntl.fcntl(a.fileno(), 10, 9)  # F_SETSIG: SIGKILL
        fcntl.fcntl(a.fileno(), fcntl.F_SETFL, fcntl.fcntl(a.fileno(), fcntl.F_GETFL) | os.O_ASYNC)
        b.send(b"x")
        imp("time").sleep(0.2)
        return False
        """,
        LANDLOCK_SCOPE,
        None,
        _DECOY,
    ),
    _attempt(
        "sigio_protocol_pipe_parent_group",
        """
        fcntl, struct, gc = imp("fcntl"), imp("struct"), imp("gc")
        worker = [o for o in gc.get_objects() if type(o) is W.Worker][0]
        fcntl.fcntl(worker.out, 15, struct.pack("ii", 2, os.getpgid(os.getppid())))  # F_SETOWN_EX, F_OWNER_PGRP
        fcntl.fcntl(worker.out, 10, 12)  # F_SETSIG: SIGUSR2, each time the parent reads this pipe
        fcntl.fcntl(worker.out, fcntl.F_SETFL, fcntl.fcntl(worker.out, fcntl.F_GETFL) | os.O_ASYNC)
        return False
        """,
        LANDLOCK_SCOPE,
        None,
        _SIG,
        _DECOY,
    ),
    # processes and namespaces
    _attempt("os_fork", "if os.fork() == 0:\n    os._exit(0)", SECCOMP, EPERM),
    _attempt("os_posix_spawn", "os.posix_spawn('/bin/touch', ['touch', C + '.new'], {})", SECCOMP, EPERM),
    _attempt("subprocess_run", "imp('subprocess').run(['/bin/touch', C + '.new'])", SECCOMP, EPERM),
    _attempt(
        "os_system",
        "rc = os.system('touch ' + C + '.new')\nassert rc == 0, 'system() returned %d' % rc",
        SECCOMP,
        r"system\(\) returned",
    ),
    _attempt(
        "fork_bomb_ctypes",
        """
        started = 0
        for _ in range(300):
            pid = libc.fork()
            if pid == 0:
                while True:
                    libc.fork()
            started += pid > 0
        assert started, "fork() failed 300 times, errno %d" % ct.get_errno()
        """,
        SECCOMP,
        r"errno 1\b",
    ),
    _attempt("clone3_syscall", "args = ct.create_string_buffer(88)\nsc(435, args, 88)", SECCOMP, r"\[Errno 38\]"),
    _attempt("vfork_syscall", "if sc(58) == 0:\n    os._exit(0)", SECCOMP, EPERM),
    _attempt(
        "clone_thread_with_new_user_namespace",
        "sc(56, 0x10000 | 0x800 | 0x100 | 0x10000000, 0, 0, 0, 0)",
        SECCOMP,
        EPERM,
    ),
    _attempt("unshare_newuser", "sc(272, 0x10000000)", SECCOMP, EPERM),
    _attempt("setns", "sc(308, 0, 0)", SECCOMP, EPERM),
    _attempt(
        "mount_tmpfs",
        "sc(165, ct.c_char_p(b'none'), ct.c_char_p(b'.'), ct.c_char_p(b'tmpfs'), 0, ct.c_void_p(0))",
        SECCOMP,
        EPERM,
    ),
    _attempt("chroot", "os.chroot('.')", SECCOMP, EPERM),
    _attempt("pivot_root", "sc(155, ct.c_char_p(b'.'), ct.c_char_p(b'.'))", SECCOMP, EPERM),
    # network
    _attempt(
        "inet_connect_to_host_listener",
        "s = imp('_socket').socket(2, 1)\ns.connect(('127.0.0.1', H['tcp_port']))",
        SECCOMP,
        EPERM,
        "tcp",
    ),
    _attempt("inet6_socket", "imp('_socket').socket(10, 1)", SECCOMP, EPERM),
    _attempt("netlink_socket", "imp('_socket').socket(16, 3, 0)", SECCOMP, EPERM),
    _attempt("packet_socket", "imp('_socket').socket(17, 3, 0)", SECCOMP, EPERM),
    _attempt("unix_socket_abstract_connect", "imp('_socket').socket(1, 1).connect(H['abstract'])", SECCOMP, EPERM),
    _attempt("socketpair_inet", "imp('_socket').socketpair(2, 1)", SECCOMP, EPERM),
    _attempt(
        "socketpair_connect_to_host_unix_stream",
        "a, b = imp('_socket').socketpair(1, 1)\na.connect(H['stream'])",
        SECCOMP,
        EPERM,
        "unix_stream",
    ),
    _attempt(
        "socketpair_dgram_sendto_abstract",
        "a, b = imp('_socket').socketpair(1, 2)\na.sendto(b'pwned:' + __name__.encode(), H['abstract'])",
        LANDLOCK_SCOPE,
        EPERM,
        "abstract_dgram",
    ),
    _attempt(
        "socketpair_dgram_sendto_host_path",
        "a, b = imp('_socket').socketpair(1, 2)\na.sendto(b'pwned by socketpair_dgram_sendto_host_path', H['dgram'])",
        "seccomp",
        None,
        "path_dgram",
    ),
    # the file system
    _attempt("write_canary", "B.open(C, 'w').write('pwned')", LANDLOCK_FS, EACCES),
    _attempt("create_outside", "B.open(C + '.new', 'x')", LANDLOCK_FS, EACCES),
    _attempt("truncate_canary", "os.truncate(C, 0)", SECCOMP, EPERM),  # and Landlock from ABI 3
    _attempt("rename_canary_outside", "os.rename(C, C + '.new')", LANDLOCK_FS, r"\[Errno (13|18)\]"),
    _attempt("rename_canary_into_private_dir", "os.rename(C, 'stolen')", LANDLOCK_FS, r"\[Errno (13|18)\]"),
    _attempt("unlink_canary", "os.unlink(C)", LANDLOCK_FS, EACCES),
    _attempt(
        "open_dir_fd_root_create",
        "root = os.open('/', os.O_PATH)\nos.open(C.lstrip('/') + '.new', os.O_CREAT | os.O_WRONLY, dir_fd=root)",
        LANDLOCK_FS,
        EACCES,
    ),
    _attempt("mkfifo_outside", "os.mkfifo(C + '.new')", SECCOMP, EPERM),
    _attempt("mkfifo_inside", "os.mkfifo('fifo')", SECCOMP, EPERM),
    _attempt("mknod_char_device_inside", "os.mknod('mem', 0o20666, os.makedev(1, 1))", SECCOMP, EPERM),
    _attempt(
        "symlink_to_canary_then_write",
        "os.symlink(C, 'link')\nB.open('link', 'w').write('pwned')",
        LANDLOCK_FS,
        EACCES,
    ),
    _attempt("symlink_outside", "os.symlink('/etc/passwd', C + '.new')", LANDLOCK_FS, EACCES),
    _attempt("hardlink_canary_into_private_dir", "os.link(C, 'hard')", LANDLOCK_FS, r"\[Errno 18\]"),
    _attempt("hardlink_private_file_outside", "os.link('.worker.log', C + '.new')", LANDLOCK_FS, r"\[Errno (13|18)\]"),
    _attempt("listdir_outside", "os.listdir(H['dir'])", LANDLOCK_FS, EACCES),
    _attempt("read_etc_passwd", "B.open('/etc/passwd').read()", LANDLOCK_FS, EACCES),
    _attempt("chown_canary_to_other_user", "os.chown(C, 1234, 1234)", CAPS, EPERM),
    _attempt("chmod_canary", "os.chmod(C, 0o777)", "seccomp"),
    _attempt("utime_canary", "os.utime(C, (5, 5))", "seccomp"),
    _attempt("setxattr_canary", "os.setxattr(C, 'user.pwned', b'1')", "seccomp"),
    _attempt(
        "name_to_handle_at",
        """
        handle, mount = ct.create_string_buffer(136), ct.c_int()
        ct.memmove(handle, (128).to_bytes(4, "little"), 4)
        sc(303, -100, ct.c_char_p(b"/etc/passwd"), handle, ct.byref(mount), 0)
        """,
        SECCOMP,
        EPERM,
    ),
    _attempt(
        "open_by_handle_at",
        "handle = ct.create_string_buffer(136)\nsc(304, 0, handle, 0)",
        SECCOMP,
        EPERM,
    ),
    _attempt("sidecar_rewrites_itself", "B.open(H['sidecar'], 'a').write('\\nPWNED = 1\\n')", LANDLOCK_FS, EACCES),
    # privileges
    _attempt(
        "capset_regain_all",
        """
        header = (ct.c_uint32 * 2)(0x20080522, 0)
        data = (ct.c_uint32 * 6)(*([0xFFFFFFFF] * 6))
        sc(126, header, data)
        """,
        CAPS,
        EPERM,
    ),
    _attempt(
        "setuid_root_regains_nothing",
        """
        os.setuid(0)
        header, data = (ct.c_uint32 * 2)(0x20080522, 0), (ct.c_uint32 * 6)()
        sc(125, header, data)
        if data[0] or data[3]:
            return True
        raise PermissionError("setuid(0) regained no capability (effective 0)")
        """,
        CAPS,
        r"regained no capability",
    ),
    _attempt("prctl_ambient_raise_sys_admin", "sc(157, 47, 2, 21, 0, 0)", CAPS, EPERM),
    _attempt("prctl_clear_no_new_privs", "sc(157, 38, 0, 0, 0, 0)", CAPS, r"\[Errno 22\]"),
    _attempt("ptrace_attach_parent", "sc(101, 16, os.getppid(), 0, 0)", SECCOMP, EPERM),
    _attempt(
        "process_vm_readv_parent",
        """
        buf = ct.create_string_buffer(64)
        iov = (ct.c_void_p * 2)(ct.addressof(buf), 64)
        sc(310, os.getppid(), iov, 1, iov, 1, 0)
        """,
        SECCOMP,
        EPERM,
    ),
    _attempt("kcmp_parent", "sc(312, os.getpid(), os.getppid(), 0, 0, 0)", SECCOMP, EPERM),
    _attempt(
        "add_key_session_keyring",
        "sc(248, ct.c_char_p(b'user'), ct.c_char_p(b'spade'), ct.c_char_p(b'x'), 1, -3)",
        SECCOMP,
        EPERM,
    ),
    _attempt("keyctl", "sc(250, 0, -3, 0, 0, 0)", SECCOMP, EPERM),
    _attempt("bpf", "attr = ct.create_string_buffer(128)\nsc(321, 0, attr, 128)", SECCOMP, EPERM),
    _attempt(
        "perf_event_open",
        "attr = ct.create_string_buffer(128)\nsc(298, attr, 0, -1, -1, 0)",
        SECCOMP,
        EPERM,
    ),
    _attempt("io_uring_setup", "params = ct.create_string_buffer(120)\nsc(425, 8, params)", SECCOMP, EPERM),
    _attempt("userfaultfd", "sc(323, 0)", SECCOMP, EPERM),
    _attempt("personality", "sc(135, 0x0040000)", SECCOMP, EPERM),
    _attempt(
        "prlimit_decoy_nofile",
        "r = imp('resource')\nr.prlimit(H['decoy'], r.RLIMIT_NOFILE, (7, 7))",
        SECCOMP,
        EPERM,
        "decoy_limits",
    ),
    _attempt(
        "prlimit_parent_msgqueue",
        "r = imp('resource')\nr.prlimit(os.getppid(), r.RLIMIT_MSGQUEUE, (4096, H['msgqueue_hard']))",
        SECCOMP,
        EPERM,
        "parent_limits",
    ),
    _attempt("setpriority_decoy", "os.setpriority(os.PRIO_PROCESS, H['decoy'], 19)", SECCOMP, EPERM, "decoy_sched"),
    _attempt("sched_setaffinity_decoy", "os.sched_setaffinity(H['decoy'], {0})", SECCOMP, EPERM, "decoy_sched"),
    _attempt(
        "sched_setscheduler_decoy_idle",
        "os.sched_setscheduler(H['decoy'], os.SCHED_IDLE, os.sched_param(0))",
        SECCOMP,
        EPERM,
        "decoy_sched",
    ),
    _attempt("ioprio_set_decoy_idle", "sc(251, 1, H['decoy'], 3 << 13)", SECCOMP, EPERM, "decoy_sched"),
    _attempt(
        "sysv_shm_create_persistent",
        "r = libc.shmget(H['shm_key'], 1 << 20, 0o1600)\nassert r >= 0, 'shmget errno %d' % ct.get_errno()",
        SECCOMP,
        r"shmget errno 1\b",
        "sysv_shm",
    ),
    _attempt(
        "sysv_msgsnd_to_host_queue",
        """
        qid = libc.msgget(H['msg_key'], 0)
        assert qid >= 0, "msgget errno %d" % ct.get_errno()
        msg = ct.create_string_buffer(8 + 5)
        ct.memmove(msg, (1).to_bytes(8, "little") + b"pwned", 13)
        assert libc.msgsnd(qid, msg, 5, 0o4000) == 0, "msgsnd errno %d" % ct.get_errno()
        """,
        SECCOMP,
        r"msgget errno 1\b",
        "sysv_msg",
    ),
    _attempt(
        "posix_mq_open_create",
        """
        libc.mq_open.argtypes = [ct.c_char_p, ct.c_int, ct.c_int, ct.c_void_p]
        fd = libc.mq_open(H['mq_name'].encode(), 0o100 | 0o2, 0o600, None)
        assert fd >= 0, "mq_open errno %d" % ct.get_errno()
        """,
        SECCOMP,
        r"mq_open errno 1\b",
        "posix_mq",
    ),
]

# -- the Python layer alone (no prelude): refused early, as ``forbidden`` ---------------------------------------

_WALK = """
sys = None
for cls in A(object, "__sub", "classes__")():
    glb = getattr(A(cls, "__in", "it__"), "__glo" + "bals__", None)
    if isinstance(glb, dict) and "sys" in glb and hasattr(glb["sys"], "modules"):
        sys = glb["sys"]
        break
"""

PYTHON_LAYER: list[Attempt] = [
    _attempt("py_import_os_system", "import os\nos.system('true')", PYTHON, r"imports `os`", prelude=False),
    _attempt(
        "py_walk_fork",
        _WALK + "sys.modules['os'].fork()",
        PYTHON,
        r"`os\.fork` is not allowed",
        prelude=False,
    ),
    _attempt(
        "py_walk_open_outside",
        _WALK + "A(sys.modules['builtins'], 'op', 'en')('/etc/passwd').read()",
        PYTHON,
        r"reading '/etc/passwd'",
        prelude=False,
    ),
    _attempt(
        "py_walk_write_canary",
        _WALK + "A(sys.modules['builtins'], 'op', 'en')(C, 'w')",
        PYTHON,
        r"writing '.*canary'",
        prelude=False,
    ),
    _attempt(
        "py_walk_socket_connect",
        _WALK + "a, b = sys.modules['socket'].socketpair()\na.connect(H['stream'])",
        PYTHON,
        r"`socket\.connect` is not allowed",
        "unix_stream",
        prelude=False,
    ),
    _attempt(
        "py_walk_ctypes_dlopen",
        _WALK + "sys.modules['ctypes'].CDLL('libc.so.6')",
        PYTHON,
        r"`ctypes\.dlopen` is not allowed",
        prelude=False,
    ),
    _attempt(
        "py_walk_kill_parent",
        _WALK + "o = sys.modules['os']\no.kill(o.getppid(), 10)",
        PYTHON,
        r"`os\.kill` is not allowed",
        prelude=False,
    ),
    _attempt(
        "py_recovered_exec_then_subprocess",
        _WALK
        + """
real = A(sys.modules['builtins'], 'ex', 'ec')  # the real exec: the restricted builtins are only a lint
code = "import subprocess\\nsubprocess.run(['/bin/touch', C + '.new'])"
real(code, {"C": C, "__built" + "ins__": sys.modules["builtins"]})
""",
        PYTHON,
        r"`subprocess\.Popen` is not allowed",
        prelude=False,
    ),
    _attempt(
        "py_forbidden_builtin_open",
        "open('/etc/passwd')",
        PYTHON,
        r"forbidden",
        prelude=False,
    ),
]

# -- attempts that need a run of their own (they change the worker or take it down) ------------------------------


def good_extra(n: int = 1) -> str:
    """Well-behaved assertions placed after the attempt: their verdicts must survive it."""
    return "".join(
        f"\n\ndef assert_zz_good_{i}(example, prompt, response):\n    return response == 'abc'\n" for i in range(n)
    )


SOLO: dict[str, tuple[str, str]] = {
    # name: (body, contained by)
    "orphan_guard_thread_hijack": (
        """
        real_time = W.time

        class Hijack:  # the orphan guard calls time.sleep(0.5) in a loop, in a thread started before confinement
            def sleep(self, seconds):
                try:
                    B.open(C + ".new", "w").write("pwned from the orphan guard thread")
                    os.kill(os.getppid(), 1)  # SIGHUP: counted apart from the batch's signals
                finally:
                    W.time = real_time
                real_time.sleep(seconds)

            def __getattr__(self, name):
                return getattr(real_time, name)

        W.time = Hijack()
        real_time.sleep(1.5)
        """,
        "confined before threads start",
    ),
    "dup2_over_protocol_pipes": (
        """
        gc = imp("gc")
        worker = [o for o in gc.get_objects() if type(o) is W.Worker][0]
        null = os.open("/dev/null", os.O_RDWR)
        os.dup2(null, worker.out)
        os.dup2(null, worker.reader.fd)
        """,
        PARENT,
    ),
    "forged_frames_garbage": (
        """
        gc = imp("gc")
        worker = [o for o in gc.get_objects() if type(o) is W.Worker][0]
        os.write(worker.out, b"\\x00\\x00\\x00\\x05hello")
        """,
        PARENT,
    ),
    "forged_frames_giant_length": (
        """
        gc = imp("gc")
        worker = [o for o in gc.get_objects() if type(o) is W.Worker][0]
        os.write(worker.out, b"\\xff\\xff\\xff\\xf0" + b"[" * 4096)
        imp("time").sleep(3)
        """,
        PARENT,
    ),
    "forged_frames_100mb_message": (
        """
        gc = imp("gc")
        worker = [o for o in gc.get_objects() if type(o) is W.Worker][0]
        worker.send(["c", 0, 0, None, "exception", "x" * (100 << 20), None, 0.0])
        imp("time").sleep(3)
        """,
        PARENT,
    ),
    "forged_cell_for_another_assertion": (
        """
        gc = imp("gc")
        worker = [o for o in gc.get_objects() if type(o) is W.Worker][0]
        worker.send(["c", 0, 0, True, None, None, None, 0.0])  # this cell
        worker.send(["c", 0, 1, False, None, None, None, 0.0])  # the next assertion's (truly True) cell
        worker.send = lambda message: None  # and nothing more from this worker
        """,
        FORGED,
    ),
    "log_symlink_to_dev_zero_then_crash": (
        """
        os.unlink(".worker.log")
        os.symlink("/dev/zero", ".worker.log")
        os.abort()
        """,
        PARENT,
    ),
    "log_huge_then_crash": (
        """
        chunk = "E" * (1 << 20) + "\\n"
        try:
            for _ in range(200):
                sys.stderr.write(chunk)
                sys.stderr.flush()
        except OSError:
            pass
        os.abort()
        """,
        RLIMIT,
    ),
    "print_1gb_to_stdout": (
        """
        chunk = "x" * (1 << 20)
        for _ in range(1024):
            B.print(chunk)
        """,
        RLIMIT,
    ),
    "deep_recursion": (
        """
        sys.setrecursionlimit(10**7)

        def down(n):
            return sorted([n], key=lambda x: down(x + 1))

        down(0)
        """,
        PARENT,
    ),
    "memory_bomb": (
        """
        hog = []
        while True:
            hog.append(bytearray(64 << 20))
        """,
        RLIMIT,
    ),
    "memfd_memory_beyond_memory_mb": (
        """
        chunk = b"m" * (1 << 20)
        fds = [os.memfd_create("hog") for _ in range(6)]
        for fd in fds:
            for _ in range(60):
                os.write(fd, chunk)  # 6 x 60 MB of RAM, outside the 192 MB address-space limit
        """,
        "seccomp",
    ),
    "thread_outlives_the_call": (
        """
        threading, time = imp("threading"), imp("time")

        def noisy():
            end = time.monotonic() + 3
            while time.monotonic() < end:
                B.print("still here")
                sum(range(10000))

        threading.Thread(target=noisy, daemon=True).start()
        """,
        PARENT,
    ),
    "cpu_spin": ("while True:\n    pass", PARENT),
}
