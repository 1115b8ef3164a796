"""The release, apart from the CLI: the API reports it too (pyproject.toml's version must match)."""

__version__ = "0.1.0"
