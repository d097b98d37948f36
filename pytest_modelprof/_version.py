"""The package version: a leaf, so any module can name it without importing the package."""

__all__ = ["__version__"]

__version__ = "0.1.0"
