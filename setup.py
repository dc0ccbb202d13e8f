"""Builds the optional compiled kernels (the one extension ``pipeline.core._kernels`` from
pipeline/core/_kernels*.c, which share _kernels.h; the rest is in pyproject.toml).

``optional=True``: without a compiler the install still succeeds and the pure-Python path runs
(``pipeline.core.kernels.PATH`` says which; CI sets ``STREAMXAI_REQUIRE_KERNEL=1`` so that a
missing build fails a test). The flags keep IEEE semantics: no fused multiply-add, no fast math.
"""

from setuptools import Extension, setup

# the module table, then the kernel families; deploy/setup.sh rebuilds when any _kernels* file changes
SOURCES = ("_kernels", "_kernels_welford", "_kernels_ipdp", "_kernels_stderr", "_kernels_report", "_kernels_draws", "_kernels_linear")

setup(
    ext_modules=[
        Extension(
            "pipeline.core._kernels",
            [f"pipeline/core/{name}.c" for name in SOURCES],
            depends=["pipeline/core/_kernels.h"],
            extra_compile_args=["-O2", "-ffp-contract=off", "-fno-fast-math", "-fno-unsafe-math-optimizations"],
            optional=True,
        )
    ]
)
