"""``python -m ipse``: the same command line as the ``ipse`` script."""

from ipse.cli import entry

entry()
