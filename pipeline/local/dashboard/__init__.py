"""The live dashboard: a plain consumer of the output topics with a web page (see :mod:`.server`)."""

from .process import spawn_dashboard, wait_for_dashboard
from .server import DashboardConsumer, make_web_app, run_dashboard
from .state import DashboardState, Trajectory, change_levels

__all__ = ["DashboardConsumer", "DashboardState", "Trajectory", "change_levels", "make_web_app", "run_dashboard",
           "spawn_dashboard", "wait_for_dashboard"]
