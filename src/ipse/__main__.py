"""``python -m ipse``: the same command line as the ``ipse`` script."""

from ipse.cli._entry import entry

entry()
