"""Adapters from storage formats to the ``Source`` protocol the ``Dataset`` reads through."""

from streamlearn.data.sources.base import Block, ColumnKind, Piece, Source

__all__ = ["Block", "ColumnKind", "Piece", "Source"]
