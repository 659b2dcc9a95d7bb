"""A picture of a lowered kernel: its loop nest as nested boxes, each step inside its loop."""

from __future__ import annotations

from typing import Any

import graphviz

from tinyfw.codegen.lower import LOps, Program, Step

STEP_FILL = {
    LOps.PARAM: "#dbeafe", LOps.LOAD: "#dbeafe", LOps.STORE: "#dcfce7", LOps.CONST: "#f3f4f6",
    LOps.VALID: "#fee2e2", LOps.ACC: "#fde68a", LOps.UPDATE: "#fde68a", LOps.ALU: "#ffffff",
}
LOOP_COLOR = {"gidx": ("#eef2ff", "#4338ca", "global"), "ridx": ("#fff7ed", "#c2410c", "reduce")}
OTHER_LOOP = ("#f0fdf4", "#15803d", "loop")


def _text(value: Any) -> str:
    """An argument as short text: index expressions as the C they render to."""
    return value.render() if hasattr(value, "render") else repr(value)


def step_label(i: int, step: Step, program: Program) -> str:
    """The text of one step: its number, what it does, and its dtype."""
    if step.op is LOps.PARAM:
        number, is_output = step.arg
        what = f"data{number} ({'output' if is_output else 'input'})"
    elif step.op is LOps.LOAD:
        index, valid = step.arg
        number = program.steps[step.src[0]].arg[0]
        what = f"LOAD data{number}[{_text(index)}]"
        if not (valid.is_const and valid.vmin == 1):
            what += f"\\nif {_text(valid)}, else 0"
    elif step.op is LOps.STORE:
        number = program.steps[step.src[0]].arg[0]
        what = f"STORE data{number}[{_text(step.arg)}] = %{step.src[1]}"
    elif step.op is LOps.CONST:
        what = f"CONST {step.arg!r}"
    elif step.op is LOps.VALID:
        what = f"VALID {_text(step.arg)}"
    elif step.op is LOps.ACC:
        what = f"ACC = {step.arg!r}"
    elif step.op is LOps.UPDATE:
        what = f"UPDATE %{step.src[0]} {step.arg.name} %{step.src[1]}"
    else:  # ALU
        what = f"{step.arg.name}(" + ", ".join(f"%{s}" for s in step.src) + ")"
    return f"%{i}  {what}\\n{step.dtype.name}"


def draw_loops(program: Program, fmt: str = "svg") -> graphviz.Digraph:
    """A lowered kernel's loop nest: each LOOP a box (blue for an output axis, orange for a
    reduce axis) holding the steps that run inside it, in program order from the top; arrows
    carry values from the step that makes them to the steps that use them. The buffers (PARAM)
    sit outside every loop."""
    dot = graphviz.Digraph(format=fmt, graph_attr={"rankdir": "TB", "compound": "true",
                                                   "label": f"kernel {program.name}",
                                                   "labelloc": "t", "fontname": "Helvetica"})
    dot.attr("node", fontname="Helvetica", fontsize="10", shape="box", style="filled,rounded")
    dot.attr("edge", color="#6b7280", arrowsize="0.6")
    params = graphviz.Digraph(name="params", graph_attr={"rank": "same"})
    stack: list[graphviz.Digraph] = [dot]
    shown: list[int] = []
    for i, step in enumerate(program.steps):
        if step.op is LOps.LOOP:
            name, size = step.arg
            fill, line, kind = next((v for k, v in LOOP_COLOR.items() if str(name).startswith(k)),
                                    OTHER_LOOP)
            box = graphviz.Digraph(name=f"cluster_{i}")
            box.attr(label=f"for {name} in 0..{size - 1}  ({kind})", style="filled,rounded",
                     fillcolor=fill, color=line, fontname="Helvetica", fontsize="10",
                     labeljust="l")
            stack.append(box)
        elif step.op is LOps.ENDLOOP:
            box = stack.pop()
            if not box.body[1:]:  # graphviz drops an empty cluster: give it something to hold
                box.node(f"empty_{i}", "(nothing)", shape="plaintext", style="")
            stack[-1].subgraph(box)
        else:
            holder = params if step.op is LOps.PARAM else stack[-1]
            holder.node(f"s{i}", step_label(i, step, program), fillcolor=STEP_FILL[step.op])
            shown.append(i)
    while len(stack) > 1:  # a program cut short (no ENDLOOP): close what is open
        box = stack.pop()
        stack[-1].subgraph(box)
    dot.subgraph(params)
    for i in shown:
        step = program.steps[i]
        for s in step.src:
            if s in shown:
                dashed = step.op is LOps.UPDATE and s == step.src[0]
                dot.edge(f"s{s}", f"s{i}", style="dashed" if dashed else "solid")
    body = [i for i in shown if program.steps[i].op is not LOps.PARAM]
    for a, b in zip(body, body[1:]):  # keep program order, top to bottom
        dot.edge(f"s{a}", f"s{b}", style="invis")
    for i in shown[:len(shown) - len(body)] if body else []:  # the buffers above it all
        dot.edge(f"s{i}", f"s{body[0]}", style="invis")
    return dot
