"""Build hook for the optional C twin of common/speedups.py (everything else is in pyproject.toml).

``optional=True``: without a compiler the install still succeeds and the pure-Python
twin is used (``common.speedups.IS_COMPILED`` is then False). When zlib's header and
library are present the CRC of new records uses zlib's crc32 (faster than the
built-in slice-by-8 table, same values); otherwise the built-in one is compiled. With
libcrypto's header and library (Debian: libssl-dev) the ACL signature check hashes with it directly.
"""

import os
import tempfile

from setuptools import Extension, setup


def _links(header: str, call: str, library: str) -> bool:
    """Whether a program including ``header`` and calling ``call`` compiles and links with ``library``
    here (never raises)."""
    try:
        from setuptools._distutils.ccompiler import new_compiler
        from setuptools._distutils.sysconfig import customize_compiler

        cc = new_compiler()
        customize_compiler(cc)
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "check.c")
            with open(src, "w") as f:
                f.write(f"#include <{header}>\nint main(void) {{ return (int){call}; }}\n")
            objs = cc.compile([src], output_dir=tmp)
            cc.link_executable(objs, os.path.join(tmp, "check"), libraries=[library])
        return True
    except Exception:  # no compiler, no header or no library: build without it
        return False


_ZLIB = _links("zlib.h", "crc32(0L, Z_NULL, 0)", "z")
# libcrypto (OpenSSL, Debian: libssl-dev) gives the ACL signature check raw SHA-1 states to copy
_CRYPTO = _links("openssl/sha.h", "SHA1_Init(0)", "crypto")

setup(
    ext_modules=[
        Extension(
            "common._speedups",
            sources=["common/_speedups.c", "common/_json_header.c", "common/_send_header.c", "common/_put_single.c",
                     "common/_new_slotted.c"],
            extra_compile_args=["-Wall", "-Wextra", "-Wno-unused-parameter"],
            define_macros=[("HAVE_ZLIB", "1")] * _ZLIB + [("HAVE_LIBCRYPTO", "1")] * _CRYPTO,
            libraries=["z"] * _ZLIB + ["crypto"] * _CRYPTO,
            optional=True,
        ),
        # the send path's per-message counters (twin of common/stats_counters.py)
        Extension(
            "common._stats_counters",
            sources=["common/_stats_counters.c"],
            extra_compile_args=["-Wall", "-Wextra", "-Wno-unused-parameter"],
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
