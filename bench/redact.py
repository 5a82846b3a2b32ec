"""Redaction is linear: the time for 80,000 characters over the time for 10,000 (8x when linear,
64x when quadratic), for long runs of each kind of character and for texts full of URL and
key=value pieces, beside the patterns redaction used to have (``--old``, slow: about ten
seconds a case at 80,000 characters).

Every MCP tool error and every database message passes through `ipse._redact.redact`, and a
tool error may quote an argument a model sent (an 80,000-character id took 8 s under the old
patterns, and held every other call of the server meanwhile).

    python bench/redact.py [--old] [--repeat N]
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable

from ipse._redact import redact

CASES = {
    "letters": "a",
    "digits": "9",
    "underscores": "_",
    "spaces": " ",
    "quotes": "'",
    "backslashes": "\\",
    "colons": ":",
    "at signs": "@",
    "scheme://": "a://",
    "password": "password",
    "password='\\'": "password='\\'",
    "x=token=": "x=token=",
    "a://b:c": "a://b:c",
}
# after the run, so that each pattern has to look at it (no quick "no '=' here" answer)
SUFFIX = " token=s3cret postgresql://u:s3cret@db/x"

_OLD_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<info>[^\s'\"<>]*)@")
_OLD_PARAM = re.compile(
    r"(?P<key>\b[A-Za-z_]*(?:password|passwd|pwd|secret|token|api_?key)[A-Za-z_]*\s*=\s*)"
    r"(?P<value>'(?:[^'\\]|\\.)*'|[^&\s'\"#]+)",
    re.IGNORECASE,
)


def old_redact(text: str) -> str:
    """The patterns before (the replacement does not matter for the time)."""
    text = _OLD_USERINFO.sub("***@", text)
    return _OLD_PARAM.sub("***", text)


def best(function: Callable[[str], str], text: str, repeat: int) -> float:
    """The least CPU time of ``repeat`` runs (CPU time: a shared machine disturbs it less)."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        function(text)
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", action="store_true", help="also the patterns before")
    parser.add_argument("--repeat", type=int, default=9)
    options = parser.parse_args()
    print(
        f"{'run of':16} {'10k':>9} {'80k':>9} {'ratio':>6}"
        + ("   old ratio" if options.old else "")
    )
    worst = 0.0
    for name, piece in CASES.items():
        short = piece * (10_000 // len(piece)) + SUFFIX
        long = piece * (80_000 // len(piece)) + SUFFIX
        assert "s3cret" not in redact(long)
        a, b = best(redact, short, options.repeat), best(redact, long, options.repeat)
        ratio = b / max(a, 1e-6)
        worst = max(worst, ratio)
        line = f"{name:16} {a * 1000:7.2f}ms {b * 1000:7.2f}ms {ratio:6.1f}"
        if options.old:
            c, d = best(old_redact, short, 1), best(old_redact, long, 1)
            line += f"   {d / max(c, 1e-7):6.1f} ({d:.2f} s at 80k)"
        print(line, flush=True)
    print(f"worst ratio {worst:.1f} (linear: 8)")


if __name__ == "__main__":
    main()
