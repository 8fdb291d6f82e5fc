"""`python -m rearview.cli`: the same as the `rearview` console script."""

from rearview.cli import app

if __name__ == "__main__":
    app()
