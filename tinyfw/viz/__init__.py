"""Pictures of what tinyfw builds: graphs, schedules, kernels, loops and views (graphviz)."""
from tinyfw.viz.graph import draw_graph, draw_kernel, draw_schedule
from tinyfw.viz.loops import draw_loops
from tinyfw.viz.scalar_graph import draw_scalar_graph
from tinyfw.viz.views import draw_view, draw_views

__all__ = ["draw_graph", "draw_kernel", "draw_schedule", "draw_loops", "draw_scalar_graph",
           "draw_view", "draw_views"]
