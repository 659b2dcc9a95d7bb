"""The devices: memory, a compiler and a way to launch programs, one module each."""
