"""File helpers: outputs get the mode the umask allows (issue 26, defect #15: every output
was created 0600 whatever the umask, as tempfile.mkstemp makes it), and a file-system error
is described in one line naming the file and the fix (defect #7)."""

from __future__ import annotations

import errno
import os

import pytest

from spacelm.lib.io import current_umask, describe_os_error, write_json, write_text


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640), (0o002, 0o664)])
def test_atomic_writes_respect_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        assert current_umask() == umask
        write_text(tmp_path / "a.txt", "x")
        write_json(tmp_path / "b.json", {"a": 1})
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == mode
    assert (tmp_path / "b.json").stat().st_mode & 0o777 == mode


@pytest.mark.parametrize(
    "code, fix",
    [
        (errno.EROFS, "writable"),
        (errno.EACCES, "writable"),
        (errno.EFBIG, "disk space"),
        (errno.ENOSPC, "disk space"),
        (errno.ENOTDIR, "a file stands where a folder is needed"),
        (errno.EEXIST, "a file stands where a folder is needed"),
    ],
)
def test_os_errors_name_the_file_and_the_fix(code, fix):
    line = describe_os_error(OSError(code, os.strerror(code), "/data/run/table1.csv"))
    assert line.startswith("/data/run/table1.csv: " + os.strerror(code)) and fix in line and "\n" not in line
