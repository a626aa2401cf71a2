"""The archive's zip container (compress.archive): entries as `write` makes them (a fixed
date: the same collection gives the same bytes), and read back within the caps of
compress.archive_format (the directory's size before zipfile reads it, each entry's bytes)."""
import zipfile
import zlib

from . import archive_format as F
from .archive_format import ArchiveError


def entry_info(name: str) -> zipfile.ZipInfo:
    """An entry with a fixed date (1980-01-01): the same collection gives the same bytes."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.external_attr = 0o644 << 16
    return info


def check_directory(fh, path: str) -> None:
    """The zip's end record, read before zipfile reads the directory it points to: at most
    MAX_ENTRIES entries in at most MAX_ENTRIES x DIRECTORY_ENTRY_BYTES bytes."""
    end_record = getattr(zipfile, "_EndRecData", None)   # what zipfile itself reads first
    if end_record is None:
        return
    try:
        rec = end_record(fh)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        rec = None
    if rec is None:
        raise ArchiveError("%s is not a zeal archive (not a zip file)" % path)
    entries, size = rec[zipfile._ECD_ENTRIES_TOTAL], rec[zipfile._ECD_SIZE]
    if entries > F.MAX_ENTRIES or size > F.MAX_ENTRIES * F.DIRECTORY_ENTRY_BYTES:
        raise ArchiveError("%s: its zip directory lists %d entries in %d bytes; a zeal archive "
                           "has at most %d entries (1 + profiles + streams)"
                           % (path, entries, size, F.MAX_ENTRIES))
    fh.seek(0)


def read_entry(z: zipfile.ZipFile, path: str, name: str, cap: int, why: str) -> bytearray:
    """An entry's bytes, at most `cap` of them (its declared size checked first, then read a
    chunk at a time: never more than cap + 1 bytes held)."""
    try:
        info = z.getinfo(name)
    except KeyError:
        raise ArchiveError("%s: entry %s is missing" % (path, name)) from None
    if info.flag_bits & 0x1:
        raise ArchiveError("%s: entry %s is encrypted" % (path, name))
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise ArchiveError("%s: entry %s uses zip compression method %d; a zeal archive's "
                           "entries are stored or deflated" % (path, name, info.compress_type))
    if info.file_size > cap:
        raise ArchiveError("%s: entry %s is %d bytes; at most %d (%s)"
                           % (path, name, info.file_size, cap, why))
    out = bytearray()
    try:
        with z.open(info) as fh:
            while True:
                chunk = fh.read(min(F.READ_CHUNK, cap + 1 - len(out)))
                if not chunk:
                    break
                out += chunk
                if len(out) > cap:
                    raise ArchiveError("%s: entry %s holds more than %d bytes (%s)"
                                       % (path, name, cap, why))
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError,
            NotImplementedError, ValueError) as exc:
        raise ArchiveError("%s: entry %s is damaged (%s)" % (path, name, exc)) from None
    return out
