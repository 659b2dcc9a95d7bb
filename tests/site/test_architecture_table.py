"""The table of primitive ops on the architecture page names exactly the members of Ops."""
from __future__ import annotations

import re
from pathlib import Path

from tinyfw.uop.ops import Ops
from tools.mkdocs_hooks import OPS_TABLE

PAGE = Path(__file__).resolve().parents[2] / "site" / "architecture.md"


def test_ops_table_matches_the_code() -> None:
    """Every op in tinyfw.uop.ops.Ops has a row, and every row is an op."""
    tables = [m for m in OPS_TABLE.finditer(PAGE.read_text(encoding="utf-8"))
              if m.group(2) == "Ops"]
    assert len(tables) == 1, "architecture.md must hold one table marked <!-- ops-table: ... -->"
    rows = set(re.findall(r"(?m)^\|\s*`(\w+)`\s*\|", tables[0].group(3)))
    members = {op.name for op in Ops}
    assert rows == members, (f"missing rows: {sorted(members - rows)}; "
                             f"rows that are not ops: {sorted(rows - members)}")
