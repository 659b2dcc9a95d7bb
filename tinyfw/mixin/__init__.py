"""What Tensor does, grouped by kind: movement, derived math, and nn functions."""
