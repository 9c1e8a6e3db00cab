"""Build hook for the optional C twin of common/speedups.py (everything else is in pyproject.toml).

``optional=True``: without a compiler the install still succeeds and the pure-Python
twin is used (``common.speedups.IS_COMPILED`` is then False).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "common._speedups",
            sources=["common/_speedups.c"],
            extra_compile_args=["-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        )
    ]
)
