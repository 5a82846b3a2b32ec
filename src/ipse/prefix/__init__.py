"""Prefix discipline: where and why requests stopped sharing a cached prefix, and what it cost."""
