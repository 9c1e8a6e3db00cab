"""Build hook for the optional C twin of common/speedups.py (everything else is in pyproject.toml).

``optional=True``: without a compiler the install still succeeds and the pure-Python
twin is used (``common.speedups.IS_COMPILED`` is then False). When zlib's header and
library are present the CRC of new records uses zlib's crc32 (faster than the
built-in slice-by-8 table, same values); otherwise the built-in one is compiled.
"""

import os
import tempfile

from setuptools import Extension, setup


def _have_zlib() -> bool:
    """Whether a program using zlib's crc32 compiles and links here (never raises)."""
    try:
        from setuptools._distutils.ccompiler import new_compiler
        from setuptools._distutils.sysconfig import customize_compiler

        cc = new_compiler()
        customize_compiler(cc)
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "zcheck.c")
            with open(src, "w") as f:
                f.write("#include <zlib.h>\nint main(void) { return (int)crc32(0L, Z_NULL, 0); }\n")
            objs = cc.compile([src], output_dir=tmp)
            cc.link_executable(objs, os.path.join(tmp, "zcheck"), libraries=["z"])
        return True
    except Exception:  # no compiler, no header or no library: build without it
        return False


_ZLIB = _have_zlib()

setup(
    ext_modules=[
        Extension(
            "common._speedups",
            sources=["common/_speedups.c"],
            extra_compile_args=["-Wall", "-Wextra", "-Wno-unused-parameter"],
            define_macros=[("HAVE_ZLIB", "1")] if _ZLIB else [],
            libraries=["z"] if _ZLIB else [],
            optional=True,
        ),
        # the SYNC_FLUSH group-commit thread without the GIL (twin of common/fsync_worker.py)
        Extension(
            "common._fsync_worker",
            sources=["common/_fsync_worker.c"],
            extra_compile_args=["-Wall", "-Wextra", "-Wno-unused-parameter"],
            optional=True,
        ),
    ]
)
