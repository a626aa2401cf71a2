"""Checking what an archive's manifest says before believing it (the limits of
compress.archive_format): its JSON read within its nesting cap and integers only, every field's
type, range and count, the frame table's runs before any is expanded, and the reports the frame
table gives each stream."""
import json
import re
from typing import Dict

import numpy as np

from ... import wire
from . import archive_format as F
from .archive_format import ArchiveError
from .archive_frames import unruns

_HEX_ID = re.compile(r"(?:[0-9a-fA-F]{2}){1,8}")
FINGERPRINT = re.compile(r"[0-9a-f]{64}")
_ENTRY = re.compile(r"streams/[0-9]{1,9}")
_CODEC = re.compile(r"[a-z0-9_]{1,32}")
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_SET = re.compile(r"[0-9a-f]{%d}" % F.SET_HEX)
VOLUME_KEYS = ("volume", "volumes", "set")


def _int(v, lo: int = F.INT64_MIN, hi: int = F.INT64_MAX) -> bool:
    """An integer (never a bool) in lo..hi."""
    return type(v) is int and lo <= v <= hi


def _hex_id(v) -> bool:
    """A device id as the manifest writes it: 1 to 8 bytes in hex."""
    return type(v) is str and _HEX_ID.fullmatch(v) is not None


def _damaged(what: str) -> ArchiveError:
    return ArchiveError("manifest: %s is missing or damaged" % what)


def _past(what: str, n, cap: int) -> ArchiveError:
    return ArchiveError("manifest: %s %s; an archive holds at most %d (the limits of "
                        "zeal.analysis.compress.archive)" % (n, what, cap))


def _json_depth(raw) -> int:
    """The deepest nesting of arrays and objects in a JSON text, without parsing it (strings
    removed, then a running count of the brackets, a chunk at a time)."""
    brackets = _STRING.sub(b"", bytes(raw)).translate(None, _NOT_BRACKETS)
    deepest = depth = 0
    for at in range(0, len(brackets), F.READ_CHUNK):
        a = np.frombuffer(brackets, dtype=np.uint8, count=min(F.READ_CHUNK, len(brackets) - at),
                          offset=at)
        steps = np.where((a == ord("[")) | (a == ord("{")), 1, -1).astype(np.int64)
        run = np.cumsum(steps) + depth
        deepest, depth = max(deepest, int(run.max())), int(run[-1])
    return deepest


class _NotAnInteger(ValueError):
    pass


def _no_float(text):
    raise _NotAnInteger(text)


def parse_manifest(raw) -> dict:
    if _json_depth(raw) > F.MAX_DEPTH:
        raise ArchiveError("the manifest nests deeper than %d levels (version %d nests 4)"
                           % (F.MAX_DEPTH, F.VERSION))
    try:
        text = bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise ArchiveError("the manifest is not JSON (not UTF-8)") from None
    try:
        return json.loads(text, parse_float=_no_float, parse_constant=_no_float)
    except _NotAnInteger as exc:
        raise ArchiveError("the manifest holds the number %s; its numbers are integers"
                           % str(exc)[:40]) from None
    except (ValueError, RecursionError):
        raise ArchiveError("the manifest is not JSON") from None


def manifest_checked(doc) -> dict:
    """The manifest, every field's type, range and count checked (ArchiveError otherwise)."""
    if not isinstance(doc, dict) or doc.get("format") != F.FORMAT:
        raise ArchiveError("not a zeal archive (its manifest is not a %s manifest)" % F.FORMAT)
    if doc.get("version") not in F.VERSIONS or type(doc.get("version")) is not int:
        raise ArchiveError("archive version %r; this zeal reads versions %s"
                           % (doc.get("version"), " and ".join(map(str, F.VERSIONS))))
    need = {"source": str, "profiles": list, "devices": list, "streams": list}
    for key, kind in need.items():
        if not isinstance(doc.get(key), kind):
            raise _damaged(key)
    if doc["source"] not in ("database", "reports"):
        raise ArchiveError("manifest: unknown source %r" % doc["source"][:40])
    fps, devices, streams = doc["profiles"], doc["devices"], doc["streams"]
    if len(fps) > F.MAX_PROFILES:
        raise _past("profiles", len(fps), F.MAX_PROFILES)
    if not fps or not all(type(f) is str and FINGERPRINT.fullmatch(f) for f in fps) \
            or len(set(fps)) != len(fps):
        raise _damaged("the profile list")
    if len(devices) > F.MAX_DEVICES:
        raise _past("devices", len(devices), F.MAX_DEVICES)
    if not all(map(_hex_id, devices)) or len(set(devices)) != len(devices):
        raise _damaged("the device list (ids in hex)")
    if len(streams) > F.MAX_STREAMS:
        raise _past("streams", len(streams), F.MAX_STREAMS)
    database = doc["source"] == "database"
    profile_set, total, symbols, keys, entries = set(fps), 0, 0, set(), set()
    for s in streams:
        if not (isinstance(s, dict) and type(s.get("entry")) is str
                and _ENTRY.fullmatch(s["entry"]) and type(s.get("codec")) is str
                and _CODEC.fullmatch(s["codec"]) and s.get("profile") in profile_set
                and type(s.get("vector")) is bool and _int(s.get("n"), 1)
                and (_int(s.get("device"), 0, len(devices) - 1) if database
                     else s.get("device") is None and not s["vector"])
                and ("symbols" not in s or (doc["version"] >= 2
                                            and _int(s["symbols"], 1, F.MAX_SYMBOLS)))):
            raise ArchiveError("manifest: a stream entry is damaged")
        key = (s["profile"], s["device"], s["vector"])
        if key in keys or s["entry"] in entries:
            raise ArchiveError("manifest: two streams for one device, profile and mode")
        keys.add(key)
        entries.add(s["entry"])
        total += s["n"]
        if total > F.MAX_REPORTS:
            raise _past("reports or more", total, F.MAX_REPORTS)
        symbols += s.get("symbols", s["n"])
        if symbols > F.MAX_SYMBOLS:
            raise _past("symbols or more", symbols, F.MAX_SYMBOLS)
    if not streams:
        raise ArchiveError("manifest: no streams")
    _volume_checked(doc)
    if not database:
        if len(fps) != 1 or devices:
            raise ArchiveError("manifest: a reports file's archive has one profile, no devices")
        return doc
    if not (isinstance(doc.get("frames"), dict) and isinstance(doc.get("losses"), list)
            and isinstance(doc.get("statuses"), list) and _int(doc.get("link_bytes"), 0)
            and all(isinstance(doc["frames"].get(c), list) for c in F.COLUMNS)):
        raise ArchiveError("manifest: the frame table or events are missing or damaged")
    losses, statuses = doc["losses"], doc["statuses"]
    if len(losses) > F.MAX_LOSSES:
        raise _past("loss entries", len(losses), F.MAX_LOSSES)
    for e in losses:
        if not (isinstance(e, list) and len(e) == 3 and (e[0] is None or _hex_id(e[0]))
                and e[1] in F.LOSS_KINDS and _int(e[2])):
            raise _damaged("a loss entry")
    if len(statuses) > F.MAX_STATUSES:
        raise _past("STATUS events", len(statuses), F.MAX_STATUSES)
    for e in statuses:
        if not (isinstance(e, list) and len(e) == 2 and (e[0] is None or _hex_id(e[0]))
                and type(e[1]) is str and len(e[1]) <= F.MAX_STATUS_DETAIL):
            raise _damaged("a STATUS entry (device, detail of at most %d characters)"
                           % F.MAX_STATUS_DETAIL)
    if doc.get("volume", 1) > 1 and (losses or statuses or doc["link_bytes"]):
        raise ArchiveError("manifest: volume %d holds events or link bytes; a set keeps them "
                           "in volume 1" % doc["volume"])
    return doc


def _volume_checked(doc: dict) -> None:
    """A volume of a set (compress.archive_volumes): "volume", "volumes" and "set" all three
    or none; 1 <= volume <= volumes <= MAX_VOLUMES, set SET_HEX hex digits; a database's."""
    present = [k for k in VOLUME_KEYS if k in doc]
    if not present:
        return
    if len(present) != len(VOLUME_KEYS):
        raise ArchiveError("manifest: a volume of a set has \"volume\", \"volumes\" and "
                           "\"set\"; this one has %s only" % ", ".join(present))
    if not (_int(doc["volumes"], 1, F.MAX_VOLUMES) and _int(doc["volume"], 1, doc["volumes"])
            and type(doc["set"]) is str and _SET.fullmatch(doc["set"])):
        raise ArchiveError("manifest: the volume keys are damaged (volume 1 to volumes, "
                           "volumes 1 to %d, set %d hex digits)" % (F.MAX_VOLUMES, F.SET_HEX))
    if doc["source"] != "database":
        raise ArchiveError("manifest: only a database's archive comes in volumes")


def frame_columns(m: dict) -> Dict[str, np.ndarray]:
    """The frame table's columns (int64), every run checked first: integers, lengths >= 1
    summing to at most MAX_FRAMES frames, every value in its column's range (device and
    profile: an index into their lists; count: 1..wire.MAX_COUNT; boot, seq: int64) -- the
    ends of an arithmetic run are its extremes. Nothing is expanded before all of it holds."""
    ranges = {"device": (0, len(m["devices"]) - 1), "profile": (0, len(m["profiles"]) - 1),
              "vector": (0, 1), "count": (1, wire.MAX_COUNT), "debug": (0, 1),
              "boot": (F.INT64_MIN, F.INT64_MAX), "seq": (F.INT64_MIN, F.INT64_MAX)}
    frames = None
    for name in F.COLUMNS:
        lo, hi = ranges[name]
        length = 0
        for run in m["frames"][name]:
            if not (type(run) is list and len(run) == 3 and _int(run[0]) and _int(run[1])
                    and _int(run[2], 1)):
                raise ArchiveError("manifest: frame column %s is damaged" % name)
            a, step, k = run
            length += k
            if length > F.MAX_FRAMES:
                raise _past("frames or more", length, F.MAX_FRAMES)
            if not (lo <= a <= hi and lo <= a + step * (k - 1) <= hi):
                raise ArchiveError("manifest: frame column %s has a value outside %d..%d"
                                   % (name, lo, hi))
        if frames is not None and length != frames:
            raise ArchiveError("manifest: frame columns of different lengths")
        frames = length
    return {name: unruns(m["frames"][name], name) for name in F.COLUMNS}



def reports_match(m: dict, cols: Dict[str, np.ndarray]) -> None:
    """Every stream's n equals the reports the frame table gives its device, profile and
    mode, and every frame's reports have a stream: checked before any stream is decoded."""
    ndev = max(len(m["devices"]), 1)
    key = (cols["profile"] * ndev + cols["device"]) * 2 + cols["vector"]
    keys, inverse = np.unique(key, return_inverse=True)
    sums = np.bincount(inverse.reshape(-1), weights=cols["count"], minlength=keys.size)
    held = {int(k): int(c) for k, c in zip(keys, sums)}
    fp_ix = {fp: i for i, fp in enumerate(m["profiles"])}
    for s in m["streams"]:
        got = held.pop((fp_ix[s["profile"]] * ndev + s["device"]) * 2 + int(s["vector"]), 0)
        if got != s["n"]:
            raise ArchiveError("manifest: the frame table gives %s %d reports, the manifest "
                               "says %d" % (s["entry"], got, s["n"]))
    if held:
        raise ArchiveError("manifest: %d reports of the frame table have no stream"
                           % sum(held.values()))

