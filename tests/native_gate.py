"""The compiled path's tests need it built: ``require_compiled_path()`` at a test module's top fails the module in CI
(``.ci/run``'s install builds it: cargo is on that kind) and skips it elsewhere, where ``pip install`` found no Rust
compiler (the Python path then runs alone, with the same results)."""

from __future__ import annotations

import os

import pytest

from pyhpa.simulate import native


def require_compiled_path() -> None:
    """Fail (CI) or skip (elsewhere) the calling module when ``pyhpa.simulate.rustcore`` is not built."""
    if native.available():
        return
    if os.environ.get("CI"):
        pytest.fail("pyhpa.simulate.rustcore is not built: .ci/run's pip install builds it (cargo is on this kind)",
                    pytrace=False)
    pytest.skip("pyhpa.simulate.rustcore is not built here (pip install with a Rust compiler builds it)",
                allow_module_level=True)
