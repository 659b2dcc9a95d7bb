"""tests/workers.py: the groups scripts/test.sh's two workers run name real tests."""
from __future__ import annotations

import importlib

from tests.workers import COURSE_GROUPS, FIRST, SOLUTIONS, STUBS, group_of


def test_every_course_grading_named_is_a_test() -> None:
    """A test renamed or removed would fall back to its module's group without a word."""
    for test in COURSE_GROUPS:
        path, name = test.split("::")
        module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
        assert callable(getattr(module, name, None)), f"{test} is not a test any more"


def test_groups_are_the_course_gradings_else_the_module() -> None:
    assert group_of("tests/course/test_grading.py::test_stubs_fail_every_test[05_codegen]") \
        == STUBS
    assert group_of("tests/course/test_progress.py::test_solutions_complete_every_chapter") \
        == SOLUTIONS
    assert group_of("tests/api/test_ops.py::test_add[a[1]-b]") == "tests/api/test_ops.py"
    assert all(isinstance(group, str) for group in FIRST)
