"""Utilities beside the core: data loading (`utils.data`)."""

from . import data

__all__ = ["data"]
