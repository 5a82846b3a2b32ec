"""The ``ipse`` command line: thin front ends that parse, call the library, and render.

`entry` is the executable (``ipse``, ``python -m ipse``); its module imports nothing heavy, so
importing this package costs the SessionStart hook nothing.
"""

from ipse.cli._entry import entry

__all__ = ["entry"]
