"""Tokenizers written in tinyfw (chapter 12)."""
