"""Levels a change label may show and their text (``markers.level_text`` in the plot,
``levelText`` in the dashboard): up to four digits with two decimals, beyond that compact with three
significant digits as the dashboard's axes (3.25T), from 1e15 an exponent; a tie rounded away from
zero as the browser's toFixed does (1.125M)."""

LEVELS = [(0.1, "0.10"), (-0.034, "-0.03"), (9999.994, "9999.99"), (12345.6, "12.3K"), (6342689766.11, "6.34B"),
          (730973117446.70, "731B"), (-2.5e12, "-2.5T"), (1125000.0, "1.13M"), (-1125000.0, "-1.13M"),
          (999960.0, "1M"), (999949.0, "1M"), (999400.0, "999K"), (3.25e15, "3.25e15"), (-1e300, "-1e300"),
          (1e4, "10K")]
