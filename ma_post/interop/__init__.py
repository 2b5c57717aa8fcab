"""Bridges from MA traces to other performance tools (docs/interop.md).

- :mod:`.hatchet`: the site tree with per-rank metrics as a Hatchet literal (``ma export --hatchet``);
- :mod:`.extrap`: measured values of several runs at different parameters in Extra-P's JSON input
  (``ma export --extrap``);
- :mod:`.synth` and :mod:`.simgrid`: synthetic SimGrid/SMPI time-independent traces from the control-flow
  model and their replay (``ma synth``).

Each module imports its third-party tool lazily, and only where it runs the tool.
"""
