"""``python -m jit``: the same as the ``jit`` console script."""

from .cli import main

if __name__ == "__main__":
    main()
