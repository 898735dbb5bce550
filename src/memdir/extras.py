"""How to install an optional part of memdir, said so that the line works as written.

memdir is installed from a checkout or a git URL, not from the package index, so a hint that
installs memdir with an extra from the index would fail for most people. :func:`install_hint`
names the packages an extra brings (each of them is on the index) and, second, the extra itself
for a checkout.
The packages are the ``[project.optional-dependencies]`` of ``pyproject.toml`` (a test keeps
the two in step).
"""

from __future__ import annotations

import sys

#: Extra → (requirement, Linux only?) as in pyproject.toml.
EXTRA_PACKAGES: dict[str, tuple[tuple[str, bool], ...]] = {
    "vec": (("sqlite-vec>=0.1.6", False), ("pysqlite3-binary>=0.5", True)),
    "anthropic": (("anthropic>=0.40", False),),
    "postgres": (("psycopg[binary]>=3.1", False), ("pgvector>=0.3", False)),
    "ann": (("faiss-cpu>=1.8", False),),
}


def install_hint(extra: str) -> str:
    """The pip line for ``extra``: its packages, then the extra from a memdir checkout, e.g.
    ``pip install 'anthropic>=0.40' (memdir's 'anthropic' extra; in a memdir checkout:
    pip install '.[anthropic]')``."""
    linux = sys.platform.startswith("linux")
    packages = [req for req, linux_only in EXTRA_PACKAGES[extra] if linux or not linux_only]
    quoted = " ".join(f"'{req}'" for req in packages)
    return (
        f"pip install {quoted} (memdir's '{extra}' extra; in a memdir checkout: "
        f"pip install '.[{extra}]')"
    )
