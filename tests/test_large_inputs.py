"""A 1 GB input is refused before it is read: by its size when over the limit, else by its
first bytes (a sparse file is all NUL bytes). Every command that reads a file asks the one
check in `ipse.fileio` first, so none holds the file in memory to refuse it.

Before, ``prefix`` and ``lint`` read the first line of the file whole (a sparse file has no
newline: all of it), and ``twin apply`` read all of it: ``prefix`` peaked at 2.1 GB. The bound
here is the peak resident memory of the command's process, read with `resource` by a parent
that runs nothing else.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# runs the command, then prints its exit status and the peak resident memory of its process (KB)
PARENT = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
sys.stderr.write(done.stderr)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""
GIGABYTE = 1024**3
BOUND_KB = 300 * 1024  # a command that refuses by size or first bytes uses under 100 MB

FORMS = [
    "prefix {F}",
    "lint {F}",
    "twin apply t1 {F} --store memory://",
    "inspect {F}",
    "probe {F}",
    "report {F} -o {D}/r.html",
    "handoff {F} --at now -o {D}/o.json",
    "verify {F} {F}",
]


@pytest.fixture(scope="module")
def sparse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("large") / "big.jsonl"
    with path.open("wb") as handle:
        handle.truncate(GIGABYTE)  # a hole: no disk used, a gigabyte of NUL bytes to read
    return path


def _peak(form: str, sparse: Path, limit: str | None) -> tuple[int, int, str]:
    env = {**os.environ, "IPSE_HOME": str(sparse.parent / "home")}
    env.pop("IPSE_MAX_INPUT_BYTES", None)
    if limit is not None:
        env["IPSE_MAX_INPUT_BYTES"] = limit
    args = form.format(F=sparse, D=sparse.parent).split()
    done = subprocess.run(
        [sys.executable, "-c", PARENT, sys.executable, "-m", "ipse", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    code, peak = map(int, done.stdout.split())
    return code, peak, done.stderr


@pytest.mark.parametrize("form", FORMS)
def test_a_sparse_gigabyte_is_refused_by_its_first_bytes_in_little_memory(
    form: str, sparse: Path
) -> None:
    code, peak, stderr = _peak(form, sparse, None)
    assert code == 2, stderr
    assert stderr.strip().splitlines() == [stderr.strip()]
    assert "a binary file" in stderr and str(sparse) in stderr
    assert peak < BOUND_KB, f"peak {peak:,} KB"


@pytest.mark.parametrize("form", FORMS)
def test_a_file_over_the_limit_is_refused_by_its_size_in_little_memory(
    form: str, sparse: Path
) -> None:
    code, peak, stderr = _peak(form, sparse, str(100 * 1000**2))
    assert code == 2, stderr
    assert "file too large (1,073,741,824 bytes, limit 100,000,000)" in stderr
    assert peak < BOUND_KB, f"peak {peak:,} KB"
