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
from ipse.errors import PrefixEdit

if _typing.TYPE_CHECKING:
    from ipse.prefix._actual import Agreement, actual_tokens, agreement
    from ipse.prefix._assemble import Assembler, CacheCost
    from ipse.prefix._billing import billed_tokens, same_call
    from ipse.prefix._causes import CAUSES, Cause
    from ipse.prefix._growing import SharedHistory
    from ipse.prefix._layers import BlockHash, Layer, layers
    from ipse.prefix._lint import Finding, lint
    from ipse.prefix._live import LiveAnalysis
    from ipse.prefix._pricing import token_cost
    from ipse.prefix._report import MIN_TOKENS, analyze
    from ipse.prefix._requests import UNRECORDED_FRONT, Request, RequestLog, read_requests
    from ipse.prefix._rows import PrefixReport, Row
    from ipse.prefix._rules import PROVIDERS, ModelWindow, Rules, Windows, prices, rules, windows
    from ipse.prefix._simulate import Prediction, Simulator, Step, Tokens, simulator
    from ipse.prefix._watch import Watcher, default_folders

# The names below are imported on first use: ``ipse prefix FILE`` needs the replay (reading,
# simulating, reporting), not the assembler, the linter, the layers or the watcher.
_MODULES = {
    "_actual": ("Agreement", "actual_tokens", "agreement"),
    "_billing": ("billed_tokens", "same_call"),
    "_assemble": ("Assembler", "CacheCost"),
    "_causes": ("CAUSES", "Cause"),
    "_growing": ("SharedHistory",),
    "_layers": ("BlockHash", "Layer", "layers"),
    "_lint": ("Finding", "lint"),
    "_live": ("LiveAnalysis",),
    "_pricing": ("token_cost",),
    "_report": ("MIN_TOKENS", "analyze"),
    "_requests": ("UNRECORDED_FRONT", "Request", "RequestLog", "read_requests"),
    "_rows": ("PrefixReport", "Row"),
    "_rules": ("PROVIDERS", "ModelWindow", "Rules", "Windows", "prices", "rules", "windows"),
    "_simulate": ("Prediction", "Simulator", "Step", "Tokens", "simulator"),
    "_watch": ("Watcher", "default_folders"),
}

__getattr__, __dir__ = _lazy.exports("ipse.prefix", _MODULES, globals())

__all__ = _lazy.public(_MODULES, "PrefixEdit")
