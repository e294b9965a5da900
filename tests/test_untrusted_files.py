"""A zip's central directory is judged from its end records before ``zipfile`` reads it
(autograder.intake.untrusted_files.check_zip_directory).

The archives are built with ``zipfile`` and their end records rewritten with ``struct`` (the classic end of
central directory record, or a ZIP64 record and locator put in front of it, as a writer does for a large
archive); each rewritten archive that should still be readable is first opened with ``zipfile`` to show that
the crafted records are the ones ``zipfile`` follows.  No test takes more than a few milliseconds.
"""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import pytest

from autograder.intake.untrusted_files import DIRECTORY_BYTES_PER_MEMBER, UnreadableFile, check_zip_directory

EOCD = struct.Struct("<4s4H2LH")      # signature, disk, directory's disk, entries here, entries, size, offset, comment
EOCD64 = struct.Struct("<4sQ2H2L4Q")  # signature, record size, versions, disks, entries here, entries, size, offset
LOCATOR = struct.Struct("<4sLQL")     # signature, disk, offset of the ZIP64 record, disks


def genuine(n: int, comment: bytes = b"") -> bytes:
    """A zip of ``n`` small notebooks, as ``zipfile`` writes it."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for i in range(n):
            zf.writestr(f"s{i:03d}_toy.ipynb", "{}")
        zf.comment = comment
    return buf.getvalue()


def split(data: bytes) -> tuple[bytes, list[int], bytes]:
    """The archive before its end record, the record's numeric fields, and the comment after it."""
    at = len(data) - EOCD.size if data[-2:] == b"\0\0" else data.rfind(b"PK\x05\x06")
    _, *fields = EOCD.unpack_from(data, at)
    return data[:at], fields, data[at + EOCD.size:]


def with_eocd(data: bytes, entries: int | None = None, size: int | None = None) -> bytes:
    """``data`` whose end record declares ``entries`` members and a directory of ``size`` bytes."""
    body, (disk, cd_disk, here, total, cd_size, offset, clen), comment = split(data)
    here, total = (here, total) if entries is None else (entries, entries)
    record = EOCD.pack(b"PK\x05\x06", disk, cd_disk, here, total, cd_size if size is None else size, offset, clen)
    return body + record + comment


def as_zip64(data: bytes, entries: int | None = None, pointed: int | None = None, prefix: bytes = b"") -> bytes:
    """``data`` with a ZIP64 end record and locator before a classic end record of 0xFFFF... placeholders;
    ``entries`` is what the ZIP64 record declares, ``pointed`` where the locator says that record is, and
    ``prefix`` bytes put in front of the archive (as a self-extracting archive has)."""
    body, (_, _, _, total, cd_size, offset, _), _ = split(data)
    n = total if entries is None else entries
    record = EOCD64.pack(b"PK\x06\x06", EOCD64.size - 12, 45, 45, 0, 0, n, n, cd_size, offset)
    at = len(prefix) + len(body)
    locator = LOCATOR.pack(b"PK\x06\x07", 0, at if pointed is None else pointed, 1)
    return prefix + body + record + locator + EOCD.pack(b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF,
                                                        0xFFFFFFFF, 0)


def _check(tmp_path: Path, data: bytes, max_members: int) -> None:
    path = tmp_path / "subs.zip"
    path.write_bytes(data)
    check_zip_directory(path, max_members)


@pytest.mark.parametrize("data", [genuine(30), genuine(30, b"x" * 65_535), as_zip64(genuine(30)),
                                  as_zip64(genuine(30), prefix=b"#!/bin/sh\n" * 10)],
                         ids=["plain", "longest comment", "zip64", "zip64 after a prefix"])
def test_a_genuine_archive_passes(tmp_path: Path, data: bytes) -> None:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:   # zipfile follows the crafted records, too
        assert len(zf.infolist()) == 30 and zf.testzip() is None
    _check(tmp_path, data, 30)
    with pytest.raises(UnreadableFile, match="declares 30 members, more than the limit of 29"):
        _check(tmp_path, data, 29)


@pytest.mark.parametrize("data,reason", [
    (with_eocd(genuine(3), entries=65_535), "declares 65535 members, more than the limit of 20000"),
    (as_zip64(genuine(3), entries=3_000_000), "declares 3000000 members, more than the limit of 20000"),
    # the locator points at a second ZIP64 record, at the start of the file, that declares millions
    (as_zip64(genuine(3), pointed=0, prefix=EOCD64.pack(b"PK\x06\x06", 44, 45, 45, 0, 0, 3_000_000, 3_000_000,
                                                         100, 0)), "declares 3000000 members"),
    (with_eocd(genuine(3), size=20_000 * DIRECTORY_BYTES_PER_MEMBER + 1),
     f"central directory of {20_000 * DIRECTORY_BYTES_PER_MEMBER + 1} bytes, more than the limit"),
    # a fake end record in the comment is the one zipfile reads (the last one): so is it here
    (genuine(3, b"note " + EOCD.pack(b"PK\x05\x06", 0, 0, 65_535, 65_535, 46, 0, 0)), "declares 65535 members"),
    (b"PK\x03\x04 not a zip at all", "no end of central directory record"),
    (genuine(3)[:-10], "no end of central directory record"),   # the end record cut short
], ids=["count", "zip64 count", "zip64 pointed", "directory size", "record in the comment", "not a zip",
        "truncated"])
def test_a_directory_too_large_to_read_is_refused(tmp_path: Path, data: bytes, reason: str) -> None:
    with pytest.raises(UnreadableFile, match=reason):
        _check(tmp_path, data, 20_000)


def test_an_end_record_that_understates_the_count_is_caught(tmp_path: Path) -> None:
    """It declares 5 members; its directory holds 60, which zipfile would read in full."""
    lying = with_eocd(genuine(60), entries=5)
    with zipfile.ZipFile(io.BytesIO(lying)) as zf:
        assert len(zf.infolist()) == 60
    with pytest.raises(UnreadableFile, match=r"holds more than 25 members \(its end record declares 5\)"):
        _check(tmp_path, lying, 25)
    _check(tmp_path, lying, 60)   # within the cap, the count is only a claim: zipfile reads what is there
