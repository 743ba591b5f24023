"""The release's formats: what an EMERGE release's files are, read and written without the
catalog, an engine or the network, so that the scorer, the validation suites, the hub and
the annotation read them as the release writer writes them.

- ``format``: the authors' line format (field names, nesting, operation names, dates);
- ``layout``: every file and folder name, each window's paths, which paths a release writes;
- ``schema``: the lines' Arrow schema and its Parquet writer;
- ``manifest``: the manifest with checksums, and the version (a hash of the content);
- ``card``: the dataset card in the Hugging Face Hub's format, with its plots;
- ``croissant``: ``croissant.json``;
- ``about``: what a release says about itself (licence, citation, responsible-AI statements).

They import ``core`` (its errors) and each other only: the release writer
(``emerge_lib.release``), above them, writes a release through them.
"""
