"""Writing results to disk: atomically, and with the provenance that made them.

Every file is written to a temporary file in the destination directory and moved into
place with ``os.replace``, so a reader never sees a half-written artifact and an
interrupted run leaves the previous file intact. Every artifact set carries a
``provenance.json`` (git revision of the cellcc checkout, versions, seed, scenario text,
command line); Parquet files also embed it in their schema metadata.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import json
import math
import os
import platform
import re
import shlex
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import IO, Any, NoReturn

__all__ = [
    "PROVENANCE_FILE",
    "TEMP_SUFFIX",
    "clean_temporaries",
    "confined",
    "file_name",
    "git_revision",
    "json_ready",
    "output_lock",
    "package_version",
    "provenance",
    "write_csv_atomic",
    "write_json_atomic",
    "write_parquet_atomic",
    "write_text_atomic",
]

PROVENANCE_FILE = "provenance.json"
#: Key under which Parquet schema metadata carries the provenance JSON.
PARQUET_PROVENANCE_KEY = b"cellcc.provenance"
#: Temporary files of the atomic writers are ``.<name>.<random>.tmp`` beside the target.
TEMP_SUFFIX = ".tmp"


# -- output paths ---------------------------------------------------------------------
#
# Every file name built from user text (a sweep's name, a scheme label, a facet value, an
# experiment id, a scheme name) goes through file_name, and every such path through
# confined: a name can neither hold a directory separator nor climb out of the output
# directory, however the text is written.

#: Characters a file name made from user text keeps: word characters, ``._+=:,@()-``
#: and spaces; anything else (``/``, ``\``, control characters, ...) becomes ``-``.
_UNSAFE_NAME = re.compile(r"[^\w.+=:,@() -]")
#: Longest file name made from user text (before the hash that keeps names distinct).
MAX_NAME_CHARS = 80


def file_name(text: str) -> str:
    """A single file-name component made from user text.

    A plain name (word characters, ``._+=:,@()-`` and spaces, not starting with ``.``
    or ``-``, at most 80 characters) is kept as it is, so the files of ordinary sweeps
    keep their names. Anything else has every other character replaced by ``-``, its
    leading dots and dashes removed, and the first 8 hex digits of the text's sha256
    appended, so that two different texts never share a name: ``../../x`` becomes
    ``x-<hash>``, ``a/b`` becomes ``a-b-<hash>``.
    """
    import hashlib

    text = str(text)
    cleaned = _UNSAFE_NAME.sub("-", text).lstrip(".-").strip()
    if text and cleaned == text and len(text) <= MAX_NAME_CHARS:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    stem = cleaned[:MAX_NAME_CHARS].rstrip()
    return f"{stem}-{digest}" if stem else digest


def confined(root: str | os.PathLike[str], *parts: str | os.PathLike[str]) -> Path:
    """``root / parts``, refused (:class:`cellcc.UsageError`) unless it resolves inside
    ``root`` (symbolic links followed): the check every path built from user text goes
    through before anything is written there."""
    from cellcc._native import UsageError

    base = Path(root)
    target = base.joinpath(*parts)
    inside = base.resolve()
    resolved = target.resolve()
    if resolved != inside and inside not in resolved.parents:
        raise UsageError(
            f"{target}: outside the output directory {base}; names made from labels, "
            "facets and sweep names must stay inside it"
        )
    return target


def clean_temporaries(directory: str | os.PathLike[str]) -> int:
    """Remove the temporary files the atomic writers left in ``directory`` when killed
    (``.<name>.<random>.tmp``, never a real name); return how many. Call it only while
    holding the directory's lock (:func:`output_lock`), or a live writer's
    temporary could go."""
    removed = 0
    folder = Path(directory)
    if folder.is_dir():
        for leftover in folder.glob(f".*{TEMP_SUFFIX}"):
            if _TEMPORARY.match(leftover.name) and leftover.is_file():
                leftover.unlink(missing_ok=True)
                removed += 1
    return removed


#: The name mkstemp gives the atomic writers' temporaries: ``.<name>.<8 random>.tmp``.
_TEMPORARY = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")
#: The lock file a sweep holds in its output directory (:func:`output_lock`).
LOCK_FILE = ".cellcc.lock"
#: Output directories this process holds locked, with how many holders nest there.
_HELD: dict[Path, int] = {}


@contextlib.contextmanager
def output_lock(root: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold ``root`` (created if missing) for this process: an exclusive ``flock`` on
    ``<root>/.cellcc.lock``, which records the holder's PID. A second process asking for
    the same directory gets a :class:`cellcc.UsageError` naming it and the holder; the
    same process may nest (a sweep inside ``cellcc sweep``). The kernel drops the lock
    when the holder exits, even on ``kill -9``."""
    from cellcc._native import UsageError

    try:
        import fcntl
    except ImportError:  # not POSIX: no lock, as before
        yield Path(root)
        return
    folder = Path(root)
    folder.mkdir(parents=True, exist_ok=True)
    key = folder.resolve()
    if key in _HELD:
        _HELD[key] += 1
        try:
            yield folder
        finally:
            _HELD[key] -= 1
        return
    fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise UsageError(
                f"{folder}: another cellcc process (PID {holder}) is writing into this "
                "output directory; wait for it to finish or choose another --out"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        _HELD[key] = 1
        try:
            yield folder
        finally:
            del _HELD[key]
    finally:
        os.close(fd)  # releases the lock


def _written_in_place(target: Path) -> bool:
    """Whether ``target`` is a character device or a FIFO (``/dev/null``, ``/dev/stdout``,
    a named pipe; through symlinks): it is written in place, since moving a file onto it
    would replace the device (as root, ``/dev/null`` itself). A block device or a socket
    is refused."""
    try:
        mode = target.stat().st_mode
    except OSError:
        return False
    if stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
        raise OSError(
            errno.EINVAL,
            "is a block device or a socket; give a file, a character device or a FIFO",
            os.fspath(target),
        )
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


@contextlib.contextmanager
def _atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; move it onto ``path`` if the block succeeds
    (a character device or a FIFO is yielded itself and written in place)."""
    target = Path(path)
    if _written_in_place(target):
        yield target
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp_name = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=TEMP_SUFFIX, dir=target.parent
        )
    except OSError as exc:
        _raise_named(exc, target)
    # mkstemp creates 0600; give the result the mode a plain open() would (0666 & ~umask)
    # so reports stay readable by whoever serves them.
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        tmp.replace(target)  # os.replace: atomic within one file system
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        _raise_named(exc, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _raise_named(exc: OSError, target: Path) -> NoReturn:
    """Raise ``exc``, naming ``target`` when the disk (or quota) is full: the writer
    reports that on the temporary file, or on no file at all (pyarrow), never on the
    file being written."""
    full = exc.errno in (errno.ENOSPC, errno.EDQUOT) or "No space left" in str(exc)
    if not full:
        raise exc
    code = exc.errno if exc.errno in (errno.ENOSPC, errno.EDQUOT) else errno.ENOSPC
    raise OSError(code, f"cannot write: {os.strerror(code)}", os.fspath(target)) from exc


def _write_with(path: str | os.PathLike[str], mode: str, writer: Callable[[IO[Any]], None]) -> Path:
    target = Path(path)
    with _atomic_path(target) as tmp:
        kwargs = {"encoding": "utf-8", "newline": "\n"} if "b" not in mode else {}
        with tmp.open(mode, **kwargs) as handle:
            writer(handle)
            handle.flush()
            if stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                os.fsync(handle.fileno())
    return target


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write UTF-8 text atomically."""
    return _write_with(path, "w", lambda handle: handle.write(text))


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write bytes atomically."""
    return _write_with(path, "wb", lambda handle: handle.write(data))


def json_ready(value: Any) -> Any:
    """Convert a value to plain JSON types: NaN/inf become ``None``, numpy scalars become
    Python numbers, paths become strings, mappings and sequences are converted deeply."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_ready(v) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return json_ready(value.item())
    if hasattr(value, "tolist") and callable(value.tolist):  # numpy array
        return json_ready(value.tolist())
    if isinstance(value, _dt.datetime | _dt.date):
        return value.isoformat()
    return str(value)


def write_json_atomic(path: str | os.PathLike[str], obj: Any) -> Path:
    """Write ``obj`` as indented, strict JSON (no NaN) atomically."""
    text = json.dumps(json_ready(obj), indent=2, allow_nan=False, ensure_ascii=False) + "\n"
    return write_text_atomic(path, text)


def write_csv_atomic(path: str | os.PathLike[str], frame: Any) -> Path:
    """Write a DataFrame (or a result table of :mod:`cellcc._columns`) as CSV (no index,
    full float precision) atomically."""
    return _write_with(path, "w", lambda handle: frame.to_csv(handle, index=False))


def write_parquet_atomic(
    path: str | os.PathLike[str], frame: Any, *, provenance: Mapping[str, Any] | None = None
) -> Path:
    """Write a DataFrame (or a result table of :mod:`cellcc._columns`) as Parquet
    atomically, embedding ``provenance`` in its metadata. A result table of known column
    kinds is encoded by the core (no pandas or pyarrow import); anything else goes
    through pyarrow."""
    from cellcc._columns import Table

    metadata: dict[str, str] = {}
    if provenance is not None:
        metadata[PARQUET_PROVENANCE_KEY.decode()] = json.dumps(json_ready(provenance))
    if isinstance(frame, Table):
        encoded = frame.encode_parquet(metadata)
        if encoded is not None:
            return write_bytes_atomic(path, encoded)
        frame = frame.frame()
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    if metadata:
        merged = dict(table.schema.metadata or {})
        merged.update({k.encode(): v.encode() for k, v in metadata.items()})
        table = table.replace_schema_metadata(merged)
    target = Path(path)
    with _atomic_path(target) as tmp:
        pq.write_table(table, tmp)
    return target


def save_figure_atomic(figure: Any, path: str | os.PathLike[str], *, dpi: int = 120) -> Path:
    """Save a matplotlib figure atomically (format from the suffix of ``path``)."""
    target = Path(path)
    fmt = target.suffix.lstrip(".") or "png"
    with _atomic_path(target) as tmp:
        # Fixed metadata keeps PNGs byte-identical across runs (no creation time stamp).
        metadata = {"Software": None} if fmt == "png" else None
        figure.savefig(tmp, format=fmt, dpi=dpi, metadata=metadata)
    return target


@cache
def git_revision() -> str:
    """Git revision of the cellcc checkout this package runs from, or ``"unknown"``.

    Only a repository whose top level holds cellcc's own sources counts: an installed
    package that happens to live inside some other repository reports ``"unknown"``. A
    checkout with uncommitted changes gets a ``-dirty`` suffix.
    """
    here = Path(__file__).resolve().parent

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args],
                cwd=here,
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    top = git("rev-parse", "--show-toplevel")
    if not top or not (Path(top) / "crates" / "cellcc-py" / "Cargo.toml").is_file():
        return "unknown"
    revision = git("rev-parse", "HEAD")
    if not revision:
        return "unknown"
    status = git("status", "--porcelain", "--untracked-files=no")
    return f"{revision}-dirty" if status else revision


def package_version() -> str:
    """Version of the installed ``cellcc`` distribution (or of the core if not installed)."""
    from cellcc._native import core_version

    return _distribution_version("cellcc") or core_version() or "unknown"


def _distribution_version(name: str) -> str | None:
    """``importlib.metadata.version(name)``, or None if ``name`` is not installed."""
    version = _dist_info_version(name)
    if version is not None:
        return version
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _dist_info_version(name: str) -> str | None:
    """The version importlib.metadata finds for ``name`` when its ``.dist-info``
    directory is in a directory on ``sys.path`` (the usual install), read without
    importing importlib.metadata (~20 ms of CPU, a tenth of ``cellcc --version``).

    It searches as importlib.metadata does: ``sys.path`` in order, each directory in
    listing order, names normalized alike. None, and importlib.metadata decides, when
    anything else could come first: another distribution finder, a path entry that is
    not a directory (a zip), an egg, or no ``Version`` in ``METADATA``."""
    import importlib.machinery

    finders = [f for f in sys.meta_path if hasattr(f, "find_distributions")]
    if finders != [importlib.machinery.PathFinder]:
        return None
    wanted = _normalized(name)
    for entry in sys.path:
        root = Path(entry or ".")
        if root.name.lower().endswith(".egg"):
            return None
        try:
            children = [child.name for child in root.iterdir()]
        except NotADirectoryError:
            return None
        except OSError:
            continue  # importlib.metadata skips a missing directory too
        for child in children:
            low = child.lower()
            if not low.endswith((".dist-info", ".egg-info")):
                continue
            if _normalized(low.rpartition(".")[0].partition("-")[0]) != wanted:
                continue
            if low.endswith(".egg-info"):
                return None
            try:
                with (root / child / "METADATA").open(encoding="utf-8") as handle:
                    for line in handle:
                        if line[:1] in (" ", "\t"):
                            continue  # a folded header's next line
                        key, sep, value = line.partition(":")
                        if not sep:
                            break  # the end of the headers
                        if key.lower() == "version":
                            return value.strip()
            except OSError:
                return None
            return None
    return None


def _normalized(name: str) -> str:
    """A distribution name as importlib.metadata compares them (PEP 503, ``_``)."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def command_line() -> str:
    """The command line of this process, shell-quoted."""
    argv = list(sys.argv)
    if argv and argv[0]:
        argv[0] = Path(argv[0]).name
    return shlex.join(argv)


def provenance(
    *,
    seed: int | None,
    scenario_text: str | None = None,
    command: str | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The record saved next to every result: what made it and how to make it again."""
    from cellcc._native import core_version

    record: dict[str, Any] = {
        "cellcc_version": package_version(),
        "core_version": core_version(),
        "git_revision": git_revision(),
        "seed": seed,
        "command": command if command is not None else command_line(),
        "created_utc": _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat(),
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
        "versions": {
            name: _distribution_version(name)
            for name in ("numpy", "pandas", "pyarrow", "matplotlib")
        },
    }
    if scenario_text is not None:
        record["scenario"] = scenario_text
    if extra:
        record.update(extra)
    return record
