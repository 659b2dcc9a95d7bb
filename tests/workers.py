"""The worker groups of the tests that grade the whole course (see tests/conftest.py, Workers):
the gradings on the solutions run on one worker, those on fresh stubs on the other."""
from __future__ import annotations

import pytest

ON_SOLUTIONS = pytest.mark.xdist_group("grading-on-solutions")
ON_STUBS = pytest.mark.xdist_group("grading-on-stubs")
