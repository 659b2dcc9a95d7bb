"""Pretrained models built from tinyfw's layers (chapter 12)."""
