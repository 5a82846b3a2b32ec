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
share); `msgspec.structs.replace` makes a changed copy of one.
"""

from __future__ import annotations

from ipse.errors import PrefixEdit
from ipse.prefix._actual import Agreement, actual_tokens, agreement
from ipse.prefix._assemble import Assembler, CacheCost
from ipse.prefix._causes import CAUSES, Cause
from ipse.prefix._growing import SharedHistory
from ipse.prefix._layers import BlockHash, Layer, layers
from ipse.prefix._lint import Finding, lint
from ipse.prefix._live import LiveAnalysis
from ipse.prefix._report import MIN_TOKENS, PrefixReport, Row, analyze
from ipse.prefix._requests import UNRECORDED_FRONT, Request, RequestLog, read_requests
from ipse.prefix._rules import PROVIDERS, Rules, prices, rules
from ipse.prefix._simulate import Prediction, Simulator, Step, Tokens, simulator
from ipse.prefix._watch import Watcher, default_folders

__all__ = [
    "CAUSES",
    "MIN_TOKENS",
    "PROVIDERS",
    "UNRECORDED_FRONT",
    "Agreement",
    "Assembler",
    "BlockHash",
    "CacheCost",
    "Cause",
    "Finding",
    "Layer",
    "LiveAnalysis",
    "Prediction",
    "PrefixEdit",
    "PrefixReport",
    "Request",
    "RequestLog",
    "Row",
    "Rules",
    "SharedHistory",
    "Simulator",
    "Step",
    "Tokens",
    "Watcher",
    "actual_tokens",
    "agreement",
    "analyze",
    "default_folders",
    "layers",
    "lint",
    "prices",
    "read_requests",
    "rules",
    "simulator",
]
