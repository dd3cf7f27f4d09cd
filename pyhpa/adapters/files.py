"""Reading a file the user named, with a bound: every manifest, snapshot, kubeconfig and trace goes through here.

A file argument may be anything the shell can name: a regular file, a pipe (``<(kubectl get pods -o yaml)``),
``/dev/stdin``, or a device that never ends (``/dev/zero``). Each is read in chunks up to a limit and refused
with one line (InputError naming the file) beyond it, so a wrong argument costs at most the limit in memory and
time, never the machine. A compressed trace (``.gz``, ``.bz2``, ``.xz``, ``.zip``, ``.tar*``: the suffixes pandas
infers, but ``.zst``, whose package pyhpa does not depend on) is decompressed with the same bound on what comes
out.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import stat
import tarfile
import zipfile
import zlib
from pathlib import Path

from .errors import InputError

#: the largest YAML/JSON file read (manifests, snapshots, ``kubectl get -o yaml`` lists, kubeconfigs): 32 MiB,
#: about 3,000 pods of ``kubectl get pods -o yaml`` (YAML parses at a few MB/s: a minute at most)
MAX_DOCUMENT_BYTES = 32 * 2**20
#: the largest trace read, after decompression: 256 MiB, about 8 million rows of a time and two columns
MAX_TRACE_BYTES = 256 * 2**20
_CHUNK = 2**20
#: compressed traces, by suffix (what pandas infers from the name)
COMPRESSED = (".tar.gz", ".tar.bz2", ".tar.xz", ".tar", ".gz", ".bz2", ".xz", ".zst", ".zip")


def size_text(n: int) -> str:
    """A byte count as people write it: ``64 MiB``, ``256 MiB``, ``1.5 GiB``."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} bytes"


def read_bytes(path: str | Path, limit: int, what: str) -> bytes:
    """The bytes of ``path``, at most ``limit`` of them (``what`` names the kind of file in the error, e.g. "a YAML
    or JSON file"). A regular file larger than ``limit`` is refused before it is read; anything else (a pipe, a
    device) is read up to ``limit`` bytes. InputError naming the file: missing, a folder, unreadable, too large."""
    file = str(path)
    try:
        with open(file, "rb") as f:
            mode = os.fstat(f.fileno()).st_mode
            if stat.S_ISDIR(mode):
                raise InputError("is a folder, not a file", file=file)
            regular = stat.S_ISREG(mode)
            if regular and os.fstat(f.fileno()).st_size > limit:
                raise InputError(f"larger than {size_text(limit)}, the limit for {what}", file=file)
            data = _read_up_to(f, limit + 1)
    except IsADirectoryError:
        raise InputError("is a folder, not a file", file=file) from None
    except FileNotFoundError:
        raise InputError("cannot read file: no such file", file=file) from None
    except OSError as err:
        raise InputError(f"cannot read file: {err.strerror or err}", file=file) from None
    if len(data) > limit:
        kind = "" if regular else "not a regular file, and "
        raise InputError(f"{kind}longer than {size_text(limit)}, the limit for {what}", file=file)
    return data


def read_trace_bytes(path: str | Path, limit: int = MAX_TRACE_BYTES) -> bytes:
    """The CSV bytes of a trace file, decompressed by its suffix (``COMPRESSED``), at most ``limit`` bytes before
    and after decompression. InputError naming the file: unreadable, corrupt or truncated, too large."""
    file = str(path)
    raw = read_bytes(file, limit, "a trace")
    suffix = next((s for s in COMPRESSED if file.lower().endswith(s)), "")
    if not suffix:
        return raw
    try:
        data = _read_up_to(_open_compressed(io.BytesIO(raw), suffix, file), limit + 1)
    except (EOFError, OSError, zlib.error, lzma.LZMAError, zipfile.BadZipFile, tarfile.TarError) as err:
        raise InputError(f"corrupt or truncated compressed file: {err}", file=file) from None
    if len(data) > limit:
        raise InputError(f"decompresses to more than {size_text(limit)}, the limit for a trace", file=file)
    return data


def _open_compressed(buffer: io.BytesIO, suffix: str, file: str):
    """A reader of the one file inside ``buffer`` (compressed as ``suffix`` says)."""
    if suffix.startswith(".tar"):
        archive = tarfile.open(fileobj=buffer, mode="r:*")
        members = [m for m in archive.getmembers() if m.isfile()]
        if len(members) != 1:
            raise InputError(f"a compressed trace holds one file, this archive {len(members)}", file=file)
        return archive.extractfile(members[0])
    if suffix == ".zip":
        archive = zipfile.ZipFile(buffer)
        names = [n for n in archive.namelist() if not n.endswith("/")]
        if len(names) != 1:
            raise InputError(f"a compressed trace holds one file, this archive {len(names)}", file=file)
        return archive.open(names[0])
    if suffix == ".zst":  # pandas would need the zstandard package, which pyhpa does not depend on
        raise InputError("a .zst trace is not read: give it as .csv, .csv.gz, .csv.bz2, .csv.xz or .zip", file=file)
    if suffix == ".gz":
        return gzip.GzipFile(fileobj=buffer)
    return bz2.BZ2File(buffer) if suffix == ".bz2" else lzma.LZMAFile(buffer)


def _read_up_to(f, n: int) -> bytes:
    """At most ``n`` bytes of ``f``, read in chunks (a device that never ends costs ``n`` bytes)."""
    parts, got = [], 0
    while got < n:
        chunk = f.read(min(_CHUNK, n - got))
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)
