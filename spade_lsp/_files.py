"""Files a user keeps beside a prompt: reading them within a size limit, and writing them safely.

Every file spade reads on a user's behalf (a prompt, its sidecar module, its examples, settings, the JSON a
command is given) goes through :func:`read_limited`: only regular files are read (a device, a fifo or a socket
is refused before anything blocks or floods memory, also behind a symlink), and at most ``limit + 1`` bytes
are ever read, so a sidecar symlinked to ``/dev/zero`` or a 30 GB examples file costs a one-line
:class:`~spade_lsp.errors.InputError`, never the memory of the process.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from spade_lsp.errors import DiskFullError, InputError

PROMPT_SUFFIXES: Final = (
    ".prompt.md",
    ".prompt.txt",
    ".prompt",
    ".prompty",
    ".prompt.json",
    ".prompt.yaml",
    ".prompt.yml",
)

# -- size limits, by kind of file ---------------------------------------------------------------------------
# A prompt's limit is the `max_prompt_bytes` setting (1 MB by default); git blobs of a prompt share it.
MAX_SIDECAR_BYTES: Final = 2_000_000
"""``NAME_assertions.py``: a few hundred generated assertions take tens of kB; 2 MB is far beyond any real one."""
MAX_EXAMPLES_BYTES: Final = 200_000_000
"""``NAME.examples.jsonl`` and imported examples (.jsonl, .csv): the largest benchmark file is 3.5 MB."""
MAX_DATA_BYTES: Final = 200_000_000
"""The JSON/JSONL a command is given: ``--versions``, ``--matrix``, ``taxonomy --jsonl``."""
MAX_SETTINGS_BYTES: Final = 1_000_000
"""``pyproject.toml``, ``spade.toml``, a judge pipeline's file."""
MAX_PROMPT_READ_BYTES: Final = 16_000_000
"""What a reader that learns the prompt's own limit only from its front matter reads at most (the language
server); the effective ``max_prompt_bytes`` is applied after."""

_KINDS: Final = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a fifo (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


def confine(root: Path, path: Path, what: str) -> Path:
    """``path`` when it resolves (links followed) inside the workspace at ``root``; else an
    :class:`~spade_lsp.errors.InputError` in one line, before anything is read or written. A repository's
    symlinks never make spade read or write elsewhere: a prompt linked to ``~/.ssh/config`` is refused, as is a
    sidecar, an examples file, a settings file or a ``.spade`` directory that points out of the workspace."""
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(path if path.is_absolute() else root / path))
    if real != real_root and not real.is_relative_to(real_root):
        raise InputError(f"{path}: {what} that resolves to {real}, outside the workspace {real_root}; spade reads "
                         "and writes only inside the workspace")  # fmt: skip
    return path


def confine_prompt(root: Path, prompt: Path) -> Path:
    """:func:`confine` for a prompt and the files kept beside it (its sidecar module and examples)."""
    confine(root, prompt, "a prompt")
    confine(root, sidecar_path(prompt), "a sidecar module")
    confine(root, examples_path(prompt), "an examples file")
    return prompt


def prompt_stem(prompt: Path) -> str:
    """``emails.prompt.md`` -> ``emails``: the NAME that sidecar files share."""
    name = prompt.name
    for suffix in PROMPT_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return prompt.stem


def examples_path(prompt: Path) -> Path:
    """``NAME.examples.jsonl`` beside the prompt."""
    return prompt.with_name(f"{prompt_stem(prompt)}.examples.jsonl")


def sidecar_path(prompt: Path) -> Path:
    """``NAME_assertions.py`` beside the prompt (NAME made a valid module name)."""
    return prompt.with_name(f"{re.sub(r'[^0-9A-Za-z_]', '_', prompt_stem(prompt))}_assertions.py")


# -- reading ------------------------------------------------------------------------------------------------


def format_size(size: int, *, limit: bool = False) -> str:
    """``5300000`` -> ``5.3 MB``; a limit is written exactly (``1 MB``, ``0.5 MB``, ``20 bytes``)."""
    if size >= 100_000:
        return f"{size / 1e6:g} MB" if limit else f"{size / 1e6:.1f} MB"
    if size >= 1000:
        return f"{size / 1e3:g} kB" if limit else f"{size / 1e3:.1f} kB"
    return f"{size} byte{'' if size == 1 else 's'}"


def _kind(mode: int) -> str | None:
    """What a non-regular file is ("a fifo (named pipe)"), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refusal(path: Path, kind: str, what: str) -> str:
    target = ""
    if path.is_symlink():
        try:
            target = f" (a symlink to {os.readlink(path)})"
        except OSError:
            target = " (a symlink)"
    return f"{path}: is {kind}{target}, not a regular file; spade reads {what} only from a regular file"


def _too_large(path: Path, size: int | None, limit: int, what: str, hint: str | None) -> str:
    measured = format_size(size) if size is not None else f"more than {format_size(limit, limit=True)}"
    advice = f" ({hint})" if hint else ""
    return f"{path}: {measured} is larger than the {format_size(limit, limit=True)} limit for {what}{advice}"


def _open_regular(path: Path, *, limit: int, what: str, hint: str | None, error: type[InputError]) -> int:
    """A descriptor of the regular file at ``path`` (at most ``limit`` bytes), or ``error`` in one line."""
    try:
        before = os.stat(path)
        kind = _kind(before.st_mode)
        if kind is not None:
            raise error(_refusal(path, kind, what))
        if before.st_size > limit:
            raise error(_too_large(path, before.st_size, limit, what, hint))
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError as missing:
        raise error(f"{path}: no such file") from missing
    except PermissionError as denied:
        raise error(f"{path}: permission denied") from denied
    except OSError as failure:
        raise error(f"{path}: cannot read: {failure.strerror or failure}") from failure
    try:
        opened = os.fstat(descriptor)
        kind = _kind(opened.st_mode)
        if kind is not None:
            raise error(_refusal(path, kind, what))
        if opened.st_size > limit:
            raise error(_too_large(path, opened.st_size, limit, what, hint))
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def read_limited(
    path: Path,
    *,
    limit: int,
    what: str,
    hint: str | None = None,
    error: type[InputError] = InputError,
) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them; anything else is ``error`` with a
    one-line message naming the file (and, for a file too large, the limit and ``hint``: the setting that
    raises it).

    ``what`` names the kind of file in messages ("a prompt", "the sidecar module"). Symlinks are followed,
    but what they lead to must be a regular file: a device, a fifo, a socket or a directory is refused from
    its ``stat``, before it is opened, and again from ``fstat`` after a non-blocking open (so a file swapped
    for a fifo in between cannot block the reader). At most ``limit + 1`` bytes are read, so a file that
    grows while it is read is refused as well.
    """
    return b"".join(read_chunks(path, limit=limit, what=what, hint=hint, error=error))


def read_chunks(
    path: Path,
    *,
    limit: int,
    what: str,
    hint: str | None = None,
    error: type[InputError] = InputError,
    size: int = 1 << 20,
) -> Iterator[bytes]:
    """:func:`read_limited` a chunk at a time, for a reader that keeps only what it needs of a large file (an
    examples file of a million lines, say): the same checks, the same limit."""
    descriptor = _open_regular(path, limit=limit, what=what, hint=hint, error=error)
    try:
        remaining = limit + 1
        while remaining > 0:
            try:
                chunk = os.read(descriptor, min(remaining, size))
            except OSError as failure:
                raise error(f"{path}: cannot read: {failure.strerror or failure}") from failure
            if not chunk:
                return
            remaining -= len(chunk)
            if remaining <= 0:  # it grew while it was read
                raise error(_too_large(path, None, limit, what, hint))
            yield chunk
    finally:
        os.close(descriptor)


def read_limited_text(
    path: Path,
    *,
    limit: int,
    what: str,
    hint: str | None = None,
    error: type[InputError] = InputError,
    encoding: str = "utf-8",
    errors: str = "strict",
) -> str:
    """:func:`read_limited`, decoded; invalid text (with ``errors="strict"``) is ``error`` naming the byte and
    its line."""
    data = read_limited(path, limit=limit, what=what, hint=hint, error=error)
    return decode_text(data, path, error=error, encoding=encoding, errors=errors)


def decode_text(
    data: bytes,
    source: Path | str,
    *,
    error: type[InputError] = InputError,
    encoding: str = "utf-8",
    errors: str = "strict",
) -> str:
    """``data`` as text; invalid text is ``error`` naming the byte and its line."""
    try:
        return data.decode(encoding, errors)
    except UnicodeDecodeError as invalid:
        line = data[: invalid.start].count(b"\n") + 1
        raise error(
            f"{source}: not valid UTF-8 (byte 0x{data[invalid.start]:02x} on line {line}); save it as UTF-8"
        ) from invalid


def read_sidecar_text(path: Path) -> str | None:
    """The sidecar module's text, or None when there is none; a module that cannot be read (too large, not a
    regular file, not UTF-8) is an :class:`~spade_lsp.errors.InputError`."""
    if not os.path.lexists(path):
        return None
    return read_limited_text(path, limit=MAX_SIDECAR_BYTES, what="a sidecar module")


# -- writing ------------------------------------------------------------------------------------------------


def make_private_dir(path: Path) -> Path:
    """``path`` (and its parents) as a directory only its owner can enter, whatever the umask: ``.spade/`` holds
    the store, the daemon's socket and its log."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        if path.stat().st_mode & 0o777 != 0o700:
            os.chmod(path, 0o700)
    except PermissionError:  # someone else's directory: it stays as it was; not ours to change
        pass
    return path


def disk_full_error(path: Path | str, failure: OSError) -> DiskFullError | None:
    """The one-line error for a write that failed because the disk (or a quota, or the process's file size
    limit) is full, or None for any other failure."""
    if failure.errno in (errno.ENOSPC, errno.EDQUOT):
        return DiskFullError(f"the disk is full: nothing was written ({path}: {failure.strerror})")
    if failure.errno == errno.EFBIG:
        return DiskFullError(
            f"the disk is full for this process (file size limit reached): nothing was written ({path})"
        )
    return None


def atomic_write_text(path: Path, text: str) -> None:
    """Write beside the target and rename over it, so an interrupted write never leaves half a file. A full
    disk is a :class:`~spade_lsp.errors.DiskFullError` (also an ``OSError``) and the target is left as it
    was."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as failure:
        mapped = disk_full_error(path, failure)
        if mapped is None:
            raise
        raise mapped from failure
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException as failure:
        Path(temporary).unlink(missing_ok=True)
        mapped = disk_full_error(path, failure) if isinstance(failure, OSError) else None
        if mapped is None:
            raise
        raise mapped from failure
