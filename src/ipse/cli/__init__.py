"""The ``ipse`` command line: thin front ends that parse, call the library, and render."""
