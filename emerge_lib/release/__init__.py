"""The EMERGE release, from the catalog to files: the authors' line format (``format``,
pure: the scorer and the suites read it), the manifest with checksums (``manifest``), the
dataset card (``card``), the folder writer (``writer``) and its stage (``stage``).

``format``, ``manifest`` and ``card`` import only ``core``: they work on files alone.
"""
