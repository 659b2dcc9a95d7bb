"""How tests/ is spread over pytest-xdist's two workers (scripts/test.sh: `--dist loadgroup`).

A group of tests runs on one worker. A module is a group of its own, so its module and session
fixtures (the built site, a loaded model) are made once. The tests that grade the whole course
(test_grading, test_progress, test_capstone) are grouped by what they grade instead: on the
solutions, or on fresh stubs. Each group's gradings share the session's grade cache
(chapters/grade_cache.py) and would wait for each other's runs of the same files; the two
groups grade different files, so they run side by side on the two workers.

pytest-xdist 3.8's own loadgroup reads `xdist_group` marks by renaming each test's node id,
which pytest 9.2's structured node ids ignore: every test was spread on its own, the site was
built on both workers (pytest-xdist issue #1386). So the groups are worked out here, from the
node ids alone (the controller that hands out the groups never sees a test's marks), and
tests/conftest.py makes this module's scheduler the one loadgroup uses.
"""
from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

SOLUTIONS = "grading on the solutions"
STUBS = "grading on fresh stubs"
# The course's gradings, by test (module::function, every parametrization of it).
COURSE_GROUPS: dict[str, str] = {
    "tests/course/test_grading.py::test_solutions_pass_every_test": SOLUTIONS,
    "tests/course/test_grading.py::test_every_task_has_a_test": SOLUTIONS,
    "tests/course/test_grading.py::test_stubs_fail_every_test": STUBS,
    "tests/course/test_progress.py::test_solutions_complete_every_chapter": SOLUTIONS,
    "tests/course/test_progress.py::test_stubs_start_every_chapter_at_zero": STUBS,
    "tests/course/test_capstone.py::test_with_the_solutions_it_names_the_functions_called":
        SOLUTIONS,
    "tests/course/test_capstone.py::test_smollm2_answers_with_the_learners_chapters": SOLUTIONS,
    "tests/course/test_capstone.py::test_data_parallel_runs_chapter_13": SOLUTIONS,
    "tests/course/test_capstone.py::test_a_chapter_partly_done_lends_only_its_finished_task": STUBS,
}
# The longest groups, handed out first, longest first (a long group started last would keep
# one worker busy while the other has nothing left): measured with `pytest tests -n 2
# --durations=80`, the two gradings about 300-400 s each, the site 150 s to build, the
# exhaustive movement chains and the llama tests about 120 s each; the server's tests (one
# server, started and warmed up, for the module) 300 s on a loaded machine.
FIRST = (SOLUTIONS, STUBS, "tests/site/test_site.py",
         "tests/numerics/test_movement_exhaustive.py", "tests/models/test_llama.py",
         "tests/models/test_serve.py")


def group_of(nodeid: str) -> str:
    """The group of the test with this node id: its course grading group, else its module."""
    test = nodeid.split("[")[0]
    return COURSE_GROUPS.get(test) or test.split("::")[0]


def order_longest_first(items: list[pytest.Item]) -> None:
    """Puts the tests of the FIRST groups first, in FIRST's order (the rest keep theirs), so
    the scheduler, which hands out groups in collection order, starts with them."""
    rank = {group: i for i, group in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(group_of(item.nodeid), len(FIRST)))


class WorkerGroups(LoadScopeScheduling):
    """pytest-xdist's scheduling by scope, with group_of's groups as the scopes."""

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        config.option.loadscopereorder = False  # (collection order: order_longest_first's)
        super().__init__(config, log)

    def _split_scope(self, nodeid: str) -> str:
        return group_of(nodeid)
