"""Shapes and views: strided views of memory and the symbolic index expressions they read."""
