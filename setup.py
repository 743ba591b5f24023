"""The one compiled part (emerge_lib/dumps/_xmlfast.c): XML unescaping, the canonical
revision layout and the Wikidata entity scanner, in C.

Optional: where no C compiler exists the build goes on without it and
``emerge_lib.dumps.xmlstream`` uses its pure-Python twin (same output, slower).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "emerge_lib.dumps._xmlfast",
            ["emerge_lib/dumps/_xmlfast.c"],
            optional=True,
            extra_compile_args=["-O3"],
        )
    ]
)
