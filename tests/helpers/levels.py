"""Levels a change label may show and their text in the plot and the dashboard: two decimals up to four
digits, then three significant digits compact (3.25T), from 1e15 an exponent; ties away from zero (1.125M)."""

LEVELS = [(0.1, "0.10"), (-0.034, "-0.03"), (9999.994, "9999.99"), (12345.6, "12.3K"), (6342689766.11, "6.34B"),
          (730973117446.70, "731B"), (-2.5e12, "-2.5T"), (1125000.0, "1.13M"), (-1125000.0, "-1.13M"),
          (999960.0, "1M"), (999949.0, "1M"), (999400.0, "999K"), (3.25e15, "3.25e15"), (-1e300, "-1e300"),
          (1e4, "10K")]
