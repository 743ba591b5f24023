"""The compiled parts (C sources in emerge_lib/dumps/native/), each an accelerator of
Python code that stays the specification:

- ``emerge_lib.dumps._native``: XML unescaping, the batch of canonical revisions and the
  Wikidata entity scanner (native/module.c, one translation unit of its parts);
- ``emerge_lib.dumps._crc32``: the 7z reader's CRC32 with carry-less multiplication.

Optional: where no C compiler exists the build goes on without them and the pure-Python
twins are used (same output, slower).
"""

from pathlib import Path

from setuptools import Extension, setup

NATIVE = Path("emerge_lib/dumps/native")

setup(
    ext_modules=[
        Extension("emerge_lib.dumps._native", [str(NATIVE / "module.c")],
                  depends=[str(p) for p in sorted(NATIVE.glob("*.c")) if p.name != "crc32.c"],
                  optional=True, extra_compile_args=["-O3"]),
        Extension("emerge_lib.dumps._crc32", [str(NATIVE / "crc32.c")],
                  optional=True, extra_compile_args=["-O3"]),
    ]
)
