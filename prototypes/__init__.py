"""Prototypes outside the package and its wheel: working designs measured in the docs, not supported API."""
