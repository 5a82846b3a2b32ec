"""Whether what an install registers can run: the optional packages its parts need, looked up
for the interpreter the registered commands will run (the one running install). The stdio
server (``ipse mcp``) needs none: it answers from the standard library (`ipse.mcp._stdio`);
the proxy (``--proxy``) needs the proxy extra.

An install that registers a server or a proxy hook whose imports fail leaves an agent that
hangs or starts without its tools, so install refuses first, in one line naming the extra and
the exact command that installs it for that interpreter: from a source checkout (how the README
installs ipse) the checkout's path, ``'.[proxy]'`` when run from inside it; else the package name.
Modules are found without importing them (`importlib.util.find_spec`), so the check costs
milliseconds, not the seconds the SDKs take to import.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import sys
from pathlib import Path

from ipse.errors import MissingExtra

# the top-level modules each extra's part imports when it starts (pyproject.toml's extras;
# "mcp" is for ``ipse mcp --http`` only, which install never registers)
NEEDS: dict[str, tuple[str, ...]] = {
    "mcp": ("mcp",),
    "proxy": ("starlette", "uvicorn", "httpx"),
}


class NotRunnable(MissingExtra):
    """What install would register cannot run here: an extra is missing (exit code 2)."""

    def __init__(self, message: str, extra: str, package: str) -> None:
        Exception.__init__(self, message)
        self.message = message
        self.extra = extra
        self.package = package


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _source() -> str:
    """Where ``pip`` installs this ipse from: its checkout (``.`` inside it), else ``ipse``."""
    import ipse

    root = Path(ipse.__file__).resolve().parents[2]
    if not ((root / "pyproject.toml").is_file() and (root / "src" / "ipse").is_dir()):
        root = _direct_url() or Path()
        if root == Path():
            return "ipse"
    try:
        here = Path.cwd().resolve()
    except OSError:
        here = None
    return "." if here == root else str(root)


def _direct_url() -> Path | None:
    """The local folder ipse was installed from (PEP 610 ``direct_url.json``), if any."""
    from importlib import metadata

    try:
        raw = metadata.distribution("ipse").read_text("direct_url.json")
        url = json.loads(raw or "null")
    except (metadata.PackageNotFoundError, ValueError, OSError):
        return None
    value = url.get("url") if isinstance(url, dict) else None
    if isinstance(value, str) and value.startswith("file://"):
        folder = Path(value[len("file://") :])
        return folder if (folder / "pyproject.toml").is_file() else None
    return None


def install_command(extra: str) -> str:
    """The shell command that installs ``extra`` for the running interpreter."""
    python = shlex.quote(os.path.abspath(sys.executable))
    return f"{python} -m pip install {shlex.quote(f'{_source()}[{extra}]')}"


def require(extra: str, what: str) -> None:
    """`NotRunnable` (one line) unless every module ``extra`` provides can be imported."""
    for module in NEEDS[extra]:
        if not _importable(module):
            message = (
                f"{what} needs the optional package {module!r} (extra {extra}), which is not "
                f"installed for {os.path.abspath(sys.executable)}; install it with: "
                f"{install_command(extra)}"
            )
            raise NotRunnable(message, extra, module)


__all__ = ["NEEDS", "NotRunnable", "install_command", "require"]
