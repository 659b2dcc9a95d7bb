"""Layers as plain classes holding tensors (chapter 10)."""
