"""The op graph: UOps, the primitive ops, and the table of their gradients."""
