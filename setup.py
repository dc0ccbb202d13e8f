"""Maps the repository's folders onto the one installed package, ``streamxai``, and builds the
optional compiled kernels (the rest is in pyproject.toml).

``pipeline/`` is ``streamxai`` itself; ``agents/`` and ``schemas/`` are ``streamxai.agents`` and
``streamxai.schemas``. Installing adds only ``streamxai`` (and the ``streamxai`` command) to
site-packages, so nothing collides with a user's own ``pipeline`` or ``schemas`` module.

The kernels are the one extension ``streamxai.core._kernels`` from pipeline/core/_kernels*.c,
which share _kernels.h. ``optional=True``: without a compiler the install still succeeds and the
pure-Python path runs (``streamxai.core.kernels.PATH`` says which; CI sets
``STREAMXAI_REQUIRE_KERNEL=1`` so that a missing build fails a test). The flags keep IEEE
semantics: no fused multiply-add, no fast math.
"""

import os

from setuptools import Extension, setup

#: repository folder -> the installed package it becomes
FOLDERS = {"pipeline": "streamxai", "agents": "streamxai.agents", "schemas": "streamxai.schemas"}


def packages() -> list[str]:
    """Every folder with an ``__init__.py`` under the mapped folders, by its installed name."""
    found = []
    for folder, package in FOLDERS.items():
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__")))
            if "__init__.py" in filenames:
                rel = os.path.relpath(dirpath, folder)
                found.append(package if rel == "." else package + "." + rel.replace(os.sep, "."))
    return found


# the module table, then the kernel families; deploy/setup.sh rebuilds when any _kernels* file changes
SOURCES = ("_kernels", "_kernels_ipdp", "_kernels_linear", "_kernels_walk")

setup(
    packages=packages(),
    package_dir={package: folder for folder, package in FOLDERS.items()},
    ext_modules=[
        Extension(
            "streamxai.core._kernels",
            [f"pipeline/core/{name}.c" for name in SOURCES],
            depends=["pipeline/core/_kernels.h"],
            extra_compile_args=["-O2", "-ffp-contract=off", "-fno-fast-math", "-fno-unsafe-math-optimizations"],
            optional=True,
        )
    ],
)
