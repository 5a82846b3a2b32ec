"""Prefix discipline: where and why requests stopped sharing a cached prefix, what it cost,
and an assembler that builds requests which keep it.

* `layers`: a request as ordered layers with a hash per layer and per block;
* `simulator`: one cache simulator per provider (anthropic, openai, vllm), rules as data;
* `analyze`: replay a log, name the cause of every lost reuse, compare with recorded usage;
* `lint`: freeze the front of one request;
* `Assembler`: fixed order, stable bytes, append-only history, placed breakpoints.
"""

from __future__ import annotations

import typing as _typing

from ipse import _lazy
from ipse.errors import PrefixEdit

if _typing.TYPE_CHECKING:
    from ipse.prefix._actual import Agreement, actual_tokens, agreement
    from ipse.prefix._assemble import Assembler, CacheCost
    from ipse.prefix._causes import CAUSES, Cause
    from ipse.prefix._layers import BlockHash, Layer, layers
    from ipse.prefix._lint import Finding, lint
    from ipse.prefix._report import PrefixReport, Row, analyze
    from ipse.prefix._requests import Request, RequestLog, read_requests
    from ipse.prefix._rules import PROVIDERS, Rules, prices, rules
    from ipse.prefix._simulate import Prediction, Simulator, Step, Tokens, simulator

# The names below are imported on first use: ``ipse prefix`` replays a log without the
# assembler's or the linter's modules.
_HOME = {
    "Agreement": "ipse.prefix._actual",
    "actual_tokens": "ipse.prefix._actual",
    "agreement": "ipse.prefix._actual",
    "Assembler": "ipse.prefix._assemble",
    "CacheCost": "ipse.prefix._assemble",
    "CAUSES": "ipse.prefix._causes",
    "Cause": "ipse.prefix._causes",
    "BlockHash": "ipse.prefix._layers",
    "Layer": "ipse.prefix._layers",
    "layers": "ipse.prefix._layers",
    "Finding": "ipse.prefix._lint",
    "lint": "ipse.prefix._lint",
    "PrefixReport": "ipse.prefix._report",
    "Row": "ipse.prefix._report",
    "analyze": "ipse.prefix._report",
    "Request": "ipse.prefix._requests",
    "RequestLog": "ipse.prefix._requests",
    "read_requests": "ipse.prefix._requests",
    "PROVIDERS": "ipse.prefix._rules",
    "Rules": "ipse.prefix._rules",
    "prices": "ipse.prefix._rules",
    "rules": "ipse.prefix._rules",
    "Prediction": "ipse.prefix._simulate",
    "Simulator": "ipse.prefix._simulate",
    "Step": "ipse.prefix._simulate",
    "Tokens": "ipse.prefix._simulate",
    "simulator": "ipse.prefix._simulate",
}


__getattr__, __dir__ = _lazy.exports("ipse.prefix", _HOME, globals())


__all__ = [
    "CAUSES",
    "PROVIDERS",
    "Agreement",
    "Assembler",
    "BlockHash",
    "CacheCost",
    "Cause",
    "Finding",
    "Layer",
    "Prediction",
    "PrefixEdit",
    "PrefixReport",
    "Request",
    "RequestLog",
    "Row",
    "Rules",
    "Simulator",
    "Step",
    "Tokens",
    "actual_tokens",
    "agreement",
    "analyze",
    "layers",
    "lint",
    "prices",
    "read_requests",
    "rules",
    "simulator",
]
