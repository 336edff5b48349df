"""The package's version (one place: the package and the compile cache's key read it)."""
__version__ = "0.1.0"
