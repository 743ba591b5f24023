"""The EMERGE release, from the catalog to files: the authors' line format (``format``,
pure: the scorer and the suites read it), the lines' Arrow schema and its Parquet writer
(``schema``), the manifest with checksums and the version (``manifest``), the dataset card
in the Hugging Face Hub's format (``card``), ``croissant.json`` (``croissant``), what a
release says about itself (``about``: licence, citation, responsible-AI statements), the
folder writer (``writer``) and its stage (``stage``).

``format``, ``schema``, ``manifest``, ``about``, ``card`` and ``croissant`` import only
``core`` and each other: they work on files alone.
"""
