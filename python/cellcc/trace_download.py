"""Downloading public trace sets (``cellcc traces download``): every file is fetched
from its set's source (or a mirror), checked against its pinned sha256 and installed
atomically; files already present with the right hash are kept (docs/traces.md)."""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cellcc._native import CellccError, UsageError
from cellcc.trace_sources import GITHUB_RAW, SETS, TraceFile, TraceSet

__all__ = ["DownloadError", "DownloadResult", "download"]


# -- download -------------------------------------------------------------------------


class DownloadError(CellccError):
    """A trace could not be downloaded or failed its checksum (the message names it)."""


@dataclass
class DownloadResult:
    path: Path
    status: str
    """``downloaded``, ``replaced`` (an existing file had the wrong sha256) or ``present``."""


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


#: Most bytes an archive download may bring (the sets list no archive size): a server
#: sending more is cut off instead of filling the disk.
MAX_ARCHIVE_BYTES = 2 << 30
#: Schemes ``--mirror`` may use.
MIRROR_SCHEMES = ("http://", "https://", "file://")


def _copy_limited(stream: Any, out: Any, limit: int, what: str, origin: str) -> Any:
    """Copy ``stream`` to ``out`` (returning the sha256 of the bytes), refusing more
    than ``limit`` bytes as they stream in: a server cannot fill the disk."""
    digest = hashlib.sha256()
    total = 0
    while chunk := stream.read(min(1 << 16, limit - total + 1)):
        total += len(chunk)
        if total > limit:
            raise DownloadError(
                f"{what}: {origin} sends more than the declared {limit:,} bytes; stopped "
                "there and wrote nothing"
            )
        digest.update(chunk)
        out.write(chunk)
    return digest


def _install(stream: Any, target: Path, expected: str, origin: str, size: int) -> None:
    """Copy ``stream`` to ``target`` through a temporary file, checking its size (as it
    streams) and its sha256."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        try:
            with os.fdopen(fd, "wb") as out:
                digest = _copy_limited(stream, out, size, str(target), origin)
                out.flush()
                os.fsync(out.fileno())
        except OSError as exc:
            raise DownloadError(f"{target}: copying {origin} failed: {exc}") from None
        got = digest.hexdigest()
        if got != expected:
            raise DownloadError(
                f"{target}: sha256 mismatch for {origin}: expected {expected}, got {got}; "
                "the file was not written"
            )
        tmp.replace(target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _open_url(url: str, what: str, timeout: float) -> Any:
    try:
        return urllib.request.urlopen(url, timeout=timeout)
    except ValueError as exc:  # not a URL urllib can open
        raise DownloadError(f"{what}: cannot download {url}: {exc}") from None
    except urllib.error.HTTPError as exc:
        exc.close()
        raise DownloadError(
            f"{what}: cannot download {url}: HTTP {exc.code} {exc.reason}"
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise DownloadError(f"{what}: cannot download {url}: {reason}") from None


def download(
    sets: Iterable[str],
    dest: str | os.PathLike[str],
    *,
    mirror: str | None = None,
    only: Sequence[str] = (),
    timeout: float = 60.0,
    progress: Callable[[DownloadResult], None] | None = None,
) -> list[DownloadResult]:
    """Fetch the named trace sets (see :mod:`cellcc.trace_sources`) into ``dest``.

    Files already present with the right sha256 are skipped; others are written through
    a temporary file and moved into place only after their sha256 matches. ``mirror``
    replaces the ``https://raw.githubusercontent.com`` base (same layout below it;
    ``file://`` URLs work). ``only`` restricts the download to these file names.
    """
    root = Path(dest)
    chosen = [_trace_set(name) for name in sets]
    wanted = set(only)
    known = {Path(f.dest).name for s in chosen for f in s.files}
    unknown = sorted(wanted - known)
    if unknown:
        raise UsageError(f"--only: no file named {', '.join(unknown)} in the chosen sets")
    if mirror is not None and not mirror.startswith(MIRROR_SCHEMES):
        raise UsageError(
            f"--mirror: expected a URL starting with {', '.join(MIRROR_SCHEMES)}, got {mirror!r}"
        )
    base = mirror or GITHUB_RAW
    results: list[DownloadResult] = []

    def report(result: DownloadResult) -> None:
        results.append(result)
        if progress is not None:
            progress(result)

    for trace_set in chosen:
        files = [f for f in trace_set.files if not wanted or Path(f.dest).name in wanted]
        todo: list[tuple[TraceFile, str]] = []
        for item in files:
            target = root / item.dest
            if target.is_file() and _sha256_of(target) == item.sha256:
                report(DownloadResult(target, "present"))
            else:
                todo.append((item, "replaced" if target.exists() else "downloaded"))
        if not todo:
            continue
        if trace_set.archive is None:
            for item, status in todo:
                url = trace_set.url(item.source, base)
                with _open_url(url, str(root / item.dest), timeout) as response:
                    _install(response, root / item.dest, item.sha256, url, item.size)
                report(DownloadResult(root / item.dest, status))
        else:
            _download_members(trace_set, todo, root, base, timeout, report)
    return results


def _trace_set(name: str) -> TraceSet:
    try:
        return SETS[name]
    except KeyError:
        raise UsageError(
            f"--set: unknown trace set {name!r}; expected one of: {', '.join(SETS)}, all"
        ) from None


def _download_members(
    trace_set: TraceSet,
    todo: list[tuple[TraceFile, str]],
    root: Path,
    base: str,
    timeout: float,
    report: Callable[[DownloadResult], None],
) -> None:
    """Download the set's archive once and extract only the listed members."""
    assert trace_set.archive is not None  # the caller checked
    url = trace_set.url(trace_set.archive.path, base)
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile(dir=root) as archive:
        with _open_url(url, f"{trace_set.name} archive", timeout) as response:
            try:
                _copy_limited(
                    response, archive, MAX_ARCHIVE_BYTES, f"{trace_set.name} archive", url
                )
            except OSError as exc:
                raise DownloadError(
                    f"{trace_set.name} archive: reading {url} failed: {exc}"
                ) from None
        archive.seek(0)
        try:
            members = zipfile.ZipFile(archive)
        except zipfile.BadZipFile:
            raise DownloadError(
                f"{trace_set.name} archive: {url} is not a zip archive (a Git LFS pointer "
                "or an error page?)"
            ) from None
        with members:
            for item, status in todo:
                target = root / item.dest
                try:
                    member = members.open(item.source)
                except KeyError:
                    raise DownloadError(f"{target}: {url} has no member {item.source}") from None
                with member:
                    _install(member, target, item.sha256, f"{url} → {item.source}", item.size)
                report(DownloadResult(target, status))
