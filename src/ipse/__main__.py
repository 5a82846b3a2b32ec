"""``python -m ipse``: the same command line as the ``ipse`` script."""

from ipse.cli.main import entry

entry()
