"""The SDK's tools around an annotated program, outside it: the ``ma run`` launcher and the build of every C part.

- :mod:`.launch` (with :mod:`.runwatch` and :mod:`.hydra`): start a program under the environment's MPI
  launcher with the runtime configured, watch its ranks end, write the run record.
- :mod:`.build`: the one way every C part is built (a lock, a stamp, a rename); :mod:`.toolchain` finds the
  compilers; :mod:`.cparts` (the PMPI library and the C runtime) and :mod:`.valgrind` (the counting tool) are
  built through it, and so are the backends' probes and kernels; :mod:`.parts` is what ``ma tools build`` builds.

Layers: ``ma_tools`` sits above ``ma_runtime`` (it builds what the runtime loads, into
``ma_runtime.built.build_dir()``) and below ``backends`` and ``ma_cli``; ``ma_post`` never needs it, and nothing
in the annotated application imports it. Importing the package itself imports nothing.
"""
