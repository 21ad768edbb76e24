"""The version of streamlearn, in the layer every other module may import."""

__version__ = "0.1.0"
