"""What several test modules share, imported as ``helpers.*`` (``tests/`` is on pytest's path; a test
module never imports another). Fixtures that need pytest's machinery stay in ``conftest.py``."""
