"""The package's version, read by `autograd_async.__version__` and by the build (pyproject.toml)."""

__version__ = "0.1.0"
