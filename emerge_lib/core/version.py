"""The package version, here so that any room can read it without importing the package
root (which re-exports the loader of the rooms above: ``emerge_lib.load_release``)."""

__version__ = "0.1.0"
