"""Prefix discipline: where and why requests stopped sharing a cached prefix, what it cost,
and an assembler that builds requests which keep it.

* `layers`: a request as ordered layers with a hash per layer and per block;
* `simulator`: one cache simulator per provider (anthropic, openai, vllm), rules as data;
* `analyze`: replay a log, name the cause of every lost reuse, compare with recorded usage;
* `lint`: freeze the front of one request;
* `Assembler`: fixed order, stable bytes, append-only history, placed breakpoints.

Its values are dataclasses, frozen and slotted where they are values, like every result type of
ipse; save the four a replay builds for every request, `Request`, `Tokens`, `Prediction` and
`Row`: frozen msgspec structs, built several times faster. As dataclasses they would cost a
replay of a Claude Code session about 11% more instructions (each one's docstring gives its
share); `msgspec.structs.replace` makes a changed copy of one. The rule and price tables are
frozen dataclasses whose memo of answers is no part of their value (equality, repr).
"""

from __future__ import annotations

import typing as _typing

from ipse import _lazy

if _typing.TYPE_CHECKING:
    from ipse.prefix._assemble import Assembler
    from ipse.prefix._lint import lint
    from ipse.prefix._pricing import token_cost
    from ipse.prefix._report import analyze
    from ipse.prefix._requests import Request, read_requests
    from ipse.prefix._rows import PrefixReport
    from ipse.prefix._rules import prices, rules

# The names below are imported on first use: ``ipse prefix FILE`` needs the replay (reading,
# simulating, reporting), not the assembler, the linter, the layers or the watcher.
_MODULES = {
    "_assemble": ("Assembler",),
    "_lint": ("lint",),
    "_pricing": ("token_cost",),
    "_report": ("analyze",),
    "_requests": ("Request", "read_requests"),
    "_rows": ("PrefixReport",),
    "_rules": ("prices", "rules"),
}

__getattr__, __dir__ = _lazy.exports("ipse.prefix", _MODULES, globals())

__all__ = _lazy.public(_MODULES)
